"""A training run's folder ``OUT``: the settings it was started with, and whether it ended.

``OUT/run.json`` is written when a run starts, holding the run's resolved settings and
``"status": "running"``, and rewritten as the run's last act with ``"status": "finished"``.
A run killed part-way therefore still says ``running``: its ``OUT/model`` is the best model
so far, not the run's result, and :func:`ctxsent.saving.load` warns when it loads one
(:func:`ctxsent.saving.unfinished_run`).

A rerun with the same ``OUT`` resumes from its checkpoint only when its settings equal the
stored ones, apart from ``may_change`` (limits: how long the run goes); otherwise it is
refused, naming the keys that differ, before any work starts. ``overwrite`` starts the run
afresh instead: the run's state (its checkpoints and caches) is removed first. Staging files
and folders that a killed atomic write left behind (``OUT/.NAME.*.tmp``, see
:func:`ctxsent.io.atomic_path`) are removed when a run starts.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import astuple
from pathlib import Path
from typing import Any

from ctxsent.errors import InputError
from ctxsent.io import atomic_write, remove_path
from ctxsent.saving import RUN_FILE, read_run, write_model_card


def start_run(
    out: Path,
    settings: Mapping[str, Any],
    *,
    state: Iterable[str] = ("checkpoints",),
    may_change: Iterable[str] = (),
    overwrite: bool = False,
) -> None:
    """Check that a run with ``settings`` may start or resume in ``out``; record it there.

    ``state`` names what the run keeps to resume (relative to ``out``): with ``overwrite``
    it is removed, so the run starts from the beginning; without it, state whose settings
    differ from ``settings`` (or are unknown) is refused with an :class:`InputError`.
    ``may_change`` are the (dotted) keys of the limits a resumed run may change, such as a
    step count or a time budget: a rerun with a larger limit goes on from its checkpoint.
    """
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob(".*.tmp"):
        remove_path(stale)
    settings = json.loads(json.dumps(settings, default=str))
    stored = read_run(out)
    state = [out / name for name in state]
    if overwrite:
        for path in state:
            remove_path(path)
    elif stored is not None:
        changed = _differences(stored.get("settings", {}), settings, set(may_change))
        if changed:
            raise InputError(
                f"holds a run with other settings ({'; '.join(changed)}); pass --overwrite "
                "(overwrite=True) to start it again, or use another output folder",
                path=out / RUN_FILE,
            )
    elif any(path.exists() for path in state):
        raise InputError(
            f"holds training state but no {RUN_FILE}, so its settings are unknown; pass "
            "--overwrite (overwrite=True) to start again, or use another output folder",
            path=out,
        )
    _write_run(out, "running", settings)


def finish_run(out: Path, report: dict, model: str = "model") -> None:
    """Mark the run in ``out`` finished: call it after everything else is written.

    The model card of ``OUT/{model}`` gets the run's ``report`` first
    (:func:`~ctxsent.saving.write_model_card`).
    """
    write_model_card(out / model, report)
    stored = read_run(out) or {}
    _write_run(out, "finished", stored.get("settings", {}))


def records_digest(records: Iterable[Any]) -> str:
    """A short fingerprint of a sequence of dataclass records (a run's training data)."""
    digest = hashlib.sha256()
    for record in records:
        digest.update(repr(astuple(record)).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:16]


def _write_run(out: Path, status: str, settings: dict) -> None:
    with atomic_write(out / RUN_FILE) as handle:
        json.dump({"status": status, "settings": settings}, handle, indent=2)


def _differences(stored: dict, current: dict, may_change: set[str], prefix: str = "") -> list:
    """``"key: old -> new"`` for every (nested) key whose value differs."""
    changed = []
    for key in sorted(set(stored) | set(current)):
        if prefix + key in may_change:
            continue
        old, new = stored.get(key), current.get(key)
        if isinstance(old, dict) and isinstance(new, dict):
            changed += _differences(old, new, may_change, f"{prefix}{key}.")
        elif old != new:
            changed.append(f"{prefix}{key}: {_short(old)} -> {_short(new)}")
    return changed


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
