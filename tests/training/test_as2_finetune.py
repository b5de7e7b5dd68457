import json

import numpy as np
import pytest
import torch
from huggingface_hub import ModelCard

import ctxsent
from ctxsent.errors import InputError
from ctxsent.models.cross_encoder import CrossEncoderRanker
from ctxsent.training.as2_finetune import (
    As2RankerSpec,
    As2TrainConfig,
    finetune_as2,
    sample_negatives,
)
from ctxsent.training.engine import triangular
from ctxsent.training.sampling import LengthGroupedBatches
from synthetic import synthetic_as2


def test_triangular_schedule_ramps_up_then_decays_to_zero():
    factors = [triangular(step, warmup=10, total=100) for step in range(101)]
    assert factors[0] == pytest.approx(0.1) and factors[9] == pytest.approx(1.0)
    assert all(a >= b for a, b in zip(factors[9:], factors[10:], strict=False))
    assert factors[100] == 0.0


def test_sample_negatives_keeps_every_positive():
    records = synthetic_as2(20, seed=0)
    kept = sample_negatives(records, max_negatives=1, seed=0)
    assert sum(r.label for r in kept) == sum(r.label for r in records) == 20
    assert len(kept) == 40
    assert sample_negatives(records, None, 0) == records


def test_hard_negatives_are_the_highest_scored_ones():
    records = synthetic_as2(3, seed=0)
    scores = [float(i % 5) for i in range(len(records))]
    kept = sample_negatives(records, max_negatives=1, seed=0, scores=scores)
    for question in {r.question_id for r in records}:
        rows = [i for i, r in enumerate(records) if r.question_id == question and not r.label]
        hardest = max(rows, key=lambda i: (scores[i], -i))
        assert [r for r in kept if r.question_id == question and not r.label] == [records[hardest]]


def test_length_grouped_batches_cover_every_index_once_and_depend_on_epoch():
    lengths = list(np.random.default_rng(0).integers(1, 100, size=103))
    sampler = LengthGroupedBatches(lengths, batch_size=8, seed=3, group=4)
    first = list(sampler)
    assert sorted(i for batch in first for i in batch) == list(range(103))
    assert len(first) == len(sampler) == 13
    assert list(sampler) == first  # same epoch, same batches
    sampler.set_epoch(1)
    assert list(sampler) != first
    spread = np.mean([np.ptp([lengths[i] for i in b]) for b in first])
    assert spread < 0.5 * np.ptp(lengths)  # similar lengths share a batch


def test_finetune_learns_saves_best_and_resumes(tiny_bert, tmp_path):
    from ctxsent.training.as2_finetune import As2RankerSpec

    train, dev = synthetic_as2(96, seed=1), synthetic_as2(24, seed=2)
    spec = As2RankerSpec(init=str(tiny_bert), max_length=32)  # built after seeding
    config = As2TrainConfig(
        learning_rate=3e-3, batch_size=16, epochs=3, eval_every=8, warmup_ratio=0.0, seed=0
    )
    config.keep_checkpoints = True
    best = finetune_as2(spec, train, dev, tmp_path / "run", config)["best"]
    assert best["dev"]["map"] > 0.8  # chance is ~0.52
    saved = ctxsent.load(tmp_path / "run" / "model")
    scores = saved.predict(dev)
    from ctxsent.evaluation.as2_metrics import as2_metrics

    metrics = as2_metrics([r.question_id for r in dev], [r.label for r in dev], scores)
    assert metrics["map"] == pytest.approx(best["dev"]["map"], abs=1e-6)
    assert (tmp_path / "run" / "checkpoints" / "last.ckpt").is_file()

    # Asking for more epochs resumes from last.ckpt instead of starting again.
    config.epochs = 4
    again = finetune_as2(spec, train, dev, tmp_path / "run", config)
    assert again["progress"]["resumed"] and again["best"]["dev"]["map"] >= best["dev"]["map"]
    summary = json.loads((tmp_path / "run" / "run.json").read_text())
    assert summary == again and summary["settings"]["config"]["epochs"] == 4


