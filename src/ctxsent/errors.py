"""The toolkit's errors: one line that names what is wrong and where.

Every reader and loader raises :class:`InputError` (or a subclass) for bad
input, so the CLI can print a single clear line instead of a traceback.
"""

from __future__ import annotations

import math
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


def check_unicode(
    text: str,
    field: str | None = None,
    *,
    path: str | Path | None = None,
    line: int | None = None,
) -> str:
    """Return ``text`` if it is valid Unicode, else raise :class:`InputError` saying where.

    The one policy for unpaired UTF-16 surrogates, which JSON escapes (``"\\ud800"``) and
    command-line arguments (undecodable bytes) can carry and no tokenizer or UTF-8 output
    can represent: refuse them where text enters (the service answers 422) rather than
    repair them, so no caller gets scores for a text other than the one it sent. Text
    decoded from UTF-8 files cannot hold surrogates.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        code = ord(text[err.start])
        raise InputError(
            f"not valid Unicode: unpaired surrogate U+{code:04X} at character {err.start}",
            path=path,
            line=line,
            field=field,
        ) from None
    return text


def check_range(
    config: object,
    fields: str,
    low: float | None = None,
    high: float | None = None,
    *,
    above: bool = False,
    below: bool = False,
) -> None:
    """Raise :class:`InputError` naming the first of ``fields`` (space-separated attributes of
    ``config``) that is not a finite number ``>= low`` (``> low`` with ``above``) and ``<= high``
    (``< high`` with ``below``); an omitted bound is open, and ``None`` passes. Config
    dataclasses call it in ``__post_init__``, so a bad setting stops a run before any work."""
    bounds = [
        f"{'>' if above else '>='} {low}" if low is not None else "",
        f"{'<' if below else '<='} {high}" if high is not None else "",
    ]
    for field in fields.split():
        value = getattr(config, field)
        if value is None:
            continue
        if isinstance(value, float) and not math.isfinite(value):
            raise InputError(f"must be a finite number, got {value!r}", field=field)
        too_low = low is not None and (value <= low if above else value < low)
        too_high = high is not None and (value >= high if below else value > high)
        if too_low or too_high:
            valid = " and ".join(bound for bound in bounds if bound)
            raise InputError(f"must be {valid}, got {value!r}", field=field)


def check_choice(config: object, field: str, choices: tuple) -> None:
    """Raise :class:`InputError` naming ``field`` of ``config`` unless it is one of ``choices``."""
    value = getattr(config, field)
    if value not in choices:
        raise InputError(
            f"expected one of {', '.join(map(str, choices))}, got {value!r}", field=field
        )
