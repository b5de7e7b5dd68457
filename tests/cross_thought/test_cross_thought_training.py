"""Pre-training runs (resumable) and fine-tuning: answer selection (Eq. 10), pairs (Eq. 11)."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

import numpy as np
import pytest
import torch
from cross_thought_fixtures import synthetic_documents, tiny_model
from transformers import AutoTokenizer

import ctxsent
from ctxsent.errors import InputError
from ctxsent.evaluation.as2_metrics import as2_metrics
from ctxsent.models.cross_thought import CrossThoughtModel, CrossThoughtRanker, PairClassifier
from ctxsent.objectives.cross_thought import answer_selection_loss
from ctxsent.objectives.pretrain_data import SUMMARY, build_cross_thought_data
from ctxsent.presets import get_preset
from ctxsent.tasks.as2_records import As2Record
from ctxsent.tasks.senteval import Pairs
from ctxsent.training.cross_thought_train import (
    CrossThoughtFineTuneConfig,
    CrossThoughtPretrainConfig,
    finetune_answer_selection,
    finetune_pair_classifier,
    pretrain_cross_thought,
    split_off_dev,
)
from synthetic import script_evaluations, write_corpus


@pytest.fixture(scope="module")
def ct_data(tiny_bert, tmp_path_factory):
    """A Cross-Thought data folder: 100 sequences of the synthetic towns but Town 0."""
    root = tmp_path_factory.mktemp("ct-data")
    corpus = write_corpus(root / "corpus", synthetic_documents(count=12, paragraphs=40))
    build_cross_thought_data(
        corpus, root / "data", "cross-thought-3-64-cpu", str(tiny_bert), max_sequences=100,
        exclude_titles=("Town 0",),
    )  # fmt: skip
    return root / "data"


def _pretrain_config(tiny_bert, **settings) -> CrossThoughtPretrainConfig:
    settings = {"max_steps": 2, "accelerator": "cpu", "precision": "fp32", **settings}
    config = get_preset("cross-thought-3-64-cpu").config
    return replace(config, backbone=str(tiny_bert), **settings)


@pytest.fixture(scope="module")
def resumed(tiny_bert, ct_data, tmp_path_factory):
    """A 2-step pre-training run, then the same run asked for 3 steps: its folder and both
    runs' summaries (the tests only read them)."""
    out = tmp_path_factory.mktemp("ct-run")
    config = _pretrain_config(tiny_bert)
    first = pretrain_cross_thought(ct_data, out, replace(config, keep_checkpoints=True))
    config.max_steps = 3
    return out, first, pretrain_cross_thought(ct_data, out, config)


def test_pretraining_saves_a_model_and_resumes(resumed):
    out, first, second = resumed
    progress = first["progress"]
    assert progress["steps"] == 2 and progress["tokens_seen"] > 0
    assert np.isfinite(first["metrics"]["train"]["loss"])
    assert not (out / "checkpoints").exists()  # the second run keeps none
    model = ctxsent.load(out / "model")
    assert isinstance(model, CrossThoughtModel) and model.config.num_special == 3
    assert second["progress"]["steps"] == 3 and second["progress"]["steps_this_run"] == 1
    assert second["progress"]["tokens_seen"] > progress["tokens_seen"]
    run = json.loads((out / "run.json").read_text())
    assert run == second and run["data"]["sequences"] == first["data"]["sequences"] == 100
    assert run["settings"]["data"]["sequences"] == 100 and "build" not in run["settings"]["data"]


def test_a_resumed_run_ends_with_the_weights_of_an_uninterrupted_one(
    tiny_bert, ct_data, resumed, tmp_path
):
    pretrain_cross_thought(ct_data, tmp_path, _pretrain_config(tiny_bert, max_steps=3))
    a = CrossThoughtModel.from_pretrained(tmp_path / "model").state_dict()
    b = CrossThoughtModel.from_pretrained(resumed[0] / "model").state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_an_accumulated_run_counts_the_masked_words_of_its_whole_step(
    tiny_bert, ct_data, tmp_path, monkeypatch
):
    from ctxsent.objectives.cross_thought import CrossThoughtObjective

    counted, step_counts = [], CrossThoughtObjective.step_counts

    def recording(self, batch, generator):
        counts = step_counts(self, batch, generator)
        counted.append((batch["input_ids"].shape[0], counts["mlm"]))
        return counts

    monkeypatch.setattr(CrossThoughtObjective, "step_counts", recording)
    summary = pretrain_cross_thought(
        ct_data, tmp_path, _pretrain_config(tiny_bert, max_steps=2, accumulate=2)
    )
    assert summary["progress"]["steps"] == 2 and np.isfinite(summary["metrics"]["train"]["loss"])
    # 2 steps of 2 batches, each a half of the preset's 4 samples, counted before each step
    assert len(counted) == 4 and all(rows == 2 and words > 0 for rows, words in counted)


