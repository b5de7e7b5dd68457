"""Cross-Thought pre-training (Wang et al., 2020, sections 3.1, 3.2): data and loss; the presets
(section 4.2) are in :mod:`ctxsent.training.cross_thought_presets`.

* Data (3.1): running text cut into sequences of ``sequence_length`` (64) tokens **without
  shuffling**; a sample is ``M`` consecutive sequences (paper: 500), 15% of the word tokens
  masked (:mod:`ctxsent.objectives.masking`, BERT's 80/10/10).
* Model (Eq. 8): a top Transformer layer over ``G_m = [C_0[m]; ...; C_{N-1}[m]; H_m[N:]]``.
* Loss (Eq. 9): ``-log P(a_{m,i} | O_m)`` over the masked words (only masked positions are
  projected onto the vocabulary), averaged over them: Eq. 9's sum over their number, as
  fairseq (the paper's code) normalises.
* MLM baselines (``mlm-1-64``, ``mlm-1-512``): the same encoder and data, no cross-sequence
  Transformers and no top layer; words are predicted from ``H_m[N:]``.

Choices the paper leaves open:

* A sequence never spans two documents: a document's tokens (paragraphs joined) are cut
  into 64-token pieces, a last piece under ``min_tokens`` dropped. A sample's ``M``
  sequences are consecutive in corpus order and may cross documents, as they must at
  M = 500 (a median article is ~70 sequences).
* The word-position offset is drawn per sequence, uniformly, so that the run of positions
  lies in ``[0, word_positions - 1]`` (section 4.2: "64 continuous positions from 0 to 564").
* Samples (not sequences) are shuffled between epochs.
* The MLM head is BERT's (dense, GELU, LayerNorm, decoder tied to the word embeddings); it
  and the top layer start random, also when the encoder starts from MiniLM.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.utils.data import Dataset

from ctxsent.errors import InputError
from ctxsent.models.cross_thought import (
    AttentionLayer,
    CrossThoughtModel,
    PairClassifier,
    selection_log_probs,
)
from ctxsent.objectives.global_batch import Share, randint, share_of
from ctxsent.objectives.masking import (
    IGNORE,
    MaskedWordHead,
    mask_tokens,
    maskable_positions,
    masked_lm_loss,
)


# ---- data ------------------------------------------------------------------------------------
def paragraph_texts(paragraphs: Sequence[Sequence[str]]) -> list[str]:
    """A document's non-empty paragraphs, each its sentences joined by spaces."""
    return [" ".join(sentences) for sentences in paragraphs if sentences]


def cut_sequences(tokens: list[int], sequence_length: int, min_tokens: int) -> list[list[int]]:
    """A document's tokens cut into ``sequence_length`` pieces; a last piece under
    ``min_tokens`` is dropped (a sequence never spans two documents)."""
    pieces = [tokens[i : i + sequence_length] for i in range(0, len(tokens), sequence_length)]
    return [piece for piece in pieces if len(piece) >= min_tokens]


