"""SentEval, SSP held-out and paragraph-ranking evaluators: the numbers of the functions and
commands they stand for, under one primary metric each."""

from __future__ import annotations

import gzip
import json
import math

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from ctxsent.cli import evaluate
from ctxsent.corpus.document import Document
from ctxsent.evaluation.retrieval import (
    BM25Scorer,
    ParagraphRanking,
    ParagraphRankingEvaluator,
    evaluate_paragraph_ranking,
    scorer_for_model,
    squad_paragraph_ranking,
    squad_retrieval,
)
from ctxsent.evaluation.senteval import SentEvalEvaluator, run_senteval
from ctxsent.evaluation.ssp_heldout import SspHeldoutEvaluator, ssp_heldout_metrics
from ctxsent.models.bag_of_words import BagOfWordsEncoder, WordVectors
from ctxsent.protocols import Evaluator
from ctxsent.tasks.senteval import Pairs, Sentences, SentEvalTask, TaskData
from synthetic import write_corpus

# --- SentEval -----------------------------------------------------------------------------


def senteval_tasks() -> tuple[BagOfWordsEncoder, list[TaskData]]:
    """A bag-of-words encoder over 12 seeded random word vectors, a cross-validated task
    (label: the words are of the first six, whose vectors lie apart), a dev-selected task
    with shuffled labels (an accuracy below 100) and an STS subset."""
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(12)]
    vectors = rng.normal(size=(12, 8))
    vectors[:6, 0] += 5
    encoder = BagOfWordsEncoder(WordVectors(words, vectors))
    labels = np.arange(120) % 2
    texts = [" ".join(rng.choice(words[6 * label : 6 * label + 6], 3)) for label in labels]
    labels = 1 - labels
    shuffled = rng.permutation(labels)

    def task(name, kind, metric="acc"):
        return SentEvalTask(name, kind, name, "synthetic", ("0", "1"), metric)

    split = {
        part: Sentences(texts[i : i + 40], shuffled[i : i + 40])
        for part, i in (("train", 0), ("dev", 40), ("test", 80))
    }
    sts = Pairs(texts[:30], texts[30:60], rng.uniform(0, 5, 30))
    return encoder, [
        TaskData(task("CV", "cv"), {"all": Sentences(texts, labels)}),
        TaskData(task("SPLIT", "split"), split),
        TaskData(task("STS", "sts", "pearson"), {"x": sts}),
    ]


def test_senteval_evaluator_gives_the_report_main_metrics_and_macro_accuracy(tmp_path):
    encoder, tasks = senteval_tasks()
    evaluator = SentEvalEvaluator(tasks)
    assert isinstance(evaluator, Evaluator) and evaluator.primary_metric == "macro_accuracy"
    metrics = evaluator(encoder)
    assert all(type(value) is float for value in metrics.values())

    report = run_senteval(encoder, tasks, model="bow").to_dict()
    assert metrics == {
        "CV": report["tasks"]["CV"]["acc"],
        "SPLIT": report["tasks"]["SPLIT"]["acc"],
        "STS": report["tasks"]["STS"]["pearson"],
        "macro_accuracy": report["averages"]["all accuracy tasks"]["macro"],
    }
    assert metrics["CV"] > 90 and metrics["macro_accuracy"] < 100
    assert not list(tmp_path.iterdir())  # no fingerprint: nothing cached anywhere asked
    with pytest.raises(ValueError, match="fingerprint"):
        SentEvalEvaluator(tasks, cache_dir=tmp_path)


def test_senteval_evaluator_caches_only_with_a_fingerprint(tmp_path):
    encoder, tasks = senteval_tasks()
    cached = SentEvalEvaluator(tasks[:1], fingerprint="bow", cache_dir=tmp_path)
    assert cached(encoder) == SentEvalEvaluator(tasks[:1])(encoder)
    assert len(list(tmp_path.rglob("*.npy"))) == 1


# --- SSP held-out ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ssp_dataset(tiny_bert, tmp_path_factory):
    from ctxsent.objectives.ssp import SspConfig
    from ctxsent.objectives.ssp_data import build_ssp_dataset, load_ssp_dataset

    documents = [
        Document(
            str(d), f"D{d}", [[f"Town {d} part {p} line {s}." for s in range(4)] for p in range(3)]
        )
        for d in range(4)
    ]
    corpus = write_corpus(tmp_path_factory.mktemp("corpus") / "c", documents)
    out = tmp_path_factory.mktemp("ssp") / "dslc"
    build_ssp_dataset(corpus, out, SspConfig("dslc", block_size=8, max_length=64), str(tiny_bert))
    return load_ssp_dataset(out)[0]


