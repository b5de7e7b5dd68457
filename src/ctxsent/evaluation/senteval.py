"""SentEval-style evaluation of frozen sentence embeddings with simple classifiers.

SentEval's protocol (Conneau & Kiela, 2018) as RNN-CNN section 4 and Mean-Max AAE section
4.1 apply it: every sentence is embedded once by the frozen encoder, and an L2 logistic
regression (scikit-learn) is trained on the embeddings:

* MR, CR, SUBJ, MPQA: 10-fold cross-validation, C chosen by an inner k-fold on each
  training fold (SentEval ``InnerKFoldClassifier``);
* SST-2, SICK-E: C chosen on dev, accuracy on test (``SplitClassifier``);
* TREC, MRPC: C chosen by k-fold on train, accuracy (MRPC: and F1) on test
  (``KFoldClassifier``);
* SICK-R: the distribution regression of :func:`ctxsent.evaluation.sts.fit_relatedness`;
* STS: cosine similarity, no training (:mod:`ctxsent.evaluation.sts`).

Pair tasks use InferSent's ``[u, v, |u - v|, u * v]`` (SentEval's MRPC and SICK code uses
only ``[|u - v|, u * v]``; ``u`` and ``v`` can only help a linear probe). Accuracies are
percentages, correlations in [-1, 1]; the micro average of Mean-Max AAE Table 2 weights
each task by its test items (the whole set for cross-validated tasks).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.model_selection import StratifiedKFold
from threadpoolctl import threadpool_limits
from tqdm.auto import tqdm

from ctxsent.evaluation.sts import correlation, evaluate_sts, fit_relatedness
from ctxsent.io import atomic_path, atomic_write, check_writable
from ctxsent.models.precision import on_accelerator
from ctxsent.protocols import Encoder
from ctxsent.resolver import load_encoder, model_source
from ctxsent.tasks.senteval import Pairs, TaskData, load_tasks
from ctxsent.text.length_chunks import length_sorted_chunks


@dataclass(frozen=True, slots=True)
class ClassifierSetting:
    """How the probes are trained; ``c_grid`` values are scikit-learn's inverse L2 strength."""

    name: str
    c_grid: tuple[float, ...]
    """Candidate C for cross-validated (inner k-fold) and dev-selected tasks."""
    c_grid_train_test: tuple[float, ...]
    """Candidate C for TREC and MRPC (k-fold on train); SentEval uses a wider grid there."""
    kfold: int
    """Outer folds of the cross-validated tasks, and folds of every k-fold selection."""
    relatedness_epochs_per_round: int
    relatedness_patience: int
    relatedness_max_epochs: int
    seed: int = 1111
    max_iter: int = 1000

    def __post_init__(self) -> None:
        for grid in (self.c_grid, self.c_grid_train_test):
            if not grid or list(grid) != sorted(grid):
                raise ValueError("C grids must be non-empty and ascending (warm starts)")


LITERATURE = ClassifierSetting(
    "literature",
    c_grid=tuple(2.0**t for t in range(-2, 4)),
    c_grid_train_test=tuple(2.0**t for t in range(-1, 6)),
    kfold=10,
    relatedness_epochs_per_round=50,
    relatedness_patience=4,
    relatedness_max_epochs=1000,
)
"""SentEval's scikit-learn setting with ``kfold=10``, for reported numbers."""

QUICK = ClassifierSetting(
    "quick",
    c_grid=(1.0,),
    c_grid_train_test=(1.0,),
    kfold=10,
    relatedness_epochs_per_round=10,
    relatedness_patience=2,
    relatedness_max_epochs=100,
)
"""One C (no model selection) and a shorter SICK-R schedule, for development."""

SETTINGS = {setting.name: setting for setting in (QUICK, LITERATURE)}