def test_head_lr_scale_applies_to_the_scoring_heads_only(tiny_bert, tmp_path):
    from ctxsent.models.cascade import CascadeRanker
    from ctxsent.objectives.as2 import As2Objective
    from ctxsent.training.as2_finetune import optimizer_settings

    ranker = CascadeRanker.from_backbone(str(tiny_bert), max_length=32)
    config = As2TrainConfig(learning_rate=1e-4, head_lr_scale=10.0, weight_decay=0.01)
    objective = As2Objective(ranker, config)
    optimizer = optimizer_settings(ranker, config).build(objective.named_parameters(), 10)
    optimizer = optimizer["optimizer"]
    heads = {id(p) for n, p in ranker.named_parameters() if n.startswith("heads.")}
    for group in optimizer.param_groups:
        in_heads = {id(p) in heads for p in group["params"]}
        assert len(in_heads) == 1  # a group is all head or all encoder
        assert group["initial_lr"] == pytest.approx(1e-3 if in_heads.pop() else 1e-4)
    grouped = sum(len(group["params"]) for group in optimizer.param_groups)
    assert grouped == len(list(ranker.parameters()))


def test_listwise_loss_is_the_softmax_mass_on_each_questions_positives():
    import torch

    from ctxsent.objectives.as2 import listwise_loss

    logits = torch.tensor([2.0, 0.0, 1.0, 0.5, 3.0, 0.0])
    labels = torch.tensor([1.0, 0.0, 1.0, 0.0, 1.0, 0.0])
    groups = torch.tensor([7, 7, 7, 4, 4, 4])
    first = -torch.log((torch.exp(logits[0]) + torch.exp(logits[2])) / torch.exp(logits[:3]).sum())
    second = -torch.log_softmax(logits[3:], 0)[1]
    expected = (first + second) / 2
    assert listwise_loss(logits, labels, groups).item() == pytest.approx(expected.item())
    with pytest.raises(ValueError, match="question 4 has no correct candidate"):
        listwise_loss(logits, torch.tensor([1.0, 0, 0, 0, 0, 0]), groups)


def test_question_batches_keep_questions_whole_and_depend_on_epoch():
    from ctxsent.training.sampling import QuestionBatches

    groups = [[0, 1, 2], [3, 4], [5], [6, 7, 8, 9], [10, 11]]
    sampler = QuestionBatches(groups, questions_per_batch=2, seed=1)
    first = list(sampler)
    assert len(first) == len(sampler) == 3
    assert sorted(i for batch in first for i in batch) == list(range(12))
    for batch in first:  # each batch is a union of whole questions
        assert {tuple(g) for g in groups if set(g) & set(batch)} == {
            tuple(g) for g in groups if set(g) <= set(batch)
        }
    assert list(sampler) == first
    orders = {tuple(map(tuple, sampler)) for epoch in range(5) if not sampler.set_epoch(epoch)}
    assert len(orders) > 1
    with pytest.raises(ValueError):
        QuestionBatches(groups, questions_per_batch=0)


@pytest.mark.parametrize("kind", ["cross-encoder", "cascade"])
def test_listwise_finetune_learns(tiny_bert, tmp_path, kind):
    from ctxsent.training.as2_finetune import As2RankerSpec

    train, dev = synthetic_as2(96, seed=1), synthetic_as2(24, seed=2)
    spec = As2RankerSpec(init=str(tiny_bert), max_length=32, arch=kind)
    config = As2TrainConfig(
        learning_rate=3e-3, batch_size=16, epochs=3, eval_every=8, warmup_ratio=0.0, seed=0,
        loss="listwise",
    )  # fmt: skip
    result = finetune_as2(spec, train, dev, tmp_path / "run", config)
    assert result["best"]["dev"]["map"] > 0.8  # chance is ~0.52
    assert result["settings"]["config"]["loss"] == "listwise"


