"""SentEval-style transfer and STS tasks: metadata (MTEB-style dataclasses) and readers.

SentEval's tasks and protocol (Conneau & Kiela, 2018; RNN-CNN section 4, Mean-Max AAE
section 4.1): MR, CR, SUBJ, MPQA by 10-fold cross-validation; SST-2, SICK-E with
train/dev/test; TREC and MRPC with train/test; SICK-R as supervised relatedness; STS by
cosine. Files are read as laid out in ``../shared/data`` (``senteval/<TASK>/``, ``sts12/``,
``stsbenchmark/``; another STS year in STS12's format from ``sts<yy>/``), following
SentEval's loaders: empty lines of one-sentence-per-line files are kept as empty sentences
(the published CR and MPQA counts include them), STS pairs with an empty gold score are
skipped, anything else malformed is an :class:`InputError` naming the file and line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from ctxsent.errors import InputError
from ctxsent.io import read_lines

TaskKind = Literal["cv", "split", "train-test", "relatedness", "sts"]
"""How a task is evaluated: ``cv`` k-fold cross-validation on one set; ``split`` model
selection on dev, score on test; ``train-test`` selection by k-fold on train, score on
test; ``relatedness`` a regression to a 1-5 score; ``sts`` cosine similarity, no training."""


@dataclass(frozen=True, slots=True)
class SentEvalTask:
    """What a task is and where its files live (relative to the ``--data`` folder)."""

    name: str
    kind: TaskKind
    path: str
    description: str
    classes: tuple[str, ...] = ()
    main_metric: str = "acc"


@dataclass(frozen=True, slots=True)
class Sentences:
    """Labelled single sentences."""

    texts: list[str]
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.texts)


@dataclass(frozen=True, slots=True)
class Pairs:
    """Labelled sentence pairs (class ids, or float scores for relatedness/STS)."""

    first: list[str]
    second: list[str]
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.first)


Split = Sentences | Pairs


@dataclass(frozen=True, slots=True)
class TaskData:
    """A task and its splits: ``all`` (cv), ``train``/``dev``/``test``, or STS subsets."""

    task: SentEvalTask
    splits: dict[str, Split]

    @property
    def n_test(self) -> int:
        """Test items, the micro-average weight: the whole set for cv tasks (as in Mean-Max
        AAE Table 2), every pair for STS years."""
        if self.task.kind == "sts":
            return sum(len(split) for split in self.splits.values())
        return len(self.splits["all" if self.task.kind == "cv" else "test"])


SICK_ENTAILMENT = ("CONTRADICTION", "NEUTRAL", "ENTAILMENT")  # SentEval's label order
TREC_CLASSES = ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")

TASKS: dict[str, SentEvalTask] = {
    task.name: task
    for task in (
        SentEvalTask("MR", "cv", "senteval/MR", "movie review sentiment", classes=("neg", "pos")),
        SentEvalTask("CR", "cv", "senteval/CR", "product review sentiment", classes=("neg", "pos")),
        SentEvalTask(
            "SUBJ", "cv", "senteval/SUBJ", "subjectivity", classes=("objective", "subjective")
        ),
        SentEvalTask("MPQA", "cv", "senteval/MPQA", "opinion polarity", classes=("neg", "pos")),
        SentEvalTask(
            "SST2", "split", "senteval/SST/binary", "SST binary sentiment", classes=("neg", "pos")
        ),
        SentEvalTask("TREC", "train-test", "senteval/TREC", "question type", classes=TREC_CLASSES),
        SentEvalTask(
            "MRPC",
            "train-test",
            "senteval/MRPC",
            "paraphrase detection",
            classes=("not paraphrase", "paraphrase"),
        ),
        SentEvalTask("SICK-E", "split", "senteval/SICK", "entailment", classes=SICK_ENTAILMENT),
        SentEvalTask(
            "SICK-R",
            "relatedness",
            "senteval/SICK",
            "relatedness (1-5)",
            main_metric="pearson",
        ),
        SentEvalTask(
            "STSB",
            "sts",
            "stsbenchmark",
            "STS Benchmark test, cosine",
            main_metric="pearson",
        ),
    )
}
DEFAULT_TASKS = (*TASKS, "STS12")
_STS_YEAR = re.compile(r"STS(1[2-6])")


def get_task(name: str) -> SentEvalTask:
    """Look a task up by name, ignoring case and ``-``/``_`` (``sick_e``, ``sst-2``, ``sts14``)."""
    key = re.sub(r"[-_]", "", name.upper())
    aliases = {"SST": "SST2", "SICKE": "SICK-E", "SICKR": "SICK-R", "STSBENCHMARK": "STSB"}
    key = aliases.get(key, key)
    if key in TASKS:
        return TASKS[key]
    if year := _STS_YEAR.fullmatch(key):
        return SentEvalTask(
            key,
            "sts",
            f"sts{year.group(1)}",
            f"SemEval-20{year.group(1)} STS, cosine",
            main_metric="pearson",
        )
    known = ", ".join([*TASKS, "STS12-STS16"])
    raise InputError(f"unknown task {name!r}; known: {known}", field="tasks")


def load_tasks(names: str, data_dir: str | Path) -> list[TaskData]:
    """The tasks of a comma-separated list of names (``all``: :data:`DEFAULT_TASKS`), read
    from ``data_dir``; all are read first, so bad data fails before any work."""
    chosen = DEFAULT_TASKS if names.strip().lower() == "all" else names.split(",")
    return [load_task(get_task(name.strip()), data_dir) for name in chosen if name.strip()]


def load_task(task: SentEvalTask, data_dir: str | Path) -> TaskData:
    """Read all files of ``task`` from ``data_dir`` (laid out as ``../shared/data``)."""
    folder = Path(data_dir) / task.path
    if not folder.is_dir():
        raise InputError(
            f"no folder for task {task.name}; --data must hold senteval/, sts12/, stsbenchmark/ "
            "as in ../shared/data",
            path=folder,
        )
    splits = _read_splits(task, folder)
    for name, split in splits.items():
        if len(split) == 0:
            raise InputError(f"split {name!r} of task {task.name} is empty", path=folder)
    return TaskData(task, splits)


_BINARY_FILES = {
    "MR": ("rt-polarity.pos", "rt-polarity.neg"),
    "CR": ("custrev.pos", "custrev.neg"),
    "SUBJ": ("subj.subjective", "subj.objective"),
    "MPQA": ("mpqa.pos", "mpqa.neg"),
}
_SICK_FILES = {
    "train": "SICK_train.txt",
    "dev": "SICK_trial.txt",
    "test": "SICK_test_annotated.txt",
}


def _read_splits(task: SentEvalTask, folder: Path) -> dict[str, Split]:
    match task.name:
        case "MR" | "CR" | "SUBJ" | "MPQA":
            positive, negative = _BINARY_FILES[task.name]
            return {"all": read_binary(folder / positive, folder / negative)}
        case "SST2":
            return {s: read_sst(folder / f"sentiment-{s}") for s in ("train", "dev", "test")}
        case "TREC":
            return {
                "train": read_trec(folder / "train_5500.label"),
                "test": read_trec(folder / "TREC_10.label"),
            }
        case "MRPC":
            return {s: read_mrpc(folder / f"msr_paraphrase_{s}.txt") for s in ("train", "test")}
        case "SICK-E" | "SICK-R":
            target = "entailment" if task.name == "SICK-E" else "relatedness"
            return {s: read_sick(folder / name, target) for s, name in _SICK_FILES.items()}
        case "STSB":
            return {"test": read_stsb(folder / "sts-test.csv")}
    return read_sts_year(folder)


def read_binary(positive: Path, negative: Path) -> Sentences:
    """One sentence per line; label 1 for ``positive``'s lines, then 0 for ``negative``'s."""
    pos = [line for _, line in read_lines(positive)]
    neg = [line for _, line in read_lines(negative)]
    return Sentences(pos + neg, np.array([1] * len(pos) + [0] * len(neg)))


def read_sst(path: Path) -> Sentences:
    """SST binary: ``sentence<TAB>label`` with label 0 or 1."""
    texts, labels = [], []
    for line_no, line in read_lines(path):
        text, sep, label = line.rpartition("\t")
        if not sep or label.strip() not in ("0", "1"):
            raise InputError("expected 'sentence<TAB>0|1'", path=path, line=line_no)
        texts.append(text.strip())
        labels.append(int(label))
    return Sentences(texts, np.array(labels))


def read_trec(path: Path) -> Sentences:
    """TREC: ``COARSE:fine question`` (Latin-1); the label is the coarse class of 6."""
    texts, labels = [], []
    for line_no, line in read_lines(path, encoding="latin-1"):
        coarse, _, rest = line.partition(":")
        _fine, _, question = rest.partition(" ")
        if coarse not in TREC_CLASSES or not question.strip():
            raise InputError(
                "expected 'COARSE:fine question'", path=path, line=line_no, field="label"
            )
        texts.append(question.strip())
        labels.append(TREC_CLASSES.index(coarse))
    return Sentences(texts, np.array(labels))


def read_mrpc(path: Path) -> Pairs:
    """MRPC TSV (UTF-8 with BOM): ``Quality, #1 ID, #2 ID, #1 String, #2 String``."""
    first, second, labels = [], [], []
    for line_no, fields in _tsv(path, "utf-8-sig", header=("Quality", "#1 ID"), n_fields=(5,)):
        if fields[0] not in ("0", "1"):
            raise InputError("expected 0 or 1", path=path, line=line_no, field="Quality")
        first.append(fields[3])
        second.append(fields[4])
        labels.append(int(fields[0]))
    return Pairs(first, second, np.array(labels))