class ConsecutiveSequences(Dataset):
    """Sample ``i`` is sequences ``[i*M, (i+1)*M)`` (the last may hold fewer) of ``chunks``, a
    data folder's :class:`~ctxsent.objectives.pretrain_data.ArrowChunks`."""

    def __init__(self, chunks, sequences_per_sample: int) -> None:
        if sequences_per_sample < 1:
            raise InputError("sequences_per_sample must be positive", field="sequences_per_sample")
        self.chunks = chunks
        self.per_sample = sequences_per_sample

    def __len__(self) -> int:
        return -(-len(self.chunks) // self.per_sample)

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        start = index * self.per_sample
        return self.chunks.rows(start, min(start + self.per_sample, len(self.chunks)))


@dataclass
class CrossThoughtCollator:
    """Stacks samples into ``(B, M, L)`` tensors, masks 15% of words, draws position offsets;
    ``__call__`` draws from its own generator, training from one seeded by the step
    (:meth:`stack` in the loader, :meth:`mask` in the step), so a resumed run draws as an
    uninterrupted one."""

    mask_id: int
    vocab_size: int
    special_ids: list[int]
    word_positions: int = 565
    mask_probability: float = 0.15
    seed: int = 0

    def __post_init__(self) -> None:
        self.generator = torch.Generator().manual_seed(self.seed)

    def __call__(self, samples: Sequence[tuple[np.ndarray, np.ndarray]]) -> dict[str, torch.Tensor]:
        return self.mask(self.stack(samples), self.generator)

    def stack(self, samples: Sequence[tuple[np.ndarray, np.ndarray]]) -> dict[str, torch.Tensor]:
        """Unmasked ``input_ids``, ``attention_mask`` and ``sequence_mask``."""
        per_sample = max(len(lengths) for _, lengths in samples)
        length = int(max(lengths.max() for _, lengths in samples))
        if length > self.word_positions:
            raise InputError(
                f"sequences of {length} tokens exceed {self.word_positions} word positions"
            )
        batch = len(samples)
        input_ids = torch.zeros(batch, per_sample, length, dtype=torch.long)
        attention = torch.zeros(batch, per_sample, length, dtype=torch.long)
        sequence_mask = torch.zeros(batch, per_sample, dtype=torch.bool)
        for b, (ids, lengths) in enumerate(samples):
            input_ids[b, : len(ids)] = torch.from_numpy(ids[:, :length].astype(np.int64))
            positions = torch.arange(length)
            attention[b, : len(ids)] = (positions < torch.from_numpy(lengths)[:, None]).long()
            sequence_mask[b, : len(ids)] = True
        return {"input_ids": input_ids, "attention_mask": attention, "sequence_mask": sequence_mask}

    def mask(
        self, batch: dict[str, torch.Tensor], generator: torch.Generator, share: Share | None = None
    ) -> dict:
        """``batch`` with words masked (``labels``) and ``position_offset`` drawn; ``share``:
        the rows of the step's global batch that ``batch`` is (DDP), whose longest sequence
        bounds the offsets."""
        input_ids, attention = batch["input_ids"], batch["attention_mask"]
        share = share or Share.whole(tuple(input_ids.shape))
        maskable = maskable_positions(input_ids, attention, self.special_ids)
        masked, labels = mask_tokens(
            input_ids,
            maskable,
            self.mask_id,
            self.vocab_size,
            self.mask_probability,
            generator,
            share,
        )
        offsets = randint(
            self.word_positions - share.dims[-1] + 1,
            tuple(input_ids.shape[:2]),
            generator,
            input_ids.device,
            Share(share.start, share.rows, share.total, share.dims[:1]),
        )
        return {**batch, "input_ids": masked, "position_offset": offsets, "labels": labels}


def collator_for(model: CrossThoughtModel, preset, seed: int = 0):
    """The collator of ``model`` for a run whose config (``preset``) has ``mask_probability``."""
    tokenizer = model.tokenizer
    return CrossThoughtCollator(
        mask_id=tokenizer.mask_token_id,
        vocab_size=model.bert.config.vocab_size,
        special_ids=list(tokenizer.all_special_ids),
        word_positions=model.config.word_positions,
        mask_probability=preset.mask_probability,
        seed=seed,
    )


# ---- model head and loss ----------------------------------------------------------------------
class CrossThoughtObjective(nn.Module):
    """Wraps a :class:`CrossThoughtModel` with the top layer (Eq. 8) and the MLM loss (Eq. 9).

    ``objective(batch, generator)`` masks a stacked batch with ``collator`` (drawing for the
    step's global batch: DDP ranks mask as one process would) and returns ``{"loss": Eq. 9,
    "tokens": real tokens in the batch}``; :meth:`masked_word_loss` takes a masked batch.
    """

    def __init__(self, model: CrossThoughtModel, collator: CrossThoughtCollator | None = None):
        super().__init__()
        self.model, self.collator = model, collator
        bert = model.bert.config
        self.top = (
            AttentionLayer(model.width, model.heads, bert.intermediate_size, model.config.dropout)
            if model.config.cross_sequence
            else None
        )
        self.head = MaskedWordHead(model.bert.embeddings.word_embeddings, bert.layer_norm_eps)

    def forward(self, batch: dict[str, torch.Tensor], generator: torch.Generator) -> dict:
        share = share_of(batch["input_ids"].shape, batch["input_ids"].device)
        loss = self.masked_word_loss(self.collator.mask(batch, generator, share))
        return {"loss": loss, "tokens": batch["attention_mask"].sum().float()}

    def step_counts(self, batch: dict[str, torch.Tensor], generator: torch.Generator) -> dict:
        """The masked words (``mlm``) of ``batch`` with ``generator``'s draws."""
        share = share_of(batch["input_ids"].shape, batch["input_ids"].device)
        return {"mlm": int((self.collator.mask(batch, generator, share)["labels"] != IGNORE).sum())}

    def masked_word_loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Eq. 1-9 on a masked batch; returns the mean masked-word cross-entropy."""
        ids, attention = batch["input_ids"], batch["attention_mask"]
        batch_size, per_sample, length = ids.shape
        real = batch["sequence_mask"].reshape(-1)
        flat_attention = attention.reshape(-1, length)[real]
        hidden = self.model.encode_tokens(
            ids.reshape(-1, length)[real],
            flat_attention,
            batch["position_offset"].reshape(-1)[real],
        )  # Eq. 1, (R, N + l, d)
        n = self.model.config.num_special
        if self.top is not None:
            embeddings = hidden.new_zeros(batch_size * per_sample, n, hidden.shape[-1])
            embeddings[real] = self.model.sentence_embeddings(hidden)  # Eq. 2
            fused, _ = self.model.cross_sequence(
                embeddings.view(batch_size, per_sample, n, -1), batch["sequence_mask"]
            )  # Eq. 3-7
            merged = torch.cat([fused.reshape(-1, n, fused.shape[-1])[real], hidden[:, n:]], 1)
            key_mask = torch.cat([flat_attention.new_ones(len(merged), n), flat_attention], 1)
            hidden, _ = self.top(merged, key_mask.bool())  # Eq. 8
        labels = batch["labels"].reshape(-1, length)[real]
        return masked_lm_loss(hidden[:, n:], labels, self.head)  # Eq. 9


#: Texts per forward chunk when a step embeds a question batch's texts (memory bound; the
#: loss is the same as one padded batch).
EMBED_CHUNK = 32


def answer_selection_loss(
    model: CrossThoughtModel, question: torch.Tensor, candidates: torch.Tensor, positives: list[int]
) -> torch.Tensor:
    """Eq. 10 for one question: mean over its positives of ``-log alpha[0][m]``."""
    log_alpha = selection_log_probs(model, question[None], candidates)[0]
    return -log_alpha[positives].mean()


def _step_rng(rng: np.random.Generator, generator: torch.Generator | None) -> np.random.Generator:
    """The step's draws: from the engine's generator of the step when it hands one (a
    resumed run draws what an uninterrupted one would), else from ``rng``."""
    if generator is None:
        return rng
    seed = torch.randint(2**62, (1,), generator=generator, device=generator.device)
    return np.random.default_rng(int(seed))


class AnswerSelectionObjective(nn.Module):
    """Eq. 10 fine-tuning (section 3.3): each step draws ``batch_size`` of the question
    ``groups`` (their records; each has a positive), each with its positives and up to
    ``negatives`` sampled negatives, from the step's generator (else one seeded by
    ``seed``), and averages
    :func:`answer_selection_loss` over them. Each distinct text is embedded once a step."""

    def __init__(
        self,
        model: CrossThoughtModel,
        groups: Sequence[Sequence],
        batch_size: int,
        negatives: int,
        seed: int,
    ) -> None:
        super().__init__()
        self.model, self.groups = model, groups
        self.batch_size, self.negatives = batch_size, negatives
        self.rng = np.random.default_rng(seed)

    def forward(self, step, generator=None) -> dict[str, torch.Tensor]:
        rng, groups = _step_rng(self.rng, generator), self.groups
        chosen = rng.choice(len(groups), min(self.batch_size, len(groups)), replace=False)
        questions, candidate_lists = [], []
        for index in chosen:
            group = groups[index]
            positives = [r.candidate for r in group if r.label]
            negatives = [r.candidate for r in group if not r.label]
            if len(negatives) > self.negatives:
                picked = rng.choice(len(negatives), self.negatives, replace=False)
                negatives = [negatives[i] for i in picked]
            questions.append(group[0].question)
            candidate_lists.append((positives, negatives))
        texts = list(dict.fromkeys(questions + [c for p, n in candidate_lists for c in p + n]))
        row = {text: i for i, text in enumerate(texts)}
        embeddings = self.model.embed(texts, batch_size=EMBED_CHUNK)
        losses = []
        for question, (positives, negatives) in zip(questions, candidate_lists, strict=True):
            candidates = embeddings[[row[c] for c in positives + negatives]]
            positions = list(range(len(positives)))
            losses.append(
                answer_selection_loss(self.model, embeddings[row[question]], candidates, positions)
            )
        return {"loss": torch.stack(losses).mean()}


class PairClassificationObjective(nn.Module):
    """Eq. 11 fine-tuning: cross-entropy of ``classifier`` on ``batch_size`` of the labelled
    ``pairs`` a step, drawn from the step's generator (else one seeded by ``seed``)."""

    def __init__(self, classifier: PairClassifier, pairs, batch_size: int, seed: int) -> None:
        super().__init__()
        self.classifier, self.pairs, self.batch_size = classifier, pairs, batch_size
        self.labels = torch.as_tensor(pairs.labels, dtype=torch.long)
        self.rng = np.random.default_rng(seed)

    def forward(self, step, generator=None) -> dict[str, torch.Tensor]:
        pairs = self.pairs
        rows = _step_rng(self.rng, generator).choice(
            len(pairs), min(self.batch_size, len(pairs)), replace=False
        )
        logits = self.classifier([pairs.first[i] for i in rows], [pairs.second[i] for i in rows])
        return {"loss": nn.functional.cross_entropy(logits, self.labels[rows])}