def test_unknown_loss_is_refused_before_training(tiny_bert, tmp_path):
    from ctxsent.errors import InputError

    ranker = CrossEncoderRanker.from_backbone(str(tiny_bert), max_length=32)
    with pytest.raises(InputError, match="field 'loss'.*pairwise"):
        finetune_as2(
            ranker,
            synthetic_as2(8, 0),
            synthetic_as2(4, 1),
            tmp_path,
            As2TrainConfig(loss="pairwise"),
        )
    assert not (tmp_path / "model").exists()


def test_distributed_ranks_share_whole_questions_and_skip_unshareable_batches(monkeypatch):
    from ctxsent.training import sampling

    groups = [[0, 1], [2, 3, 4], [5], [6, 7], [8]]
    shares = []
    for rank in (0, 1):
        monkeypatch.setattr(sampling, "_rank_and_world", lambda rank=rank: (rank, 2))
        shares.append(list(sampling.QuestionBatches(groups, questions_per_batch=2, seed=0)))
    assert len(shares[0]) == len(shares[1]) == 2  # the last batch has 1 question: skipped
    for first, second in zip(*shares, strict=True):
        assert first and second and not set(first) & set(second)
        for group in groups:  # a question's candidates stay on one rank
            assert (
                set(group) <= set(first)
                or set(group) <= set(second)
                or not (set(group) & (set(first) | set(second)))
            )
    monkeypatch.setattr(sampling, "_rank_and_world", lambda: (0, 3))
    with pytest.raises(ValueError, match="fewer than the 3 processes"):
        list(sampling.QuestionBatches(groups, questions_per_batch=2, seed=0))


def _weights(module) -> dict:
    tensors = [*module.named_parameters(), *module.named_buffers()]
    return {name: tensor.detach().clone() for name, tensor in tensors}


def _assert_identical(first: dict, second: dict) -> None:
    assert first.keys() == second.keys()
    for name in first:
        assert torch.equal(first[name], second[name]), name


def _saved_tanda_start(tiny_bert, folder):
    """A saved pairwise cascade to continue from (TANDA's adapt step)."""
    from ctxsent.models.cascade import CascadeRanker

    CascadeRanker.from_backbone(str(tiny_bert), max_length=32).save_pretrained(folder)
    return str(folder)


@pytest.mark.parametrize(
    ("spec", "loss"),
    [
        (dict(), "pointwise"),  # pairwise cross-encoder
        (dict(contextual=True, layers=1), "pointwise"),  # truncated, contextual
        (dict(arch="cascade", contextual=True), "listwise"),
        (dict(init="saved", contextual=True), "pointwise"),  # TANDA from a saved cascade
        (dict(arch="bi-encoder"), "listwise"),
    ],
    ids=["pairwise", "contextual-layers", "cascade-listwise", "tanda", "bi-encoder"],
)
def test_same_seed_gives_the_same_start_and_the_same_weights(
    tiny_bert, tmp_path, monkeypatch, spec, loss
):
    from ctxsent.training import engine
    from ctxsent.training.as2_finetune import As2RankerSpec

    if spec.get("init") == "saved":
        spec = {**spec, "init": _saved_tanda_start(tiny_bert, tmp_path / "transfer")}
    spec = As2RankerSpec(**{"init": str(tiny_bert), "max_length": 32, **spec})
    starts = []
    module_init = engine.ObjectiveModule.__init__

    def recording_init(self, objective, *args, **kwargs):
        starts.append(_weights(objective.model))  # the weights at step 0
        module_init(self, objective, *args, **kwargs)

    monkeypatch.setattr(engine.ObjectiveModule, "__init__", recording_init)
    train, dev = synthetic_as2(16, seed=1), synthetic_as2(4, seed=2)
    config = As2TrainConfig(
        learning_rate=3e-3, batch_size=8, max_steps=3, eval_every=3, seed=7, precision="fp32",
        accelerator="cpu", loss=loss,
    )  # fmt: skip
    finals = []
    for run in ("first", "second"):
        torch.rand(1000)  # whatever ran before must not matter
        finetune_as2(spec, train, dev, tmp_path / run, config)
        finals.append(_weights(ctxsent.load(tmp_path / run / "model")))
    _assert_identical(*starts)
    _assert_identical(*finals)
    assert any(not torch.equal(starts[0][name], finals[0][name]) for name in starts[0])


