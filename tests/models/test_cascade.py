import numpy as np
import pytest
import torch

import ctxsent
from ctxsent.errors import InputError
from ctxsent.models.cascade import CascadeRanker, default_exits
from ctxsent.models.segments import encode_segments, pad_batch
from ctxsent.models.staged import resolve_alphas
from ctxsent.tasks.as2_records import As2Record
from synthetic import make_records, run_steps


def full_pass_logits(ranker: CascadeRanker, records: list[As2Record]) -> np.ndarray:
    encoded = encode_segments(ranker.tokenizer, ranker.segments(records), 64)
    with torch.inference_mode():
        ranker.eval()
        return ranker.forward_exits(pad_batch(encoded, 0))[-1].numpy()


def test_default_exits_scale_the_papers_layers():
    assert default_exits(12) == [4, 6, 8, 10, 12]
    assert default_exits(6) == [2, 3, 4, 5, 6]
    assert default_exits(24) == [8, 12, 16, 20, 24]


def test_alpha_zero_equals_one_full_pass(cascade):
    records = make_records()
    scores = cascade.predict(records, batch_size=7, alpha=0.0)
    expected = 4 + 1 / (1 + np.exp(-full_pass_logits(cascade, records).astype(np.float64)))
    np.testing.assert_allclose(scores, expected, rtol=1e-4)
    assert cascade.last_cost.relative == pytest.approx(1.0)


def test_steps_are_passes_bounded_by_characters_with_the_scores_of_predict(cascade):
    records = make_records()
    chars = max(r.characters for r in records) * 2
    steps = cascade.predict_steps(records, batch_size=7, alpha=0.3, max_chars=chars)
    costs, scores = run_steps(steps)
    expected = cascade.predict(records, batch_size=7, alpha=0.3)  # other passes: padding
    np.testing.assert_allclose(scores, expected, atol=1e-6)
    assert len(costs) > len(cascade.config.exits) and max(costs) <= chars
    assert sum(costs) < sum(r.characters for r in records)  # pruned: less than a full pass


def test_pruning_follows_the_paper_per_question_and_reuses_encodings(cascade):
    records = make_records(questions=3, candidates=10)
    scores = cascade.predict(records, batch_size=8, alpha=0.3)
    # 10 -> 7 -> 5 -> 4 -> 3 candidates per question (floor(0.3 k) dropped at each exit)
    assert cascade.last_cost.candidates_per_exit == [30, 21, 15, 12, 9]
    assert cascade.last_cost.relative == pytest.approx((2 * 30 + 21 + 15 + 12 + 9) / (6 * 30))
    survivors = scores >= 4
    assert survivors.sum() == 9
    final = full_pass_logits(cascade, records)
    np.testing.assert_allclose(
        scores[survivors] - 4, 1 / (1 + np.exp(-final[survivors].astype(np.float64))), rtol=1e-4
    )
    for q in range(3):  # every survivor outranks every dropped candidate of its question
        rows = np.arange(q * 10, q * 10 + 10)
        assert scores[rows][survivors[rows]].min() > scores[rows][~survivors[rows]].max()


def test_per_exit_logits_and_final_exit_agree(cascade):
    records = make_records(questions=2)
    logits = cascade.predict_exits(records, batch_size=5)
    assert logits.shape == (5, 20)
    np.testing.assert_allclose(logits[-1], full_pass_logits(cascade, records), rtol=1e-4, atol=1e-5)


def test_training_mode_samples_every_exit(cascade):
    encoded = encode_segments(cascade.tokenizer, cascade.segments(make_records(1, 4)), 64)
    batch = pad_batch(encoded, 0)
    cascade.train()
    torch.manual_seed(0)
    seen = {tuple(cascade(batch).detach().numpy().round(5)) for _ in range(40)}
    assert len(seen) >= 5  # different exits (and dropout) give different logits


def test_save_load_round_trip_keeps_heads_and_alphas(cascade, tmp_path):
    cascade.config.alphas = [0.3, 0.3, 0.2, 0.1]
    cascade.save_pretrained(tmp_path / "ct")
    loaded = ctxsent.load(tmp_path / "ct")
    assert isinstance(loaded, CascadeRanker) and loaded.config.alphas == [0.3, 0.3, 0.2, 0.1]
    records = make_records()
    np.testing.assert_allclose(
        loaded.predict(records), cascade.predict(records), rtol=1e-5, atol=1e-8
    )