def read_sick(path: Path, target: Literal["entailment", "relatedness"]) -> Pairs:
    """SentEval's SICK split files: ``pair_ID, sentence_A, sentence_B, relatedness_score,
    entailment_judgment``; labels are class ids (entailment) or scores in [1, 5]."""
    first, second, labels = [], [], []
    header = ("pair_ID", "sentence_A")
    for line_no, fields in _tsv(path, "utf-8", header=header, n_fields=(5,)):
        first.append(fields[1])
        second.append(fields[2])
        if target == "entailment":
            if fields[4] not in SICK_ENTAILMENT:
                raise InputError(
                    f"expected one of {SICK_ENTAILMENT}",
                    path=path,
                    line=line_no,
                    field="entailment_judgment",
                )
            labels.append(SICK_ENTAILMENT.index(fields[4]))
        else:
            score = _score(fields[3], path, line_no, "relatedness_score")
            if not 1.0 <= score <= 5.0:
                raise InputError(
                    "score outside [1, 5]", path=path, line=line_no, field="relatedness_score"
                )
            labels.append(score)
    return Pairs(first, second, np.array(labels))


def read_stsb(path: Path) -> Pairs:
    """STS Benchmark (original release): TAB-separated genre, file, year, id, score (0-5),
    sentence1, sentence2, and on some rows two more source fields; quotes are not escaped."""
    first, second, labels = [], [], []
    for line_no, fields in _tsv(path, "utf-8", header=None, n_fields=(7, 9)):
        labels.append(_score(fields[4], path, line_no, "score"))
        first.append(fields[5])
        second.append(fields[6])
    return Pairs(first, second, np.array(labels))