def test_data_of_another_preset_tokenizer_or_folder_is_refused(tiny_bert, ct_data, tmp_path):
    other_preset = _pretrain_config(tiny_bert, max_steps=1, sequence_length=512)
    with pytest.raises(InputError, match=f"^{ct_data}: holds sequences of 64 tokens"):
        pretrain_cross_thought(ct_data, tmp_path / "a", other_preset)
    backbone = tmp_path / "other-bert"
    shutil.copytree(tiny_bert, backbone)
    tokenizer = AutoTokenizer.from_pretrained(backbone)
    tokenizer.add_tokens(["lighthousekeeping"])
    tokenizer.save_pretrained(backbone)
    with pytest.raises(InputError, match=f"^{ct_data}: was tokenised by") as refused:
        pretrain_cross_thought(ct_data, tmp_path / "b", _pretrain_config(backbone))
    assert "\n" not in str(refused.value)
    resumed_elsewhere = tmp_path / "c"
    pretrain_cross_thought(ct_data, resumed_elsewhere, _pretrain_config(tiny_bert, max_steps=1))
    other_data = tmp_path / "other-data"
    shutil.copytree(ct_data, other_data)
    summary = json.loads((other_data / SUMMARY).read_text())
    summary["sequences"] = 41  # another data set, as far as the run can tell
    (other_data / SUMMARY).write_text(json.dumps(summary))
    with pytest.raises(InputError, match="other settings.*data.sequences: 100 -> 41"):
        pretrain_cross_thought(other_data, resumed_elsewhere, _pretrain_config(tiny_bert))


def test_answer_selection_loss_is_eq10():
    model = tiny_model()
    question, candidates = torch.randn(2, 32), torch.randn(4, 2, 32)
    loss = answer_selection_loss(model, question, candidates, [1, 3])
    # Eq. 7 over the M = 5 sequences [question; candidates], as the pre-training runs it
    _, alpha = model.cross_sequence(torch.cat([question[None], candidates])[None])
    weights = alpha[0, :, :, 0].mean(dim=(0, 1))  # alpha[0], mean over heads: (5,)
    torch.testing.assert_close(loss, -(weights[2].log() + weights[4].log()) / 2)


COLOURS = ["red", "green", "blue", "yellow", "purple", "orange"]


def _same_shape_as2(questions: int, seed: int, prefix: str = "q") -> list[As2Record]:
    """Candidates differ only in their colour word, so only a trained model can match."""
    rng = np.random.default_rng(seed)
    records = []
    for q in range(questions):
        colours = rng.permutation(COLOURS)[:4]
        for k, colour in enumerate(colours):
            records.append(
                As2Record(
                    f"{prefix}{q}",
                    f"which box is {colours[0]}?",
                    f"the box is {colour}.",
                    int(k == 0),
                )
            )
    return records


def test_answer_selection_fine_tuning_learns_and_saves_a_ranker(tmp_path):
    model = tiny_model()
    # Dev: 16 other questions, each the colour of a training question among other
    # distractors; chance MAP 0.52 (one positive among 4). Best dev MAP over 150 steps:
    # 0.68-0.88 for seeds 0-5 and 42 (0.81 with seed 42).
    train, dev = _same_shape_as2(16, seed=0), _same_shape_as2(16, seed=1, prefix="dev")
    config = CrossThoughtFineTuneConfig(
        learning_rate=3e-3, max_steps=150, batch_size=8, negatives=3, eval_every=50, seed=42
    )
    best = finetune_answer_selection(model, train, dev, tmp_path, config).best
    assert best["step"] > 0  # better than before fine-tuning
    assert best["metrics"]["map"] > 0.65
    ranker = ctxsent.load(tmp_path / "model")
    assert isinstance(ranker, CrossThoughtRanker)
    scores = ranker.predict(dev)  # the saved model is the best one
    metrics = as2_metrics([r.question_id for r in dev], [r.label for r in dev], scores)
    assert metrics["map"] == pytest.approx(best["metrics"]["map"])


