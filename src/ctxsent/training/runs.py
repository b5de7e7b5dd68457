"""A training run's folder ``OUT``: the settings it was started with, and whether it ended.

``OUT`` follows the one output rule (:func:`ctxsent.io.check_output`, kind
:data:`~ctxsent.io.RUN_KIND`): it must be absent, empty or a run folder (one holding
``OUT/run.json``), else it is refused before any work unless ``overwrite`` is given; even
then nothing the run did not write is removed. :func:`run_folder` holds ``OUT`` for the
run: a lock (``OUT/run.lock``) refuses a second run on it while the first goes on.

``OUT/run.json`` is written when a run starts, holding the run's resolved settings and
``"status": "running"``, rewritten ``"failed"`` when the run ends with an error (a full
disk, a bad batch; rerun to resume) and, as the run's last act, ``"finished"``. A run killed
part-way still says ``running``: its ``OUT/model`` is the best model so far, not the run's
result, and :func:`ctxsent.saving.load` warns when it loads one
(:func:`ctxsent.saving.unfinished_run`).

Every training command runs on :class:`TrainingRun`, which writes the finished run's record
(settings, progress, best step and metrics) to ``OUT/run.json`` and keeps its model in
``OUT/model``.

A rerun with the same ``OUT`` resumes from its checkpoint only when its settings equal the
stored ones, apart from ``may_change`` (limits: how long the run goes); otherwise it is
refused, naming the keys that differ, before any work starts. ``overwrite`` starts the run
afresh instead: the run's state (its checkpoints and caches) is removed first, when a run
wrote it. Staging that a killed atomic write of the run's state left behind
(``OUT/.NAME.*.tmp``, see :func:`ctxsent.io.atomic_path`) is removed when a run starts.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import hashlib
import json
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, astuple
from pathlib import Path
from typing import Any

from lightning.fabric.utilities.rank_zero import rank_zero_only

from ctxsent.errors import InputError
from ctxsent.io import RUN_FILE, RUN_KIND, RUN_LOCK, atomic_write, check_output, remove_path
from ctxsent.saving import RUN_STAMP, read_run, write_model_card

#: Where a run saves its model: ``OUT/model``.
MODEL_DIR = "model"


@contextlib.contextmanager
def run_folder(
    out: str | Path,
    settings: Mapping[str, Any],
    *,
    state: Iterable[str] = ("checkpoints",),
    may_change: Iterable[str] = (),
    overwrite: bool = False,
) -> Iterator[Path]:
    """Hold ``out`` for a run with ``settings``: checked, locked and recorded
    (:func:`start_run`); yields ``out``.

    An exception inside marks the run ``failed`` (it resumes when rerun) and an
    :class:`OSError` (a full disk, a read-only folder) names ``out``. The lock is released
    on the way out. On DDP ranks other than 0 it only yields.
    """
    out = Path(out)
    if rank_zero_only.rank != 0:
        yield out
        return
    check_output(out, RUN_KIND, overwrite)
    out.mkdir(parents=True, exist_ok=True)
    with _locked(out):
        start_run(out, settings, state=state, may_change=may_change, overwrite=overwrite)
        try:
            yield out
        except BaseException as err:
            _mark_failed(out)
            if isinstance(err, OSError) and err.filename is None:
                problem = f"{err.strerror or err} (run marked failed; rerun to resume)"
                raise OSError(err.errno, problem, str(out)) from err
            raise


def start_run(
    out: Path,
    settings: Mapping[str, Any],
    *,
    state: Iterable[str] = ("checkpoints",),
    may_change: Iterable[str] = (),
    overwrite: bool = False,
) -> None:
    """Check that a run with ``settings`` may start or resume in ``out``; record it there.

    ``out`` must pass :func:`~ctxsent.io.check_output` (kind ``run``). ``state`` names what
    the run keeps to resume (relative to ``out``): with ``overwrite`` it is removed if a run
    wrote it (``out`` holds a run file), so the run starts from the beginning; without it,
    state whose settings differ from ``settings`` (or are unknown) is refused with an
    :class:`InputError`.
    ``may_change`` are the (dotted) keys of the limits a resumed run may change, such as a
    step count or a time budget: a rerun with a larger limit goes on from its checkpoint.
    Prefer :func:`run_folder`, which also locks ``out``.
    """
    check_output(out, RUN_KIND, overwrite)
    out.mkdir(parents=True, exist_ok=True)
    settings = json.loads(json.dumps(settings, default=str))
    stored = read_run(out)
    state = list(state)
    found = [name for name in state if (out / name).exists()]
    if stored is None and found:
        raise InputError(
            f"holds {', '.join(found)} but no {RUN_FILE}, so no ctxsent run wrote them here; "
            "move them away or use another output folder",
            path=out,
        )
    if stored is not None:
        for name in [RUN_FILE, *state]:
            for stale in out.glob(f".{glob.escape(name)}.*.tmp"):
                remove_path(stale)  # left by a killed write of the run's own state
    if overwrite:
        for name in found:
            remove_path(out / name)
    elif stored is not None:
        changed = _differences(stored.get("settings", {}), settings, set(may_change))
        if changed:
            raise InputError(
                f"holds a run with other settings ({'; '.join(changed)}); pass --overwrite "
                "(overwrite=True) to start it again, or use another output folder",
                path=out / RUN_FILE,
            )
        _check_checkpoints(out / "checkpoints")
    _write_json(out, {"status": "running", "settings": settings})


def _check_checkpoints(folder: Path) -> None:
    """An :class:`InputError` for a checkpoint a resume would fail to read: torch writes
    zip archives, whose index sits at their end, so a truncated one has none."""
    for checkpoint in sorted(folder.glob("*.ckpt")):
        if checkpoint.is_file() and not zipfile.is_zipfile(checkpoint):
            raise InputError(
                "is not a complete checkpoint (truncated: a full disk, a killed copy?); "
                "remove it to resume from an earlier one, or pass --overwrite to start again",
                path=checkpoint,
            )


@contextlib.contextmanager
def _locked(out: Path) -> Iterator[None]:
    """Hold ``OUT/run.lock`` (an advisory lock the system drops when the process ends)."""
    with open(out / RUN_LOCK, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(
                f"is in use by another run (it holds {RUN_LOCK}); wait for it to end or use "
                "another output folder",
                path=out,
            ) from None
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _mark_failed(out: Path) -> None:
    """Rewrite ``OUT/run.json`` as failed; in place when a full disk refuses a new file."""
    try:
        stored = read_run(out) or {}
    except InputError:
        stored = {}
    record = {"status": "failed", "settings": stored.get("settings", {})}
    try:
        _write_json(out, record)
    except OSError:
        with contextlib.suppress(OSError), open(out / RUN_FILE, "w", encoding="utf-8") as handle:
            json.dump(record, handle, indent=2)


class TrainingRun:
    """The one skeleton of every training command: check the output, seed, build, start the
    run, (the caller trains and saves), finish.

    Built before any data loads, it checks ``OUT`` (:func:`~ctxsent.io.check_output`, kind
    ``run``) and ``OUT/model`` (:data:`MODEL_DIR`, an output of ``kind``). Its settings are
    ``{"config": config, "model": model, "data": data}``: a rerun resumes only with equal
    ones, apart from the config's ``limits`` and ``keep_checkpoints``. :meth:`started` seeds
    every RNG with ``config.seed``, builds the model and holds ``OUT`` (:func:`run_folder`).
    :meth:`keep_best` records the best evaluation in ``OUT/run.json`` as it happens;
    :meth:`finish` writes the run's record there (``status``, ``settings``, ``progress``,
    ``best``, ``metrics``, ``data``), marks the run finished and, unless
    ``config.keep_checkpoints``, removes its checkpoints: a finished run keeps none, and a
    rerun of it starts again.
    """

    def __init__(
        self, out: str | Path, config: Any, kind: str, *, model: Any = None, data: Any = None,
        overwrite: bool = False,
    ) -> None:  # fmt: skip
        """``data`` identifies the training data; a caller that reads it after these checks
        sets ``settings["data"]`` before :meth:`started`."""
        self.out, self.config, self.overwrite = Path(out), config, overwrite
        self.check(out, kind, overwrite)
        self.settings = {"config": asdict(config), "model": model, "data": data}
        limits = getattr(config, "limits", ())
        self.may_change = [f"config.{name}" for name in (*limits, "keep_checkpoints")]

    @staticmethod
    def check(out: str | Path, kind: str, overwrite: bool = False) -> None:
        """Raise :class:`InputError` unless ``out`` may hold a run whose model is a ``kind``."""
        check_output(out, RUN_KIND, overwrite)
        check_output(Path(out) / MODEL_DIR, kind, overwrite)

    @property
    def model_dir(self) -> Path:
        return self.out / MODEL_DIR

    @contextlib.contextmanager
    def started(self, build: Callable[[], Any] = lambda: None) -> Iterator[Any]:
        """Seed every RNG with ``config.seed``, ``build`` the model (its new weights depend on
        the seed only; a model that cannot be built fails before ``OUT`` is touched), then
        hold ``OUT`` for the run (:func:`run_folder`); yields what ``build`` returned."""
        import lightning as L

        L.seed_everything(self.config.seed, verbose=False)
        built = build()
        with run_folder(
            self.out, self.settings, state=("checkpoints", MODEL_DIR),
            may_change=self.may_change, overwrite=self.overwrite,
        ):  # fmt: skip
            yield built

    def train(self, objective: Any, loader: Any, optimizer: Any, **options: Any) -> Any:
        """:func:`~ctxsent.training.engine.train_objective` of ``objective`` in ``OUT``, with
        the run's config and seed (``options``: the engine's)."""
        from ctxsent.training.engine import train_objective

        config = self.config
        return train_objective(
            objective, loader, self.out, config, optimizer, seed=config.seed, **options
        )

    def keep_best(self, save: Callable[[], Any]) -> Callable[[dict, int], None]:
        """An ``on_best`` (:class:`~ctxsent.training.engine.Evaluation`) that calls ``save``
        and records the step and the dev metrics as the run's ``best``."""

        def on_best(metrics: dict, step: int) -> None:
            save()
            stored = read_run(self.out) or {}
            stored["best"] = {"step": step, "dev": _plain(metrics)}
            _write_json(self.out, stored)

        return on_best

    def finish(self, trained: Any, metrics: dict | None = None, data: Any = None) -> dict:
        """Finish the run that ``trained`` (:class:`~ctxsent.training.engine.Trained`) did:
        write its record (settings, progress, best, metrics: the last training values and
        ``metrics``; ``data`` describes the data) to ``OUT/run.json`` on the first process,
        and return it."""
        progress = {
            "steps": trained.steps,
            "steps_this_run": trained.steps_this_run,
            "seconds_this_run": round(trained.seconds, 1),
            "resumed": trained.resumed,
            "tokens_seen": trained.module.tokens_seen,
            "stopped": trained.stopped,  # why: patience, max_steps, max_time or epochs
        }
        best = trained.best and {"step": trained.best["step"], "dev": trained.best["metrics"]}
        last = {"loss" if k == "train_loss" else k: v for k, v in trained.metrics.items()}
        record = {
            "status": "finished",
            "settings": json.loads(json.dumps(self.settings, default=str)),
            "progress": progress,
            "best": _plain(best or None),
            "metrics": _plain({"train": last, **(metrics or {})}),
            "data": data,
        }
        if trained.is_global_zero:
            finish_run(self.out, record, keep_checkpoints=self.config.keep_checkpoints)
        return record