# ---- bi-encoders -------------------------------------------------------------------------


def _unit(*angles: float) -> torch.Tensor:
    """2-d unit vectors at these angles (radians), as leaves with gradients."""
    theta = torch.tensor(angles)
    return torch.stack([theta.cos(), theta.sin()], dim=1).requires_grad_()


def test_bi_encoder_listwise_loss_is_a_softmax_over_cosines_over_the_temperature():
    from ctxsent.objectives.as2 import bi_encoder_loss

    # texts: 0 the question, 1 its answer (cos 0.8), 2 and 3 wrong (cos 0.6, -1)
    embeddings = _unit(0.0, np.arccos(0.8), np.arccos(0.6), np.pi)
    config = As2TrainConfig(loss="listwise", temperature=0.1)
    labels = torch.tensor([1.0, 0.0, 0.0])
    loss = bi_encoder_loss(
        embeddings, torch.tensor([0, 0, 0]), torch.tensor([1, 2, 3]), labels,
        torch.tensor([5, 5, 5]), config,
    )  # fmt: skip
    expected = -np.log(np.exp(8.0) / (np.exp(8.0) + np.exp(6.0) + np.exp(-10.0)))
    assert loss.item() == pytest.approx(expected, rel=1e-5)
    loss.backward()
    question = embeddings[0].detach()
    # descending the loss moves the answer towards the question and the others away
    assert (embeddings.grad[1] @ question).item() < 0
    assert (embeddings.grad[2] @ question).item() > 0
    assert (embeddings.grad[3] @ question).item() > 0
    assert (embeddings.grad[0] @ (embeddings[1] - embeddings[2]).detach()).item() < 0


def test_bi_encoder_pointwise_loss_is_cross_entropy_of_cosine_over_the_temperature():
    from ctxsent.objectives.as2 import bi_encoder_loss

    embeddings = _unit(0.0, np.arccos(0.5), np.arccos(-0.5))
    config = As2TrainConfig(loss="pointwise", temperature=0.5)
    loss = bi_encoder_loss(
        embeddings, torch.tensor([0, 0]), torch.tensor([1, 2]), torch.tensor([1.0, 0.0]),
        None, config,
    )  # fmt: skip
    assert loss.item() == pytest.approx(np.log1p(np.exp(-1.0)), rel=1e-5)  # both logits +-1


def test_in_batch_negatives_add_the_other_questions_candidates_once():
    from ctxsent.objectives.as2 import bi_encoder_loss, in_batch_negative_logits, listwise_loss

    # texts: 0 q1, 1 q2, 2 "A" (q1's answer), 3 "B" (a wrong candidate of both), 4 "C" (q2's)
    embeddings = _unit(0.0, 1.0, 0.3, 1.5, 1.2)
    question_rows = torch.tensor([0, 0, 1, 1])
    candidate_rows = torch.tensor([2, 3, 4, 3])
    labels = torch.tensor([1.0, 0.0, 1.0, 0.0])
    groups = torch.tensor([9, 9, 4, 4])  # question numbers: q2 sorts first
    extra = in_batch_negative_logits(embeddings, question_rows, candidate_rows, groups)
    cos = (embeddings @ embeddings.T).detach()
    inf = float("inf")
    # columns: the distinct candidate texts 2, 3, 4; B is each question's own candidate
    expected = torch.tensor([[cos[1, 2], -inf, -inf], [-inf, -inf, cos[0, 4]]])
    assert torch.allclose(extra.detach(), expected)

    config = As2TrainConfig(loss="listwise", temperature=0.2, in_batch_negatives=True)
    loss = bi_encoder_loss(embeddings, question_rows, candidate_rows, labels, groups, config)
    logits = (embeddings[question_rows] * embeddings[candidate_rows]).sum(-1) / 0.2

    def question_loss(own: list[int], answer: int, other: float) -> float:
        scores = torch.cat([logits[own], torch.tensor([other / 0.2])]).detach()
        return (torch.logsumexp(scores, 0) - logits[answer]).item()

    by_hand = (question_loss([0, 1], 0, cos[0, 4]) + question_loss([2, 3], 2, cos[1, 2])) / 2
    assert loss.item() == pytest.approx(by_hand, rel=1e-5)
    assert loss.item() > listwise_loss(logits, labels, groups).item()  # more negatives