def _colour_pairs(count: int, seed: int) -> Pairs:
    rng = np.random.default_rng(seed)
    labels = rng.integers(2, size=count)
    first = ["the sky is " + ("red" if y else "blue") for y in labels]
    second = ["a box of " + str(rng.choice(["stones", "ships", "lamps"])) for _ in labels]
    return Pairs(first, second, labels)


def test_pair_classifier_uses_flattened_cross_sequence_outputs_and_learns(tmp_path):
    model = tiny_model(num_special=3)
    classifier = PairClassifier(model, classes=2)
    assert classifier.classifier.in_features == 2 * 3 * 32  # C-bar is 2N x d
    config = CrossThoughtFineTuneConfig(
        learning_rate=3e-3, max_steps=40, batch_size=16, eval_every=20
    )
    _, test = finetune_pair_classifier(
        model,
        _colour_pairs(200, 0),
        _colour_pairs(40, 1),
        _colour_pairs(60, 2),
        2,
        tmp_path,
        config,
    )
    assert test["acc"] > 90 and "f1" in test


def test_split_off_dev_is_deterministic_and_disjoint():
    pairs = _colour_pairs(50, 0)
    train, dev = split_off_dev(pairs, 0.2, seed=3)
    again, _ = split_off_dev(pairs, 0.2, seed=3)
    assert (len(train), len(dev)) == (40, 10) and train.first == again.first


@pytest.mark.integration
def test_minilm_initialised_cross_thought_encodes():
    from ctxsent.models.cross_thought import CrossThoughtConfig

    model = CrossThoughtModel.build(CrossThoughtConfig(num_special=2)).eval()
    vectors = model.encode(["The lighthouse is on the island.", "Paris is in France."])
    assert vectors.shape == (2, 2 * 384) and np.isfinite(vectors).all()
    cls = model.bert.embeddings.word_embeddings.weight[model.tokenizer.cls_token_id]
    torch.testing.assert_close(model.special.data[0], cls)
    # distinct starts, but only just: MiniLM's top-layer state at a special position hardly
    # depends on its input vector (max gap ~2e-5 here, against ~0.9 between two sentences)
    halves = vectors.reshape(2, 2, 384)
    assert (np.abs(halves[:, 0] - halves[:, 1]).max(axis=-1) > 1e-6).all()


def test_pretraining_ranks_squad_paragraphs_and_keeps_the_best_model(
    tiny_bert, ct_data, tmp_path, monkeypatch
):
    from ctxsent.training import cross_thought_train

    squad = tmp_path / "squad.json"
    paragraphs = [
        {
            "context": f"the harbour of town {i} has a stone tower .",
            "qas": [{"question": f"town {i}"}],
        }
        for i in range(3)
    ]
    squad.write_text(json.dumps({"data": [{"title": "t", "paragraphs": paragraphs}]}))
    # 3 paragraphs put every gold one in the top 20: the script says which step is best
    made = script_evaluations(monkeypatch, cross_thought_train, [40.0, 90.0, 60.0], "town 1")
    config = _pretrain_config(tiny_bert, max_steps=3, eval=f"squad:{squad}", eval_every=1)
    summary = pretrain_cross_thought(ct_data, tmp_path / "run", config)
    best = json.loads((tmp_path / "run" / "run.json").read_text())["best"]
    (evaluated,) = made
    assert [metrics["recall@20"] for metrics, _ in evaluated.seen] == [40.0, 90.0, 60.0]
    assert summary["best"]["step"] == best["step"] == 2 and best["dev"]["recall@20"] == 90.0
    assert {"recall@1", "own_article_recall@1"} <= set(best["dev"])  # the real ranking's
    saved = CrossThoughtModel.from_pretrained(tmp_path / "run" / "model")
    assert saved.config.cross_sequence
    np.testing.assert_allclose(saved.encode(["town 1"]), evaluated.seen[1][1], atol=1e-6)
    assert not np.allclose(saved.encode(["town 1"]), evaluated.seen[2][1], atol=1e-6)