@pytest.mark.parametrize("training", [True, False], ids=["train-mode", "eval-mode"])
def test_ssp_evaluator_reports_the_heldout_metrics_and_keeps_the_mode(
    ssp_dataset, tiny_bert, training
):
    from ctxsent.models.cross_encoder import CrossEncoderRanker

    ranker = CrossEncoderRanker.from_backbone(str(tiny_bert), contextual=True, max_length=64)
    indices = list(range(min(20, len(ssp_dataset))))
    evaluator = SspHeldoutEvaluator(ssp_dataset, indices, batch_size=8)
    assert isinstance(evaluator, Evaluator) and evaluator.primary_metric == "auc"

    ranker.train(training)
    metrics = evaluator(ranker)
    assert all(module.training is training for module in ranker.modules())
    assert all(type(value) is float for value in metrics.values())
    expected = ssp_heldout_metrics(ranker, ssp_dataset, indices, batch_size=8)
    assert all(module.training is training for module in ranker.modules())
    assert expected["examples"] == len(indices)
    assert metrics == pytest.approx(
        {k: math.nan if v is None else v for k, v in expected.items()}, nan_ok=True
    )


def test_ssp_evaluator_needs_heldout_examples(ssp_dataset):
    from ctxsent.errors import InputError

    with pytest.raises(InputError, match="no held-out examples"):
        SspHeldoutEvaluator(ssp_dataset, [])


# --- paragraph ranking ----------------------------------------------------------------------

SQUAD = {
    "data": [
        {
            "title": "Harbour",
            "paragraphs": [
                {
                    "context": "The keeper lit the lamp of the lighthouse at dusk.",
                    "qas": [{"id": "1", "question": "who lit the lamp", "answers": []}],
                },
                {
                    "context": "Ships sail out of the harbour before the storm.",
                    "qas": [{"id": "2", "question": "where do ships sail to", "answers": []}],
                },
            ],
        },
        {
            "title": "Bakery",
            "paragraphs": [
                {
                    "context": "Bread is baked in the oven every morning, before ships sail.",
                    "qas": [
                        {"id": "3", "question": "what is baked in the oven", "answers": []},
                        {"id": "4", "question": "do ships sail from the harbour", "answers": []},
                    ],
                },
                {"context": "The baker sells cakes and pies.", "qas": []},
            ],
        },
    ]
}


@pytest.fixture
def squad_file(tmp_path):
    path = tmp_path / "dev.json.gz"
    path.write_bytes(gzip.compress(json.dumps(SQUAD).encode()))
    return path


def test_paragraph_ranking_evaluator_gives_the_commands_recalls(squad_file):
    evaluator = ParagraphRankingEvaluator(squad_paragraph_ranking(squad_file))
    assert isinstance(evaluator, Evaluator) and evaluator.primary_metric == "recall@20"
    metrics = evaluator(BM25Scorer())
    assert all(type(value) is float for value in metrics.values())

    app = typer.Typer()
    app.command("retrieval")(evaluate.retrieval)
    app.command("other")(evaluate.ssp)
    result = CliRunner().invoke(app, ["retrieval", "--model", "bm25", "--squad", str(squad_file)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == squad_retrieval(["bm25"], squad_file)  # the same call
    older = CliRunner().invoke(app, ["retrieval", "bm25", "--squad", str(squad_file)])
    assert older.stdout == result.stdout
    reported = json.loads(result.stdout)["bm25"]
    assert metrics == {
        **reported["all_paragraphs"],
        **{f"own_article_{k}": v for k, v in reported["own_article"].items()},
    }
    # BM25 ranks each question's paragraph first but the last one's: it shares two words
    # with its paragraph, three with the other article's, none with the rest of its own
    assert metrics["recall@1"] == 75.0 and metrics["own_article_recall@1"] == 100.0
    assert metrics["recall@20"] == 100.0


def test_paragraph_ranking_evaluator_scores_a_model_as_it_calls_for(tiny_bert):
    from ctxsent.resolver import load_encoder

    data = ParagraphRanking(
        [p["context"] for article in SQUAD["data"] for p in article["paragraphs"]],
        np.array([0, 0, 1, 1]),
        ["who lit the lamp", "what is baked in the oven"],
        [0, 2],
    )
    evaluator = ParagraphRankingEvaluator(data, ks=(1, 3), batch_size=2)
    assert evaluator.primary_metric == "recall@3"
    model = load_encoder(f"bi-encoder:{tiny_bert}")
    metrics = evaluator(model)
    expected = evaluate_paragraph_ranking(scorer_for_model(model, 2), data, ks=(1, 3))
    assert set(metrics) == {"recall@1", "recall@3", "own_article_recall@1", "own_article_recall@3"}
    assert metrics["recall@1"] == expected["all_paragraphs"]["recall@1"]
    assert metrics["own_article_recall@3"] == expected["own_article"]["recall@3"] == 100.0