def read_sts_subset(inputs: Path, gold: Path) -> Pairs:
    """One STS12-16 subset: ``sentence1<TAB>sentence2`` lines aligned with gold-score lines.

    A pair whose gold line is empty is skipped, as in SentEval (STS13-16 have such pairs).
    """
    pairs = [(line_no, line.split("\t")) for line_no, line in read_lines(inputs)]
    scores = [(line_no, line.strip()) for line_no, line in read_lines(gold)]
    if len(pairs) != len(scores):
        raise InputError(
            f"{len(pairs)} sentence pairs but {len(scores)} gold scores in {gold.name}", path=inputs
        )
    first, second, labels = [], [], []
    for (line_no, fields), (gold_line, score) in zip(pairs, scores, strict=True):
        if len(fields) != 2:
            raise InputError(
                f"expected 2 TAB-separated sentences, found {len(fields)} fields",
                path=inputs,
                line=line_no,
            )
        if score:
            first.append(fields[0])
            second.append(fields[1])
            labels.append(_score(score, gold, gold_line, "gold score"))
    return Pairs(first, second, np.array(labels))


def read_sts_year(folder: Path) -> dict[str, Pairs]:
    """All subsets of an STS year folder, by name (``MSRpar``, ``surprise.OnWN``, ...)."""
    subsets = {}
    for inputs in sorted(folder.glob("STS.input.*.txt")):
        name = inputs.name.removeprefix("STS.input.").removesuffix(".txt")
        subsets[name] = read_sts_subset(inputs, folder / f"STS.gs.{name}.txt")
    if not subsets:
        raise InputError("no STS.input.<set>.txt files", path=folder)
    return subsets


def _tsv(path: Path, encoding: str, *, header: tuple[str, ...] | None, n_fields: tuple[int, ...]):
    """Yield ``(line_no, fields)`` of a TAB-separated file, checking the header and field count."""
    for line_no, line in read_lines(path, encoding=encoding):
        fields = line.split("\t")
        if line_no == 1 and header is not None:
            if tuple(fields[: len(header)]) != header:
                raise InputError(f"expected a header starting {header}", path=path, line=1)
            continue
        if len(fields) not in n_fields:
            expected = " or ".join(map(str, n_fields))
            raise InputError(
                f"expected {expected} TAB-separated fields, found {len(fields)}",
                path=path,
                line=line_no,
            )
        yield line_no, fields


def _score(text: str, path: Path, line_no: int, field: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise InputError(f"not a number: {text!r}", path=path, line=line_no, field=field) from None
