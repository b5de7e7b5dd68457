"""File helpers shared by all stages: atomic writes and strict text reading."""

from __future__ import annotations

import contextlib
import glob
import gzip
import io
import json
import os
import shutil
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from ctxsent.errors import InputError, check_unicode

OUTPUT_MARKER = ".ctxsent-output"
#: A saved model's manifest (:mod:`ctxsent.saving`), which names its kind.
MANIFEST = "ctxsent.json"
#: A training run's record in its folder ``OUT`` (:mod:`ctxsent.training.runs`); a folder
#: holding one is an output of kind :data:`RUN_KIND`.
RUN_FILE = "run.json"
RUN_KIND = "run"
#: The lock a run holds on its folder; a folder holding only it counts as empty.
RUN_LOCK = "run.lock"


def output_kind(folder: str | Path) -> str | None:
    """The kind of ctxsent output in ``folder``: its marker's, else :data:`RUN_KIND` for a
    run folder, else its model manifest's."""
    folder = Path(folder)
    marker = folder / OUTPUT_MARKER
    try:
        if marker.is_file():
            return marker.read_text(encoding="utf-8").strip()
        if (folder / RUN_FILE).is_file():
            return RUN_KIND
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return manifest.get("kind") if isinstance(manifest, dict) else None


def check_output(target: str | Path, kind: str | None, overwrite: bool = False) -> None:
    """Raise :class:`InputError` unless :func:`atomic_path` may replace ``target``.

    The one output rule of every command that writes a file or a folder, training runs
    included (kind :data:`RUN_KIND`). ctxsent never deletes what it did not write. Without
    ``overwrite``, an existing non-empty folder (a :data:`RUN_LOCK` alone does not count) is
    replaced only by an output of the same ``kind`` (see :func:`output_kind`), an existing
    file only by a file output (``kind`` None). Call it before the work that produces the
    output starts; it checks :func:`check_writable` too.
    """
    target = Path(target)
    check_writable(target)
    if overwrite or not target.exists():
        return
    if target.is_dir():
        empty = all(path.name == RUN_LOCK for path in target.iterdir())
        if empty or (kind is not None and output_kind(target) == kind):
            return
        problem = "folder is not empty" + (f" and not a ctxsent {kind} output" if kind else "")
    elif kind is None:
        return
    else:
        problem = f"is a file, not a ctxsent {kind} output"
    raise InputError(f"{problem}; pass --overwrite (overwrite=True) to replace it", path=target)


def check_writable(target: str | Path, folder: bool | None = None) -> None:
    """Raise :class:`InputError` unless ``target`` can be written: the nearest existing path above
    it, and ``target`` if it is an existing folder, must be folders this process may write in;
    ``folder`` True (False) also refuses an existing file (folder). Call it before any work."""
    target = Path(target)
    if folder is not None and target.exists() and target.is_dir() != folder:
        found, expected = ("file", "folder") if folder else ("folder", "file")
        raise InputError(f"is a {found}; expected a {expected}", path=target)
    nearest = next((path for path in target.absolute().parents if path.exists()), target)
    for path in [target, nearest] if target.is_dir() else [nearest]:
        if not path.is_dir():
            raise InputError("is a file; expected a folder", path=path)
        if not os.access(path, os.W_OK | os.X_OK):
            raise InputError("cannot write in this folder (permission denied)", path=path)


@contextlib.contextmanager
def atomic_path(
    target: str | Path, kind: str | None = None, *, overwrite: bool = False
) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; rename it onto ``target`` on success.

    A folder output names its ``kind``, which is written to its :data:`OUTPUT_MARKER`
    file; an existing folder at ``target`` is refused by :func:`check_output` before
    anything is yielded. On any exception the temporary file or folder is removed, so a
    crash never leaves a half-written output that looks complete; what a killed process
    left there is removed by the next write of the same output. An :class:`OSError` (a full
    disk) names the output, not its temporary path.
    """
    target = Path(target)
    check_output(target, kind, overwrite)
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in target.parent.glob(f".{glob.escape(target.name)}.*.tmp"):
        remove_path(stale)  # left by a write of the same output that was killed
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    except OSError as err:  # /proc, a full disk: name the output, not a temporary name
        raise OSError(err.errno, err.strerror, str(target)) from err
    staged = tmp / target.name
    try:
        yield staged
        if staged.is_dir() and kind is not None:
            (staged / OUTPUT_MARKER).write_text(kind + "\n", encoding="utf-8")
        replaced = tmp / ".replaced"  # the old output, removed with tmp below
        if target.exists() and (target.is_dir() or staged.is_dir()):
            os.replace(target, replaced)
        try:
            os.replace(staged, target)
        except OSError:
            if replaced.exists():
                os.replace(replaced, target)  # never lose the old output
            raise
    except OSError as err:
        name = Path(err.filename or staged)  # a write to a full disk names no file
        if err.errno is None or not name.is_relative_to(staged):
            raise
        renamed = target / name.relative_to(staged)
        raise OSError(err.errno, err.strerror, str(renamed)) from err
    finally:
        remove_path(tmp)


@contextlib.contextmanager
def atomic_write(
    target: str | Path, mode: str = "w", encoding: str | None = "utf-8"
) -> Iterator[IO]:
    """Open a temporary file for writing and rename it onto ``target`` when closed cleanly."""
    with atomic_path(target) as staged:
        kwargs = {} if "b" in mode else {"encoding": encoding}
        with open(staged, mode, **kwargs) as handle:
            yield handle


def remove_path(path: Path) -> None:
    """Remove a file, a link or a folder with everything in it; nothing if it is absent."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