def test_bi_encoder_settings_are_checked_before_training(tiny_bert, tmp_path):
    from ctxsent.errors import InputError
    from ctxsent.models.bi_encoder import BiEncoderRanker
    from ctxsent.training.as2_finetune import As2RankerSpec

    with pytest.raises(InputError, match="embeds each candidate alone"):
        As2RankerSpec(str(tiny_bert), contextual=True, arch="bi-encoder")
    with pytest.raises(InputError, match="field 'layers'"):
        As2RankerSpec(str(tiny_bert), layers=1, arch="bi-encoder")
    with pytest.raises(InputError, match="--exits applies to --arch cascade"):
        As2RankerSpec(str(tiny_bert), exits=(1,), arch="bi-encoder")
    with pytest.raises(InputError, match="field 'arch': expected one of"):
        As2RankerSpec(str(tiny_bert), arch="dual-encoder")
    saved = BiEncoderRanker.from_backbone(str(tiny_bert)).save_pretrained(tmp_path / "saved")
    assert As2RankerSpec(str(saved)).kind == "bi-encoder"
    with pytest.raises(InputError, match="is a bi-encoder, not a cross-encoder"):
        As2RankerSpec(str(saved), arch="cross-encoder")
    with pytest.raises(InputError, match="field 'in_batch_negatives'"):
        As2TrainConfig(in_batch_negatives=True)  # pointwise
    with pytest.raises(InputError, match="field 'questions_per_batch'"):
        As2TrainConfig(questions_per_batch=4)  # pointwise
    with pytest.raises(InputError, match="field 'temperature'"):
        As2TrainConfig(temperature=0.0)
    config = As2TrainConfig(loss="listwise", in_batch_negatives=True)
    with pytest.raises(InputError, match="need a bi-encoder.*cross-encoder"):
        finetune_as2(As2RankerSpec(str(tiny_bert)), [], [], tmp_path / "run", config)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "loss", ["listwise", "listwise-in-batch", "pointwise"], ids=lambda loss: loss
)
def test_bi_encoder_finetune_learns_and_saves_the_best(tiny_bert, tmp_path, loss):
    from ctxsent.evaluation.as2_metrics import as2_metrics
    from ctxsent.models.bi_encoder import BiEncoderRanker
    from ctxsent.training.as2_finetune import As2RankerSpec

    train, dev = synthetic_as2(48, seed=1), synthetic_as2(16, seed=2)
    spec = As2RankerSpec(init=str(tiny_bert), max_length=16, arch="bi-encoder")
    listwise = loss != "pointwise"
    config = As2TrainConfig(
        learning_rate=3e-3, batch_size=16, epochs=1, eval_every=6, warmup_ratio=0.0, seed=0,
        loss="listwise" if listwise else "pointwise", questions_per_batch=4 if listwise else None,
        in_batch_negatives=loss == "listwise-in-batch",
    )  # fmt: skip
    best = finetune_as2(spec, train, dev, tmp_path / "run", config)["best"]
    assert best["dev"]["map"] > 0.95  # chance is ~0.52
    saved = ctxsent.load(tmp_path / "run" / "model")
    assert isinstance(saved, BiEncoderRanker)
    ids, labels = [r.question_id for r in dev], [r.label for r in dev]
    assert as2_metrics(ids, labels, saved.predict(dev))["map"] == pytest.approx(
        best["dev"]["map"], abs=1e-6
    )


