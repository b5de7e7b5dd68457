"""The toolkit's errors: one line that names what is wrong and where.

Every reader and loader raises :class:`InputError` (or a subclass) for bad
input, so the CLI can print a single clear line instead of a traceback.
"""

from __future__ import annotations

from pathlib import Path


class CtxsentError(Exception):
    """Base class of all errors raised on purpose by ctxsent."""


class InputError(CtxsentError, ValueError):
    """Bad user input: a file, a line in it, or a field of a record.

    The message reads ``FILE:LINE: field 'F': problem`` with the parts that are known.
    """

    def __init__(
        self,
        problem: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.problem = problem
        self.path = str(path) if path is not None else None
        self.line = line
        self.field = field
        where = ""
        if self.path is not None:
            where = self.path + (f":{line}" if line is not None else "") + ": "
        elif line is not None:
            where = f"line {line}: "
        what = f"field '{field}': " if field is not None else ""
        super().__init__(f"{where}{what}{problem}")


class ModelFolderError(InputError):
    """A folder that is not a loadable ctxsent model (missing/corrupt config or weights)."""