class _CheckedGzipFile(gzip.GzipFile):
    """A gzip reader whose corrupt or truncated streams raise :class:`InputError`."""

    def _checked(self, read, *args):
        try:
            return read(*args)
        except (gzip.BadGzipFile, EOFError, zlib.error) as err:
            raise InputError(f"not a valid gzip file ({err})", path=self.name) from None

    def read(self, size=-1):
        return self._checked(super().read, size)

    def read1(self, size=-1):
        return self._checked(super().read1, size)

    def readline(self, size=-1):
        return self._checked(super().readline, size)

    def peek(self, n):
        return self._checked(super().peek, n)


def _open_binary(path: Path) -> IO[bytes]:
    return _CheckedGzipFile(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def _skipping_bom(encoding: str) -> str:
    """UTF-8 as ``utf-8-sig``: a leading byte-order mark (Excel, Notepad) is not text."""
    return "utf-8-sig" if encoding.lower().replace("_", "-") in ("utf-8", "utf8") else encoding


def check_file(path: str | Path) -> Path:
    """``path`` if it is a file, else an :class:`InputError` saying it is missing or a folder."""
    path = Path(path)
    if path.is_dir():
        raise InputError("is a folder; expected a file", path=path)
    if not path.is_file():
        raise InputError("no such file", path=path)
    return path


def open_text(path: str | Path, encoding: str = "utf-8") -> IO[str]:
    """Open a checked (:func:`check_file`) text file, ``.gz`` transparently, skipping a UTF-8
    byte-order mark; :func:`read_lines` reports decoding errors with the file and line."""
    path = check_file(path)
    encoding = _skipping_bom(encoding)
    if path.suffix == ".gz":
        return io.TextIOWrapper(_CheckedGzipFile(path, "rb"), encoding=encoding, newline="")
    return open(path, encoding=encoding, newline="")


def read_lines(path: str | Path, encoding: str = "utf-8") -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` with line endings (LF or CRLF) and a leading UTF-8
    byte-order mark removed; a line that is not valid ``encoding`` is an :class:`InputError`
    naming the file and line."""
    path = check_file(path)
    with _open_binary(path) as handle:
        for line_no, raw in enumerate(handle, start=1):
            try:
                line = raw.decode(_skipping_bom(encoding) if line_no == 1 else encoding)
            except UnicodeDecodeError as err:
                raise InputError(
                    f"not valid {encoding} text ({err.reason} at byte {err.start} of the line)",
                    path=path,
                    line=line_no,
                ) from None
            yield line_no, line.rstrip("\r\n")


def read_json_lines(path: str | Path, encoding: str = "utf-8") -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, object)`` for each non-blank line of a JSON Lines file.

    A line that is not JSON (or nested too deeply to parse), or not a JSON object, or that
    holds an unpaired surrogate escape (:func:`ctxsent.errors.check_unicode`), raises
    :class:`InputError` naming it (and the key whose value holds the surrogate).
    """
    for line_no, line in read_lines(path, encoding):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as err:
            raise InputError(f"not valid JSON ({err.msg})", path=path, line=line_no) from None
        except RecursionError:
            raise InputError("JSON nested too deeply", path=path, line=line_no) from None
        if not isinstance(value, dict):
            raise InputError("expected a JSON object", path=path, line=line_no)
        if "\\ud" in line or "\\uD" in line:  # a surrogate escape: refuse it if unpaired
            for key, item in value.items():
                check_unicode(key, path=path, line=line_no)
                text = item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)
                check_unicode(text, key, path=path, line=line_no)
        yield line_no, value
