"""The evaluator on synthetic tasks: separable -> high accuracy, noise -> chance, and the cache."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from ctxsent.evaluation.senteval import (
    LITERATURE,
    QUICK,
    Embedder,
    _embed_splits,
    evaluate_task,
    run_senteval,
)
from ctxsent.tasks.senteval import Pairs, Sentences, SentEvalTask, TaskData

# Literature-shaped (C selected by k-fold / on dev) but small enough for unit tests.
SELECTING = replace(LITERATURE, c_grid=(0.1, 1.0), c_grid_train_test=(0.1, 1.0), kfold=3)
QUICK_5 = replace(QUICK, kfold=5, relatedness_max_epochs=40)


def clusters(n: int, n_classes: int, rng: np.random.Generator, noise: float, dim: int = 8):
    """Texts ``t0..``, labels cycling over the classes, vectors around one centre per class."""
    labels = np.arange(n) % n_classes
    centres = 3 * rng.normal(size=(n_classes, dim))
    vectors = centres[labels] + noise * rng.normal(size=(n, dim))
    texts = [f"t{rng.integers(1 << 60)}" for _ in range(n)]
    return texts, labels, dict(zip(texts, vectors, strict=True))


def task(kind: str, n_classes: int = 2) -> SentEvalTask:
    classes = tuple(str(i) for i in range(n_classes))
    metric = "pearson" if kind in ("relatedness", "sts") else "acc"
    return SentEvalTask("SYN", kind, "synthetic", "synthetic", classes, metric)


def evaluate(table_encoder, table: dict, data: TaskData, setting=QUICK_5) -> dict:
    return evaluate_task(data, Embedder(table_encoder(table), "test"), setting).scores


@pytest.mark.parametrize("setting", [QUICK_5, SELECTING], ids=["quick", "selecting"])
def test_cross_validation_separable_is_near_perfect_and_noise_is_chance(
    table_encoder, setting
) -> None:
    rng = np.random.default_rng(0)
    texts, labels, table = clusters(300, 2, rng, noise=1.0)
    scores = evaluate(
        table_encoder, table, TaskData(task("cv"), {"all": Sentences(texts, labels)}), setting
    )
    assert scores["acc"] > 95
    assert ("dev_acc" in scores) == (setting is SELECTING)

    noise = {text: rng.normal(size=8) for text in texts}
    chance = evaluate(
        table_encoder, noise, TaskData(task("cv"), {"all": Sentences(texts, labels)}), setting
    )
    assert 38 < chance["acc"] < 62


def test_dev_selected_split_task(table_encoder) -> None:
    rng = np.random.default_rng(1)
    texts, labels, table = clusters(400, 2, rng, noise=1.0)
    splits = {
        "train": Sentences(texts[:200], labels[:200]),
        "dev": Sentences(texts[200:300], labels[200:300]),
        "test": Sentences(texts[300:], labels[300:]),
    }
    scores = evaluate(table_encoder, table, TaskData(task("split"), splits), SELECTING)
    assert scores["acc"] > 95 and scores["dev_acc"] > 95
    shuffled = {**splits, "test": Sentences(texts[300:], rng.permutation(labels[300:]))}
    assert 30 < evaluate(table_encoder, table, TaskData(task("split"), shuffled))["acc"] < 70


def test_train_test_multiclass_and_binary_f1(table_encoder) -> None:
    rng = np.random.default_rng(2)
    texts, labels, table = clusters(400, 4, rng, noise=1.0)
    splits = {
        "train": Sentences(texts[:300], labels[:300]),
        "test": Sentences(texts[300:], labels[300:]),
    }
    scores = evaluate(table_encoder, table, TaskData(task("train-test", 4), splits), SELECTING)
    assert scores["acc"] > 90 and "f1" not in scores and "dev_acc" in scores

    binary = {name: Sentences(s.texts, s.labels % 2) for name, s in splits.items()}
    scores = evaluate(table_encoder, table, TaskData(task("train-test", 2), binary))
    assert "f1" in scores and 0 < scores["f1"] <= 100


def test_pair_classification_uses_pair_features(table_encoder) -> None:
    """Label 1 when both sentences come from the same cluster: linear in |u - v|."""
    rng = np.random.default_rng(3)
    texts, labels, table = clusters(400, 8, rng, noise=0.3)
    by_class = [[t for t, label in zip(texts, labels, strict=True) if label == c] for c in range(8)]
    first, second, same = [], [], []
    for i in range(600):
        is_same = rng.random() < 0.5
        other = i % 8 if is_same else (i + rng.integers(1, 8)) % 8
        first.append(rng.choice(by_class[i % 8]))
        second.append(rng.choice(by_class[other]))
        same.append(int(is_same))
    same = np.array(same)
    splits = {
        "train": Pairs(first[:400], second[:400], same[:400]),
        "test": Pairs(first[400:], second[400:], same[400:]),
    }
    scores = evaluate(table_encoder, table, TaskData(task("train-test"), splits))
    assert scores["acc"] > 90


def test_relatedness_regression_recovers_a_distance_signal(table_encoder) -> None:
    rng = np.random.default_rng(4)
    n = 600
    scores = rng.uniform(1, 5, size=n)
    u = rng.normal(size=(n, 8))
    v = u + (5 - scores)[:, None] * 0.3 * rng.normal(size=(n, 8))
    table = {f"u{i}": u[i] for i in range(n)} | {f"v{i}": v[i] for i in range(n)}
    rows = {"train": range(0, 300), "dev": range(300, 400), "test": range(400, 600)}
    splits = {
        name: Pairs([f"u{i}" for i in r], [f"v{i}" for i in r], scores[list(r)])
        for name, r in rows.items()
    }
    result = evaluate(table_encoder, table, TaskData(task("relatedness"), splits))
    assert result["pearson"] > 0.6 and result["dev_pearson"] > 0.6
    assert result["mse"] < np.var(scores[400:])  # better than predicting the mean


def test_sts_by_cosine_reports_all_three_aggregations(table_encoder) -> None:
    rng = np.random.default_rng(5)
    subsets, table = {}, {}
    for name, n in (("a", 50), ("b", 80)):
        gold = rng.uniform(0, 5, size=n)
        for i in range(n):
            base = rng.normal(size=8)
            table[f"{name}{i}"] = base
            table[f"{name}{i}'"] = base + (5 - gold[i]) * 0.4 * rng.normal(size=8)
        subsets[name] = Pairs(
            [f"{name}{i}" for i in range(n)], [f"{name}{i}'" for i in range(n)], gold
        )
    data = TaskData(task("sts"), subsets)
    result = evaluate_task(data, Embedder(table_encoder(table), "test"), QUICK)
    assert result.scores["spearman"] > 0.6
    assert result.details["aggregation"] == "wmean"
    assert result.scores["pearson"] == result.details["wmean"]["pearson"]
    assert {"all", "mean", "wmean", "subsets"} <= set(result.details)
    assert result.n_test == 130


def test_results_are_deterministic_given_the_seed(table_encoder) -> None:
    rng = np.random.default_rng(6)
    texts, labels, table = clusters(200, 2, rng, noise=3.0)
    data = TaskData(task("cv"), {"all": Sentences(texts, labels)})
    assert evaluate(table_encoder, table, data, SELECTING) == evaluate(
        table_encoder, table, data, SELECTING
    )


def test_embedder_encodes_each_unique_text_once_and_keeps_the_mapping(table_encoder) -> None:
    table = {"a": np.array([1.0, 0.0]), "bb": np.array([0.0, 1.0]), "ccc": np.array([1.0, 1.0])}
    data = TaskData(
        task("train-test"),
        {
            "train": Pairs(["a", "bb", "a"], ["ccc", "a", "bb"], np.array([0, 1, 0])),
            "test": Pairs(["ccc"], ["a"], np.array([1])),
        },
    )
    encoder = table_encoder(table)
    embed = Embedder(encoder, "test", chunk_size=2)
    vectors = _embed_splits(data, embed)
    assert sorted(encoder.encoded) == ["a", "bb", "ccc"]
    assert encoder.encoded[0] == "ccc"  # longest first
    first, second = vectors["train"]
    np.testing.assert_array_equal(first, [table["a"], table["bb"], table["a"]])
    np.testing.assert_array_equal(second, [table["ccc"], table["a"], table["bb"]])


def test_cache_hits_skip_the_encoder_and_keys_follow_model_and_texts(
    table_encoder, tmp_path: Path
) -> None:
    rng = np.random.default_rng(7)
    texts, labels, table = clusters(60, 2, rng, noise=1.0)
    data = [TaskData(task("cv"), {"all": Sentences(texts, labels)})]

    def run(fingerprint: str, encoder):
        return run_senteval(
            encoder, data, model="m", fingerprint=fingerprint, setting=QUICK_5, cache_dir=tmp_path
        )

    first = table_encoder(table)
    report = run("model-1", first)
    assert len(first.encoded) == 60
    cached = list(tmp_path.rglob("*"))
    assert [p.suffix for p in cached if p.is_file()] == [".npy"]  # no temporary leftovers

    again = table_encoder(table)
    assert run("model-1", again).results[0].scores == report.results[0].scores
    assert again.encoded == []

    other_model = table_encoder(table)
    run("model-2", other_model)
    assert len(other_model.encoded) == 60

    fewer = [TaskData(task("cv"), {"all": Sentences(texts[:40], labels[:40])})]
    other_texts = table_encoder(table)
    run_senteval(
        other_texts, fewer, model="m", fingerprint="model-1", setting=QUICK_5, cache_dir=tmp_path
    )
    assert len(other_texts.encoded) == 40


def test_empty_sentences_are_embedded_as_a_full_stop_like_senteval(table_encoder) -> None:
    table = {".": np.array([3.0, 3.0]), "a": np.array([1.0, 0.0])}
    encoder = table_encoder(table)
    vectors = Embedder(encoder, "test")("key", ["a", "", "  "])
    np.testing.assert_array_equal(vectors, [table["a"], table["."], table["."]])
    assert "" not in encoder.encoded


def test_encoder_returning_the_wrong_shape_is_reported() -> None:
    class Broken:
        def encode(self, texts: list[str]) -> np.ndarray:
            return np.zeros(len(texts))

    with pytest.raises(ValueError, match=r"encode\(\) returned shape \(2,\) for 2 texts"):
        Embedder(Broken(), "broken")("key", ["a", "b"])