@dataclass(frozen=True, slots=True)
class TaskResult:
    task: str
    scores: dict[str, float]
    """``acc``/``dev_acc`` (+ ``f1``) in percent, or ``pearson``/``spearman`` (+ ``mse``)."""
    n_test: int
    seconds: float
    details: dict = field(default_factory=dict)
    """STS: the per-subset correlations and the three aggregations."""

    def to_dict(self) -> dict:
        return {
            "task": self.task,
            **self.scores,
            "n_test": self.n_test,
            "seconds": round(self.seconds, 2),
            **self.details,
        }


@dataclass(frozen=True, slots=True)
class SentEvalReport:
    model: str
    setting: str
    results: list[TaskResult]

    @property
    def by_task(self) -> dict[str, TaskResult]:
        return {result.task: result for result in self.results}

    def to_dict(self) -> dict:
        """JSON-ready; a NaN correlation (constant predictions) becomes ``None``."""
        return _json_safe(
            {
                "model": self.model,
                "setting": self.setting,
                "tasks": {r.task: r.to_dict() for r in self.results},
                "averages": accuracy_averages(self.results),
            }
        )


def _json_safe(value):
    if isinstance(value, dict):
        return {key: _json_safe(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_json_safe(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


# Task sets of Mean-Max AAE Table 2 (the tasks that the compared papers all report).
AVERAGE_SETS = {
    "8 tasks": ("MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC", "SICK-E"),
    "7 tasks": ("MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "SICK-E"),
    "6 tasks": ("MR", "CR", "SUBJ", "MPQA", "TREC", "MRPC"),
}


def accuracy_averages(results: Sequence[TaskResult]) -> dict[str, dict[str, float]]:
    """Macro (plain mean) and micro (weighted by test items) accuracy over each task set of
    Mean-Max AAE Table 2 whose tasks were all run, and over all accuracy tasks run (when
    that is not already one of those sets)."""
    accuracy = {r.task: r for r in results if "acc" in r.scores}
    sets = {name: tasks for name, tasks in AVERAGE_SETS.items() if set(tasks) <= set(accuracy)}
    if accuracy and set(accuracy) not in map(set, sets.values()):
        sets["all accuracy tasks"] = tuple(accuracy)
    averages = {}
    for name, tasks in sets.items():
        scores = np.array([accuracy[t].scores["acc"] for t in tasks])
        weights = np.array([accuracy[t].n_test for t in tasks], dtype=np.float64)
        averages[name] = {
            "macro": float(scores.mean()),
            "micro": float(np.average(scores, weights=weights)),
            "tasks": list(tasks),
        }
    return averages


#: What an empty or blank sentence is embedded as: SentEval's batchers turn an empty
#: sentence into ``["."]`` (CR has 4 empty lines; word-level encoders refuse empty texts).
DEFAULT_CACHE = Path.home() / ".cache" / "ctxsent" / "senteval"
CACHE_FORMAT = "1"  # bump when an encoder's output for the same files changes
EMPTY_TEXT = "."


class Embedder:
    """Embeds a task's unique sentences once: sorted by length, in chunks (with a progress
    bar), through an on-disk cache keyed by (model fingerprint, task files, text hash) when
    ``cache_dir`` is given (which needs the ``fingerprint``)."""

    def __init__(
        self,
        encoder: Encoder,
        fingerprint: str | None = None,
        cache_dir: str | Path | None = None,
        *,
        show_progress: bool = False,
        chunk_size: int = 1024,
    ) -> None:
        self.encoder = encoder
        self.cache_dir = None
        if cache_dir is not None:
            if fingerprint is None:
                raise ValueError("an embedding cache needs the model's fingerprint")
            model_key = hashlib.sha256(fingerprint.encode()).hexdigest()[:16]
            self.cache_dir = Path(cache_dir) / model_key
        self.show_progress = show_progress
        self.chunk_size = chunk_size

    def cache_path(self, key: str, texts: list[str]) -> Path | None:
        if self.cache_dir is None:
            return None
        digest = hashlib.sha256()
        for text in texts:
            digest.update(text.encode("utf-8") + b"\0")
        return self.cache_dir / f"{key.replace('/', '_')}-{digest.hexdigest()[:20]}.npy"

    def __call__(self, key: str, texts: list[str]) -> np.ndarray:
        texts = [text if text.strip() else EMPTY_TEXT for text in texts]
        path = self.cache_path(key, texts)
        if path is not None and path.is_file():
            cached = np.load(path)
            if cached.shape[0] == len(texts):
                return cached
        embeddings = self._encode(key, texts)
        if path is not None:
            with atomic_path(path) as staged, open(staged, "wb") as handle:
                np.save(handle, embeddings)
        return embeddings

    def _encode(self, key: str, texts: list[str]) -> np.ndarray:
        order, chunks = [], []
        with tqdm(total=len(texts), desc=key, unit="sent", disable=not self.show_progress) as bar:
            for rows in length_sorted_chunks(texts, self.chunk_size):
                chunk = np.asarray(self.encoder.encode([texts[i] for i in rows]), dtype=np.float32)
                if chunk.ndim != 2 or chunk.shape[0] != len(rows):
                    raise ValueError(
                        f"encode() returned shape {chunk.shape} for {len(rows)} texts; "
                        "expected (n_texts, dim)"
                    )
                chunks.append(chunk)
                order.extend(rows)
                bar.update(len(rows))
        encoded = np.concatenate(chunks)
        embeddings = np.empty_like(encoded)
        embeddings[order] = encoded
        return embeddings


def pair_features(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``[u, v, |u - v|, u * v]``, the usual features of a sentence pair."""
    return np.hstack([u, v, np.abs(u - v), u * v])


def evaluate_task(data: TaskData, embed: Embedder, setting: ClassifierSetting) -> TaskResult:
    """Embed ``data``'s sentences with ``embed`` and score them by the task's protocol."""
    start = time.perf_counter()
    vectors = _embed_splits(data, embed)
    with _single_threaded():
        scores, details = _score(data, vectors, setting)
    return TaskResult(data.task.name, scores, data.n_test, time.perf_counter() - start, details)


@contextlib.contextmanager
def _single_threaded() -> Iterator[None]:
    """Run the probes on one thread: they are small, and on a shared CPU the BLAS/OpenMP
    threads of scikit-learn and torch made them 10-25x slower, not faster."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(limits=1):
            yield
    finally:
        torch.set_num_threads(threads)


def _score(data: TaskData, vectors: dict, setting: ClassifierSetting) -> tuple[dict, dict]:
    details = {}
    match data.task.kind:
        case "sts":
            subsets = {name: (*vectors[name], split.labels) for name, split in data.splits.items()}
            sts = evaluate_sts(subsets)
            scores = {"pearson": sts.wmean.pearson, "spearman": sts.wmean.spearman}
            details = {
                "aggregation": "wmean",
                **{agg: getattr(sts, agg).to_dict() for agg in ("all", "mean", "wmean")},
                "subsets": {name: c.to_dict() for name, c in sts.subsets.items()},
            }
        case "relatedness":
            scores = _relatedness(data, vectors, setting)
        case "cv":
            scores = _cross_validated(vectors["all"], data.splits["all"].labels, setting)
        case "split":
            scores = _dev_selected(data, vectors, setting)
        case "train-test":
            scores = _train_test(data, vectors, setting)
    return scores, details


class SentEvalEvaluator:
    """The SentEval :class:`~ctxsent.protocols.Evaluator` (Conneau & Kiela, 2018; the protocol
    of the module docstring) on loaded ``tasks``: ``evaluator(encoder)`` gives each task's
    main metric under its name and, as the primary metric, ``macro_accuracy``: the plain
    mean accuracy (%) over the accuracy tasks run, the macro average of Mean-Max AAE Table 2
    (NaN without an accuracy task). :meth:`results` gives the full per-task results.

    Embeddings are cached on disk only with both ``fingerprint`` and ``cache_dir``; leave
    them out for a model that changes between calls (evaluation during training).
    """

    primary_metric = "macro_accuracy"

    def __init__(
        self,
        tasks: Sequence[TaskData],
        setting: ClassifierSetting = QUICK,
        *,
        fingerprint: str | None = None,
        cache_dir: str | Path | None = None,
        show_progress: bool = False,
        log: Callable[[str], None] | None = None,
    ) -> None:
        if cache_dir is not None and fingerprint is None:
            raise ValueError("an embedding cache needs the model's fingerprint")
        self.tasks = list(tasks)
        self.setting = setting
        self.fingerprint = fingerprint
        self.cache_dir = cache_dir
        self.show_progress = show_progress
        self.log = log

    def results(self, encoder: Encoder) -> list[TaskResult]:
        """Every task's result, in task order."""
        embed = Embedder(
            encoder, self.fingerprint, self.cache_dir, show_progress=self.show_progress
        )
        results = []
        for data in self.tasks:
            result = evaluate_task(data, embed, self.setting)
            if self.log is not None:
                metric = data.task.main_metric
                score = result.scores[metric]
                self.log(f"{result.task}: {metric} {score:.4g} ({result.seconds:.1f} s)")
            results.append(result)
        return results

    def metrics(self, results: Sequence[TaskResult]) -> dict[str, float]:
        """The flat metrics of :meth:`results`."""
        metrics = {
            data.task.name: float(result.scores[data.task.main_metric])
            for data, result in zip(self.tasks, results, strict=True)
        }
        accuracies = [result.scores["acc"] for result in results if "acc" in result.scores]
        metrics["macro_accuracy"] = float(np.mean(accuracies)) if accuracies else math.nan
        return metrics

    def __call__(self, encoder: Encoder) -> dict[str, float]:
        return self.metrics(self.results(encoder))


def run_senteval(
    encoder: Encoder,
    tasks: Sequence[TaskData],
    *,
    model: str,
    fingerprint: str | None = None,
    setting: ClassifierSetting = QUICK,
    cache_dir: str | Path | None = None,
    show_progress: bool = False,
    log: Callable[[str], None] | None = None,
) -> SentEvalReport:
    """Evaluate ``encoder`` on loaded ``tasks`` (load all first, so bad data fails fast)
    with :class:`SentEvalEvaluator`; ``model`` names it in the report."""
    evaluator = SentEvalEvaluator(
        tasks,
        setting,
        fingerprint=fingerprint,
        cache_dir=cache_dir,
        show_progress=show_progress,
        log=log,
    )
    return SentEvalReport(model, setting.name, evaluator.results(encoder))


def markdown_table(reports: Sequence[SentEvalReport]) -> str:
    """One row per report, tasks as columns, then the macro/micro averages (as Mean-Max AAE
    Tables 1-2): accuracy %, MRPC acc/F1, SICK-R Pearson r, STS Pearson/Spearman (wmean)."""
    tasks = list(dict.fromkeys(r.task for report in reports for r in report.results))
    averages = [report.to_dict()["averages"] for report in reports]
    sets = list(dict.fromkeys(name for avg in averages for name in avg))
    header = ["Model", *tasks, *(f"{name} macro/micro" for name in sets)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for report, avg in zip(reports, averages, strict=True):
        by_task = report.by_task
        cells = [report.model]
        cells += [_cell(by_task[t].scores) if t in by_task else "-" for t in tasks]
        cells += [
            f"{avg[name]['macro']:.1f}/{avg[name]['micro']:.1f}" if name in avg else "-"
            for name in sets
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _cell(scores: dict[str, float]) -> str:
    if "f1" in scores:
        return f"{scores['acc']:.1f}/{scores['f1']:.1f}"
    if "acc" in scores:
        return f"{scores['acc']:.1f}"
    if "mse" in scores:
        return f"{scores['pearson']:.3f}"
    return f"{scores['pearson']:.3f}/{scores['spearman']:.3f}"


# --- embedding lookup --------------------------------------------------------------------


def _embed_splits(data: TaskData, embed: Embedder) -> dict[str, np.ndarray | tuple]:
    """Per split: an embedding matrix, or ``(first, second)`` matrices for pairs."""
    texts: dict[str, None] = {}
    for split in data.splits.values():
        parts = (split.first, split.second) if isinstance(split, Pairs) else (split.texts,)
        for part in parts:
            texts.update(dict.fromkeys(part))
    unique = list(texts)
    matrix = embed(data.task.path, unique)
    row = {text: i for i, text in enumerate(unique)}

    def rows(part: list[str]) -> np.ndarray:
        return matrix[[row[text] for text in part]]

    return {
        name: (rows(split.first), rows(split.second))
        if isinstance(split, Pairs)
        else rows(split.texts)
        for name, split in data.splits.items()
    }


def _xy(data: TaskData, vectors: dict) -> tuple[dict, dict]:
    """Per split: the probe's features (:func:`pair_features` for pairs) and labels."""
    x = {split: pair_features(*v) if isinstance(v, tuple) else v for split, v in vectors.items()}
    return x, {split: data.splits[split].labels for split in vectors}


# --- probes --------------------------------------------------------------------------------


def _logreg(
    c: float, setting: ClassifierSetting, *, warm_start: bool = False
) -> LogisticRegression:
    return LogisticRegression(
        C=c, max_iter=setting.max_iter, random_state=setting.seed, warm_start=warm_start
    )


def _select_c_by_kfold(
    x: np.ndarray, y: np.ndarray, grid: tuple[float, ...], setting: ClassifierSetting
) -> tuple[float, float | None]:
    """The C of ``grid`` with the best mean k-fold accuracy, and that accuracy (%).

    Each fold walks the grid in ascending order with warm starts (same optimum, less time).
    """
    if len(grid) == 1:
        return grid[0], None
    folds = StratifiedKFold(setting.kfold, shuffle=True, random_state=setting.seed)
    accuracy = np.zeros(len(grid))
    for train, held_out in folds.split(x, y):
        model = _logreg(grid[0], setting, warm_start=True)
        for i, c in enumerate(grid):
            model.set_params(C=c).fit(x[train], y[train])
            accuracy[i] += model.score(x[held_out], y[held_out])
    best = int(np.argmax(accuracy))
    return grid[best], 100 * accuracy[best] / setting.kfold


def _cross_validated(x: np.ndarray, y: np.ndarray, setting: ClassifierSetting) -> dict[str, float]:
    """Outer k-fold test accuracy (mean over folds), C chosen by inner k-fold on each fold."""
    folds = StratifiedKFold(setting.kfold, shuffle=True, random_state=setting.seed)
    test, dev = [], []
    for train, held_out in folds.split(x, y):
        c, dev_accuracy = _select_c_by_kfold(x[train], y[train], setting.c_grid, setting)
        model = _logreg(c, setting).fit(x[train], y[train])
        test.append(100 * model.score(x[held_out], y[held_out]))
        dev.append(dev_accuracy)
    scores = {"acc": float(np.mean(test))}
    if dev[0] is not None:
        scores["dev_acc"] = float(np.mean(dev))
    return scores


def _dev_selected(data: TaskData, vectors: dict, setting: ClassifierSetting) -> dict[str, float]:
    """Fit on train for each C, keep the best on dev, report test accuracy."""
    x, y = _xy(data, vectors)
    best, best_dev = None, -1.0
    for c in setting.c_grid:
        model = _logreg(c, setting).fit(x["train"], y["train"])
        dev_accuracy = 100 * model.score(x["dev"], y["dev"])
        if dev_accuracy > best_dev:
            best, best_dev = model, dev_accuracy
    return {"acc": 100 * best.score(x["test"], y["test"]), "dev_acc": best_dev}


def _train_test(data: TaskData, vectors: dict, setting: ClassifierSetting) -> dict[str, float]:
    """C by k-fold on train, refit on all of train, test accuracy (+ F1 for binary tasks)."""
    x, y = _xy(data, vectors)
    c, dev_accuracy = _select_c_by_kfold(x["train"], y["train"], setting.c_grid_train_test, setting)
    predicted = _logreg(c, setting).fit(x["train"], y["train"]).predict(x["test"])
    scores = {"acc": 100 * float(np.mean(predicted == y["test"]))}
    if dev_accuracy is not None:
        scores["dev_acc"] = dev_accuracy
    if len(data.task.classes) == 2:
        scores["f1"] = 100 * float(f1_score(y["test"], predicted))
    return scores


def _relatedness(data: TaskData, vectors: dict, setting: ClassifierSetting) -> dict[str, float]:
    x, y = _xy(data, vectors)
    dev_pearson, predicted = fit_relatedness(
        (x["train"], y["train"]),
        (x["dev"], y["dev"]),
        x["test"],
        epochs_per_round=setting.relatedness_epochs_per_round,
        patience=setting.relatedness_patience,
        max_epochs=setting.relatedness_max_epochs,
        seed=setting.seed,
    )
    test = correlation(predicted, y["test"])
    mse = float(np.mean((predicted - y["test"]) ** 2))
    return {
        "pearson": test.pearson,
        "spearman": test.spearman,
        "mse": mse,
        "dev_pearson": dev_pearson,
    }


def model_fingerprint(spec: str) -> str:
    """The model's identity for the embedding cache: the spec and, for models read from
    disk, the name, size and modification time of every file it is read from
    (:func:`~ctxsent.resolver.model_source`; retraining changes it)."""
    parts = [CACHE_FORMAT, spec]
    root = Path(model_source(spec))
    files = sorted(root.rglob("*")) if root.is_dir() else [root]
    for file in files:
        if file.is_file():
            stat = file.stat()
            parts.append(f"{file.relative_to(root.parent)}:{stat.st_size}:{stat.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def pair_metrics(labels: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    """Accuracy (%) and, for two classes, F1 (%) of the positive class, as in SentEval."""
    metrics = {"acc": 100.0 * float(np.mean(labels == predicted))}
    if len(np.unique(labels)) == 2:
        tp = int(np.sum((predicted == 1) & (labels == 1)))
        denominator = int(np.sum(predicted == 1) + np.sum(labels == 1))
        metrics["f1"] = 100.0 * 2 * tp / denominator if denominator else 0.0
    return metrics


class PairAccuracy:
    """A pair classifier's :class:`~ctxsent.protocols.Evaluator` (Cross-Thought Eq. 11) on
    labelled ``pairs``: accuracy (primary) and, for two classes, F1 (:func:`pair_metrics`)."""

    primary_metric = "acc"

    def __init__(self, pairs: Pairs) -> None:
        self.pairs = pairs

    def __call__(self, classifier) -> dict[str, float]:
        return pair_metrics(self.pairs.labels, classifier.predict(self.pairs))


def evaluate_encoder(
    model: str,
    tasks: str = "all",
    data: str | Path = "../shared/data",
    *,
    setting: str = "quick",
    seed: int = 1111,
    cache_dir: str | Path | None = DEFAULT_CACHE,
    output: str | Path | None = None,
    threads: int | None = None,
    accelerator: str = "auto",
    show_progress: bool = False,
    log: Callable[[str], None] | None = None,
) -> SentEvalReport:
    """What ``ctxsent eval senteval`` prints: the encoder named ``model`` on ``tasks`` (comma
    separated, or ``all``) of the folder ``data`` (laid out as ``../shared/data``) in
    ``setting`` (:data:`SETTINGS`) with ``seed``, embeddings cached in ``cache_dir`` (None:
    none), on ``threads`` torch threads; the report is also written to ``output`` as JSON.
    Outputs and data are checked before the model loads."""
    if output is not None:
        check_writable(output, folder=False)
    if cache_dir is not None:
        check_writable(cache_dir, folder=True)
    loaded = load_tasks(tasks, data)
    if threads is not None:
        torch.set_num_threads(threads)
    encoder = on_accelerator(load_encoder(model), accelerator)
    report = run_senteval(
        encoder, loaded, model=model, fingerprint=model_fingerprint(model),
        setting=replace(SETTINGS[setting], seed=seed), cache_dir=cache_dir,
        show_progress=show_progress, log=log,
    )  # fmt: skip
    if output is not None:
        with atomic_write(output) as handle:
            handle.write(json.dumps(report.to_dict(), indent=2) + "\n")
    return report
