"""Cross-Thought pre-training data, presets and the masked-word loss (Eq. 8-9)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from cross_thought_fixtures import TokenChunks, chunk_documents, synthetic_documents, tiny_model

from ctxsent.errors import InputError
from ctxsent.objectives.cross_thought import (
    ConsecutiveSequences,
    CrossThoughtObjective,
    collator_for,
)
from ctxsent.objectives.masking import IGNORE
from ctxsent.presets import get_preset, presets


def test_presets_follow_the_paper_and_have_cpu_variants():
    names = [
        "cross-thought-1-64",
        "cross-thought-3-64",
        "cross-thought-5-64",
        "cross-thought-1-512",
        "mlm-1-64",
        "mlm-1-512",
    ]
    registered = {p.name for p in presets("cross-thought")}
    assert registered == set(names) | {f"{n}-cpu" for n in names}
    paper = get_preset("cross-thought-5-64").config
    assert (paper.num_special, paper.sequence_length, paper.sequences_per_sample) == (5, 64, 500)
    assert paper.tokens_per_step == 128 * 500 * 64  # "4 million tokens"
    assert (paper.learning_rate, paper.warmup_steps, paper.max_steps) == (5e-4, 10_000, 125_000)
    assert not get_preset("mlm-1-512").config.cross_sequence
    assert get_preset("mlm-1-64-cpu").config.sequences_per_sample < 500
    with pytest.raises(InputError, match="unknown preset"):
        get_preset("cross-thought-2-64", "cross-thought")


def test_chunks_keep_order_stay_inside_documents_and_skip_excluded_titles():
    model = tiny_model()
    documents = synthetic_documents(count=3)
    chunks = chunk_documents(documents, model.tokenizer, 16, exclude_titles=["town 1"])
    per_document = []
    for document in (documents[0], documents[2]):
        text = [" ".join(s) for s in document.paragraphs]
        ids = [t for p in model.tokenizer(text, add_special_tokens=False)["input_ids"] for t in p]
        per_document.append([ids[i : i + 16] for i in range(0, len(ids), 16)])
    expected = [piece for pieces in per_document for piece in pieces if len(piece) >= 8]
    assert [list(r[:n]) for r, n in zip(chunks.ids, chunks.lengths, strict=True)] == expected
    assert chunks.lengths.max() <= 16
    assert len(chunk_documents(documents, model.tokenizer, 16, max_chunks=5)) == 5


def test_samples_are_consecutive_sequences_and_the_collator_masks_words_only():
    ids = np.arange(1000, 1000 + 10 * 8, dtype=np.int32).reshape(10, 8)
    lengths = np.array([8] * 9 + [5], dtype=np.int32)
    samples = ConsecutiveSequences(TokenChunks(ids, lengths, 0), 4)
    assert len(samples) == 3
    np.testing.assert_array_equal(samples[1][0], ids[4:8])
    assert len(samples[2][0]) == 2  # the last sample is short
    model = tiny_model()
    collate = collator_for(model, get_preset("cross-thought-1-64-cpu").config, seed=1)
    batch = collate([samples[i] for i in range(3)] * 20)
    assert batch["input_ids"].shape == (60, 4, 8)
    assert batch["sequence_mask"][2].tolist() == [True, True, False, False]
    picked = batch["labels"] != IGNORE
    assert not picked[~batch["attention_mask"].bool()].any()  # padding is never a target
    assert 0.10 < picked.sum() / batch["attention_mask"].sum() < 0.20
    offsets = batch["position_offset"]
    assert offsets.min() >= 0 and offsets.max() <= model.config.word_positions - 8
    assert offsets.max() > 100  # a random run of positions, not always the first ones


def _batch_with_second_sequence(model, second: str):
    tokens = model.tokenizer(
        ["the keeper lit the lamp at night", second],
        add_special_tokens=False,
        padding=True,
        return_tensors="pt",
    )
    labels = torch.full_like(tokens["input_ids"], IGNORE)
    labels[0, 2] = tokens["input_ids"][0, 2]
    masked = tokens["input_ids"].clone()
    masked[0, 2] = model.tokenizer.mask_token_id
    return {
        "input_ids": masked[None],
        "attention_mask": tokens["attention_mask"][None],
        "sequence_mask": torch.ones(1, 2, dtype=torch.bool),
        "position_offset": torch.zeros(1, 2, dtype=torch.long),
        "labels": labels[None],
    }


@pytest.mark.parametrize("cross_sequence", [True, False])
def test_only_cross_thought_reads_the_neighbouring_sequence(cross_sequence):
    model = tiny_model(cross_sequence=cross_sequence)
    for transformer in model.cross:  # BERT's init (std 0.02) barely mixes; make it visible
        for linear in (transformer.layers[0].value, transformer.layers[0].output):
            torch.nn.init.normal_(linear.weight, std=1.0)
    objective = CrossThoughtObjective(model).eval()
    with torch.no_grad():
        one = objective.masked_word_loss(_batch_with_second_sequence(model, "a ship sank"))
        other = objective.masked_word_loss(
            _batch_with_second_sequence(model, "green stones everywhere")
        )
    assert (abs(one - other).item() > 1e-6) is cross_sequence


def test_the_loss_trains_every_part_and_decreases():
    model = tiny_model()
    objective = CrossThoughtObjective(model).train()
    chunks = chunk_documents(synthetic_documents(), model.tokenizer, 16)
    samples = ConsecutiveSequences(chunks, 4)
    collate = collator_for(model, get_preset("cross-thought-3-64-cpu").config, seed=0)
    optimizer = torch.optim.Adam(objective.parameters(), lr=3e-3)
    losses = []
    for step in range(25):
        loss = objective.masked_word_loss(collate([samples[(2 * step) % len(samples)], samples[1]]))
        optimizer.zero_grad()
        loss.backward()
        if step == 0:
            for part in (
                model.special,
                model.cross[1].layers[0].key.weight,
                objective.top.query.weight,
            ):
                assert part.grad is not None and part.grad.abs().sum() > 0
        optimizer.step()
        losses.append(loss.item())
    assert np.mean(losses[-5:]) < np.mean(losses[:5]) - 1.0


def test_step_counts_are_the_masked_words_the_loss_averages_over():
    """Counted over a step of 2 batches whose other batch counts nothing, the loss is twice
    its mean over this batch's masked words; another count breaks that."""
    from ctxsent.objectives.global_batch import begin_accumulated_step, end_accumulated_step

    model = tiny_model()
    collate = collator_for(model, get_preset("cross-thought-3-64-cpu").config)
    samples = ConsecutiveSequences(chunk_documents(synthetic_documents(), model.tokenizer, 16), 4)
    batch = collate.stack([samples[0], samples[1]])
    objective = CrossThoughtObjective(model, collate).eval()
    with torch.no_grad():
        plain = objective(batch, torch.Generator().manual_seed(3))["loss"]
        counts = objective.step_counts(batch, torch.Generator().manual_seed(3))
        begin_accumulated_step(counts, 2, "cpu")
        try:
            counted = objective(batch, torch.Generator().manual_seed(3))["loss"]
        finally:
            end_accumulated_step()
    assert counts["mlm"] > 0
    torch.testing.assert_close(counted, 2 * plain)