def test_accumulated_batches_make_one_step_and_evaluations_count_steps(tiny_bert, tmp_path):
    from ctxsent.training import engine

    parts: list[tuple[int, int]] = []  # (optimizer step, batch size) of each forward pass
    step = engine.ObjectiveModule.training_step

    def traced(self, batch, batch_idx):
        parts.append((self.global_step, len(batch[1])))
        return step(self, batch, batch_idx)

    train, dev = synthetic_as2(16, seed=1), synthetic_as2(4, seed=2)
    config = As2TrainConfig(
        learning_rate=3e-3, batch_size=8, accumulate=2, max_steps=3, eval_every=2,
        precision="fp32", accelerator="cpu", seed=0,
    )  # fmt: skip
    spec = As2RankerSpec(init=str(tiny_bert), max_length=32)
    engine.ObjectiveModule.training_step = traced
    try:
        best = finetune_as2(spec, train, dev, tmp_path / "run", config)["best"]
    finally:
        engine.ObjectiveModule.training_step = step
    assert [s for s, _ in parts] == [0, 0, 1, 1, 2, 2] and {n for _, n in parts} == {4}
    assert best["step"] in (2, 3)  # evaluated after steps 2 and 3, not after batches
    with pytest.raises(InputError, match="accumulate"):
        As2TrainConfig(batch_size=4, accumulate=8)


@pytest.mark.parametrize("arch", ["cross-encoder", "cascade"])
def test_fresh_head_redraws_the_saved_head_and_keeps_the_encoder(tiny_bert, tmp_path, arch):
    from ctxsent.models.cascade import CascadeRanker

    kinds = {"cross-encoder": CrossEncoderRanker, "cascade": CascadeRanker}
    saved = kinds[arch].from_backbone(str(tiny_bert), max_length=32)
    with torch.no_grad():
        for name in saved.head_parameter_names():
            saved.get_parameter(name).fill_(0.5)  # a "pre-trained" head, unlike any fresh one
    folder = saved.save_pretrained(tmp_path / "saved")
    spec = As2RankerSpec(str(folder), max_length=32)
    torch.manual_seed(0)
    kept = spec.build().state_dict()
    spec.fresh_head = True
    torch.manual_seed(0)
    fresh = spec.build().state_dict()
    torch.manual_seed(0)
    again = spec.build().state_dict()
    heads = [n for n in kept if n.startswith(saved.head_prefix)]
    assert heads and all(torch.all(kept[n] == 0.5) for n in heads)
    weights = [n for n in heads if n.endswith("weight")]
    assert all(not torch.any(fresh[n] == 0.5) and fresh[n].std() > 0 for n in weights)
    assert all(torch.equal(fresh[n], again[n]) for n in heads)  # drawn from the seeded RNG
    assert all(torch.equal(fresh[n], kept[n]) for n in kept if n not in heads)


def test_fresh_head_is_refused_where_there_is_no_saved_head(tiny_bert, tmp_path):
    from ctxsent.models.bi_encoder import BiEncoderRanker

    with pytest.raises(InputError, match="applies to a saved ranker"):
        As2RankerSpec(str(tiny_bert), fresh_head=True)
    saved = BiEncoderRanker.from_backbone(str(tiny_bert)).save_pretrained(tmp_path / "saved")
    with pytest.raises(InputError, match="no scoring head"):
        As2RankerSpec(str(saved), fresh_head=True)