def test_bad_alphas_are_rejected():
    assert resolve_alphas(0.4, 5) == [0.4] * 4
    with pytest.raises(InputError, match="field 'alpha'"):
        resolve_alphas([0.1, 0.2], 5)
    with pytest.raises(InputError, match="field 'alpha'"):
        resolve_alphas(1.0, 5)


def test_one_exit_on_truncated_layers_is_a_pooled_monolithic_stage(tiny_bert6):
    """``layers=2, exits=[2]``: a 2-layer ranker with the cascade's read-out, usable as a
    Sequential Ranker stage at cost 2 per candidate."""
    from ctxsent.models.sequential import SequentialRanker

    folder = tiny_bert6
    shallow = CascadeRanker.from_backbone(str(folder), max_length=64, exits=[2], layers=2)
    assert shallow.model.config.num_hidden_layers == 2 and shallow.alphas == []
    assert shallow.trains_all_parameters_each_step  # DDP need not look for unused parameters
    assert not CascadeRanker.from_backbone(str(folder), exits=[2]).trains_all_parameters_each_step
    records = make_records(questions=3, candidates=10)
    expected = 1 / (1 + np.exp(-full_pass_logits(shallow, records).astype(np.float64)))
    np.testing.assert_allclose(shallow.predict(records), expected, rtol=1e-4)
    assert shallow.last_cost.relative == 1.0
    deep = CascadeRanker.from_backbone(str(folder), max_length=64, exits=[4], layers=4)
    chained = SequentialRanker([shallow, deep], alphas=[0.5])
    chained.predict(records)
    assert chained.last_cost.relative == pytest.approx((2 * 30 + 4 * 15) / (4 * 30))
    with pytest.raises(InputError, match="exits must increase"):
        CascadeRanker.from_backbone(str(folder), exits=[2, 4], layers=3)
    with pytest.raises(InputError, match="layers must be in 1..6"):
        CascadeRanker.from_backbone(str(folder), layers=7)


def test_sampled_exits_follow_the_seed_not_the_global_random_stream(tiny_bert6):
    """Training samples its exits from the cascade's own generator (seeded when the cascade is
    built): dropout's draws, as many as a batch has elements and so different on each DDP
    rank, cannot change them, and a checkpoint's state dict carries the generator on."""
    folder = str(tiny_bert6)

    def build(seed: int) -> CascadeRanker:
        torch.manual_seed(seed)
        return CascadeRanker.from_backbone(folder, max_length=64).train()

    def sampled_exits(ranker: CascadeRanker, steps: int, draws_per_step: int) -> list[int]:
        records = make_records(1, 4)
        batch = pad_batch(encode_segments(ranker.tokenizer, ranker.segments(records), 64), 0)
        chosen, forward_exits = [], ranker.forward_exits

        def recording(features, upto=None):
            chosen.append(upto)
            return forward_exits(features, upto)

        ranker.forward_exits = recording
        for _ in range(steps):
            ranker(batch)
            torch.rand(draws_per_step)  # another rank's dropout on batches of another shape
        return chosen

    first, second = build(3), build(3)
    exits = sampled_exits(first, 12, draws_per_step=1)
    assert sampled_exits(second, 12, draws_per_step=777) == exits
    assert len(set(exits)) > 1
    resumed = build(4)
    resumed.load_state_dict(first.state_dict())  # as a resumed run loads its checkpoint
    assert sampled_exits(resumed, 6, 5) == sampled_exits(first, 6, 1)


def test_precision_applies_to_the_cascade_and_int8_is_refused(cascade):
    """The one inference path: bf16 autocast changes the cascade's scores slightly (it ran
    in bf16), fp32 restores them exactly; int8 (cross-encoders only) is refused in one line;
    the model's training mode is restored after scoring."""
    records = make_records(questions=2)
    fp32 = cascade.predict(records, batch_size=8, alpha=0.0)
    cascade.precision = "bf16"
    try:
        bf16 = cascade.predict(records, batch_size=8, alpha=0.0)
        cascade.precision = "int8"
        with pytest.raises(InputError, match="int8 is for cross-encoders"):
            cascade.predict(records, alpha=0.0)
    finally:
        cascade.precision = "fp32"
    assert not np.array_equal(bf16, fp32)
    np.testing.assert_allclose(bf16, fp32, atol=0.05)
    cascade.train()
    np.testing.assert_array_equal(cascade.predict(records, batch_size=8, alpha=0.0), fp32)
    assert cascade.training
    cascade.eval()