def finish_run(out: Path, record: dict, keep_checkpoints: bool = False) -> None:
    """Mark the run in ``out`` finished, ``record`` (its progress, best, metrics) written to
    ``OUT/run.json``: call it after everything else is written. The model card of
    ``OUT/model``, when the run saved one, gets the best evaluation (the saved model's own
    dev scores in ``metrics`` when they differ: a WiSE-FT mix) and the data first, and
    loses its :data:`~ctxsent.saving.RUN_STAMP`; the checkpoints are removed unless
    ``keep_checkpoints``. Prefer :meth:`TrainingRun.finish`."""
    record = {**(read_run(out) or {}), **_plain(record), "status": "finished"}
    if (out / MODEL_DIR).is_dir():
        scores = {k: v for k, v in (record.get("metrics") or {}).items() if k in ("dev", "test")}
        recipe = (record.get("settings") or {}).get("config")
        card = {**(record.get("best") or {}), "data": record.get("data"), "train": recipe}
        write_model_card(out / MODEL_DIR, card | scores)
        (out / MODEL_DIR / RUN_STAMP).unlink(missing_ok=True)
    if not keep_checkpoints:
        remove_path(out / "checkpoints")
    _write_json(out, record)


def records_digest(records: Iterable[Any]) -> str:
    """A short fingerprint of a sequence of dataclass records (a run's training data)."""
    digest = hashlib.sha256()
    for record in records:
        digest.update(repr(astuple(record)).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:16]


def _write_json(out: Path, record: dict) -> None:
    with atomic_write(out / RUN_FILE) as handle:
        json.dump(record, handle, indent=2)


def _plain(value: Any) -> Any:
    """``value`` as JSON has it: numbers as numbers (tensors, numpy), the rest as text."""
    return json.loads(json.dumps(value, default=lambda v: getattr(v, "item", v.__str__)()))


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
