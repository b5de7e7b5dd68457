"""Task readers: counts against ../shared/data/README.md, and bad input -> InputError."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from ctxsent.errors import InputError
from ctxsent.tasks.senteval import (
    DEFAULT_TASKS,
    get_task,
    load_task,
    read_binary,
    read_mrpc,
    read_sick,
    read_sst,
    read_sts_subset,
    read_sts_year,
    read_stsb,
    read_trec,
)

# (split sizes, label counts per split) as verified in ../shared/data/README.md.
README_COUNTS = {
    "MR": {"all": (10662, {1: 5331, 0: 5331})},
    "CR": {"all": (3775, {1: 2407, 0: 1368})},
    "SUBJ": {"all": (10000, {1: 5000, 0: 5000})},
    "MPQA": {"all": (10606, {1: 3312, 0: 7294})},
    "SST2": {
        "train": (67349, {1: 37569, 0: 29780}),
        "dev": (872, {1: 444, 0: 428}),
        "test": (1821, {1: 909, 0: 912}),
    },
    "TREC": {  # ABBR DESC ENTY HUM LOC NUM
        "train": (5452, {0: 86, 1: 1162, 2: 1250, 3: 1223, 4: 835, 5: 896}),
        "test": (500, {0: 9, 1: 138, 2: 94, 3: 65, 4: 81, 5: 113}),
    },
    "MRPC": {"train": (4076, {1: 2753, 0: 1323}), "test": (1725, {1: 1147, 0: 578})},
    "SICK-E": {  # CONTRADICTION NEUTRAL ENTAILMENT
        "train": (4500, {1: 2536, 2: 1299, 0: 665}),
        "dev": (500, {1: 282, 2: 144, 0: 74}),
        "test": (4927, {1: 2793, 2: 1414, 0: 720}),
    },
    "SICK-R": {"train": (4500, None), "dev": (500, None), "test": (4927, None)},
    "STSB": {"test": (1379, None)},
    "STS12": {
        "MSRpar": (750, None),
        "MSRvid": (750, None),
        "SMTeuroparl": (459, None),
        "surprise.OnWN": (750, None),
        "surprise.SMTnews": (399, None),
    },
}


@pytest.mark.integration
@pytest.mark.parametrize("name", DEFAULT_TASKS)
def test_reader_counts_match_the_data_readme(senteval_data: Path, name: str) -> None:
    data = load_task(get_task(name), senteval_data)
    expected = README_COUNTS[name]
    assert set(data.splits) == set(expected)
    for split, (size, labels) in expected.items():
        assert len(data.splits[split]) == size, split
        if labels is not None:
            assert dict(Counter(data.splits[split].labels.tolist())) == labels, split


@pytest.mark.integration
def test_score_ranges_and_other_splits_of_real_data(senteval_data: Path) -> None:
    sick = load_task(get_task("SICK-R"), senteval_data)
    for split in sick.splits.values():
        assert split.labels.min() >= 1.0 and split.labels.max() <= 5.0
    stsb = senteval_data / "stsbenchmark"
    assert [len(read_stsb(stsb / f"sts-{s}.csv")) for s in ("train", "dev", "test")] == [
        5749,
        1500,
        1379,
    ]
    sts12 = load_task(get_task("STS12"), senteval_data)
    assert sum(len(s) for s in sts12.splits.values()) == sts12.n_test == 3108
    assert all(s.labels.min() >= 0.0 and s.labels.max() <= 5.0 for s in sts12.splits.values())


@pytest.mark.integration
def test_n_test_is_the_micro_average_weight(senteval_data: Path) -> None:
    assert load_task(get_task("MR"), senteval_data).n_test == 10662  # cv: the whole set
    assert load_task(get_task("SICK-E"), senteval_data).n_test == 4927


def test_task_names_are_forgiving_and_unknown_ones_are_rejected() -> None:
    assert get_task("sick_e").name == "SICK-E"
    assert get_task("sst-2").name == "SST2"
    assert get_task("STSBenchmark").name == "STSB"
    sts14 = get_task("sts14")
    assert (sts14.name, sts14.kind, sts14.path) == ("STS14", "sts", "sts14")
    with pytest.raises(InputError, match="unknown task 'SNLI'"):
        get_task("SNLI")


def test_missing_task_folder_names_the_folder(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"senteval/MR.*no folder for task MR"):
        load_task(get_task("MR"), tmp_path)


def test_binary_reader_keeps_empty_lines_like_senteval(tmp_path: Path) -> None:
    (tmp_path / "pos").write_text("great fun\n\n", encoding="utf-8")
    (tmp_path / "neg").write_text("dull\n", encoding="utf-8")
    data = read_binary(tmp_path / "pos", tmp_path / "neg")
    assert data.texts == ["great fun", "", "dull"]
    assert data.labels.tolist() == [1, 1, 0]


def test_trec_reads_latin1_and_takes_the_coarse_label(tmp_path: Path) -> None:
    path = tmp_path / "trec.label"
    path.write_bytes("HUM:ind Who wrote Ã©tude ?\nNUM:date When ?\n".encode("latin-1"))
    data = read_trec(path)
    assert data.texts == ["Who wrote Ã©tude ?", "When ?"]
    assert data.labels.tolist() == [3, 5]


def test_sts_subset_skips_pairs_without_gold_score(tmp_path: Path) -> None:
    (tmp_path / "STS.input.x.txt").write_text("a\tb\nc\td\ne\tf\n", encoding="utf-8")
    (tmp_path / "STS.gs.x.txt").write_text("4.5\n\n0\n", encoding="utf-8")
    (tmp_path / "STS.gs.ALL.txt").write_text("1\n", encoding="utf-8")  # no inputs: ignored
    subsets = read_sts_year(tmp_path)
    assert list(subsets) == ["x"]
    assert subsets["x"].first == ["a", "e"]
    np.testing.assert_array_equal(subsets["x"].labels, [4.5, 0.0])


SICK_HEADER = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"
MRPC_HEADER = "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"


@pytest.mark.parametrize(
    ("name", "text", "read", "message", "line"),
    [
        ("sst", "fine\t1\nno label here\n", read_sst, "sentence<TAB>0|1", 2),
        ("sst", "fine\t7\n", read_sst, "sentence<TAB>0|1", 1),
        ("trec", "DESC:def What ?\nWHAT:x y ?\n", read_trec, "field 'label'", 2),
        ("mrpc", MRPC_HEADER + "1\t1\t2\ta\tb\n2\t1\t2\ta\tb\n", read_mrpc, "Quality", 3),
        ("mrpc", MRPC_HEADER + "1\t1\t2\ta\n", read_mrpc, "expected 5 TAB-separated", 2),
        ("mrpc", "Quality\tX\n", read_mrpc, "header", 1),
        (
            "sick",
            SICK_HEADER + "1\ta\tb\t4.5\tNEUTRAL\n2\ta\tb\t4.5\tMAYBE\n",
            lambda p: read_sick(p, "entailment"),
            "entailment_judgment",
            3,
        ),
        (
            "sick",
            SICK_HEADER + "1\ta\tb\tfour\tNEUTRAL\n",
            lambda p: read_sick(p, "relatedness"),
            "not a number: 'four'",
            2,
        ),
        (
            "sick",
            SICK_HEADER + "1\ta\tb\t7\tNEUTRAL\n",
            lambda p: read_sick(p, "relatedness"),
            r"outside \[1, 5\]",
            2,
        ),
        ("stsb", "g\tf\ty\t1\t2.5\ta\n", read_stsb, "expected 7 or 9", 1),
    ],
)
def test_malformed_line_names_file_and_line(
    tmp_path: Path, name: str, text: str, read, message: str, line: int
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=message) as err:
        read(path)
    assert (err.value.path, err.value.line) == (str(path), line)


def test_sts_errors_name_the_file_and_line(tmp_path: Path) -> None:
    inputs, gold = tmp_path / "STS.input.x.txt", tmp_path / "STS.gs.x.txt"
    inputs.write_text("a\tb\nc\td\te\n", encoding="utf-8")
    gold.write_text("1\n2\n", encoding="utf-8")
    with pytest.raises(InputError, match="expected 2 TAB-separated sentences") as err:
        read_sts_subset(inputs, gold)
    assert (err.value.path, err.value.line) == (str(inputs), 2)

    inputs.write_text("a\tb\nc\td\n", encoding="utf-8")
    gold.write_text("1\nhigh\n", encoding="utf-8")
    with pytest.raises(InputError, match="gold score") as err:
        read_sts_subset(inputs, gold)
    assert (err.value.path, err.value.line) == (str(gold), 2)

    gold.write_text("1\n", encoding="utf-8")
    with pytest.raises(InputError, match="2 sentence pairs but 1 gold scores"):
        read_sts_subset(inputs, gold)


def test_undecodable_bytes_name_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "sentiment-train"
    path.write_bytes(b"fine\t1\nbad \xff byte\t0\n")
    with pytest.raises(InputError, match="not valid utf-8") as err:
        read_sst(path)
    assert err.value.line == 2