def test_wise_alpha_saves_the_best_step_mixed_with_the_start(tiny_bert, tmp_path):
    from ctxsent.evaluation.as2_metrics import as2_metrics
    from ctxsent.models.bi_encoder import BiEncoderRanker
    from ctxsent.training.as2_finetune import As2RankerSpec

    train, dev = synthetic_as2(16, seed=1), synthetic_as2(4, seed=2)
    spec = As2RankerSpec(init=str(tiny_bert), max_length=16, arch="bi-encoder")
    config = As2TrainConfig(
        learning_rate=3e-3, batch_size=8, max_steps=3, eval_every=3, seed=7, precision="fp32",
        accelerator="cpu", loss="listwise",
    )  # fmt: skip
    finetune_as2(spec, train, dev, tmp_path / "tuned", config)
    record = finetune_as2(
        spec, train, dev, tmp_path / "mixed", config.with_changes(wise_alpha=0.05)
    )
    start = _weights(BiEncoderRanker.from_backbone(str(tiny_bert), max_length=16))
    tuned = _weights(ctxsent.load(tmp_path / "tuned" / "model"))
    mixed = ctxsent.load(tmp_path / "mixed" / "model")
    changed = [name for name in start if not torch.equal(start[name], tuned[name])]
    assert changed
    for name, tensor in _weights(mixed).items():
        expected = start[name].lerp(tuned[name], 0.05) if name in changed else start[name]
        assert torch.allclose(tensor, expected, atol=1e-6), name
    ids, labels = [r.question_id for r in dev], [r.label for r in dev]
    mixed_map = as2_metrics(ids, labels, mixed.predict(dev))["map"]
    assert record["metrics"]["dev"]["map"] == pytest.approx(mixed_map, abs=1e-6)
    card = ModelCard.load(tmp_path / "mixed" / "model" / "README.md")  # the saved model's dev
    assert {r.metric_type: r.metric_value for r in card.data.eval_results}["map"] == round(
        record["metrics"]["dev"]["map"], 4
    )
    with pytest.raises(InputError, match="wise_alpha"):
        As2TrainConfig(wise_alpha=0.0)


def test_distillation_loss_is_the_kl_from_the_teachers_softmax_per_question():
    from ctxsent.objectives.as2 import distillation_loss

    logits = torch.tensor([2.0, 0.0, 1.0, 0.5, 3.0, 0.0])
    teacher = torch.tensor([0.0, 1.0, 1.0, 2.0, 2.0, -1.0])
    groups = torch.tensor([7, 7, 7, 4, 4, 4])
    expected = 0.0
    for rows in (slice(0, 3), slice(3, 6)):
        p, q = torch.softmax(teacher[rows], 0), torch.softmax(logits[rows], 0)
        expected += (p * (p / q).log()).sum().item() / 2
    assert distillation_loss(logits, teacher, groups).item() == pytest.approx(expected)
    shifted = teacher + torch.tensor([5.0, 5.0, 5.0, -3.0, -3.0, -3.0])  # per question
    assert distillation_loss(teacher, shifted, groups).item() == pytest.approx(0.0, abs=1e-6)


@pytest.mark.parametrize(
    ("arch", "teacher"),
    [("cross-encoder", None), ("cross-encoder", "bm25"), ("bi-encoder", "bm25")],
)
def test_a_teacher_outweighs_wrong_labels(tiny_bert, tmp_path, arch, teacher):
    import dataclasses

    # every training label flipped; BM25 (the teacher) ranks the true answers first
    train = [dataclasses.replace(r, label=1 - r.label) for r in synthetic_as2(96, seed=1)]
    dev = synthetic_as2(24, seed=2)
    spec = As2RankerSpec(init=str(tiny_bert), max_length=32, arch=arch)
    config = As2TrainConfig(
        learning_rate=3e-3, batch_size=16, epochs=3, eval_every=8, warmup_ratio=0.0, seed=0,
        patience=6, loss="listwise", distill_from=teacher, distill_weight=0.8,
        distill_temperature=0.5,
    )  # fmt: skip
    result = finetune_as2(spec, train, dev, tmp_path / "run", config)
    best = result["best"]["dev"]["map"]  # the best of 6+ evaluations
    assert best > 0.9 if teacher else best < 0.5  # the labels alone teach the flipped task
    assert result["settings"]["config"]["distill_from"] == teacher


def test_distillation_settings_are_checked_before_training(tiny_bert, tmp_path):
    with pytest.raises(InputError, match="field 'distill_from'.*listwise"):
        As2TrainConfig(distill_from="bm25")  # pointwise
    for weight in (0.0, 1.5):
        with pytest.raises(InputError, match="field 'distill_weight'"):
            As2TrainConfig(loss="listwise", distill_from="bm25", distill_weight=weight)
    config = As2TrainConfig(loss="listwise", distill_from=str(tmp_path / "no-teacher"))
    with pytest.raises(InputError, match="no-teacher"):
        finetune_as2(As2RankerSpec(str(tiny_bert)), [], [], tmp_path / "run", config)
    assert not (tmp_path / "run" / "model").exists()
