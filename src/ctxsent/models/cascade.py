"""Cascade Transformer: AS2 reranking with early exits that drop candidates.

One transformer encoder with a classifier C_rho(i) after each exit layer rho(i) (Cascade
paper, section 4.3), scoring the masked mean of the token states at its layer with a
3-layer feed-forward network (hidden = model width, tanh, dropout 0.1; section 5.2). The
paper's exits at layers 4, 6, 8, 10, 12 of 12 are scaled to any depth by
:func:`default_exits` (MiniLM-L6: 2, 3, 4, 5, 6).

Training (4.3.1): each mini-batch back-propagates the loss of one uniformly sampled
classifier through all lower layers (:meth:`CascadeRanker.forward` in training mode). The
exit is drawn from the ranker's own generator (seeded from torch's global RNG at build,
kept in its state dict), which dropout's draws cannot shift: every DDP rank samples the
exit a one-process run samples at that step, and a resumed run the one an uninterrupted
run would.

Inference (4.3.2): per question, after classifier i the floor(alpha_i * k) of its k
remaining candidates with the lowest partial scores leave (:mod:`~ctxsent.models.staged`);
survivors continue from their cached partial encodings, many questions packed in one
batch. The ranking keeps survivors by final score, then the dropped candidates by the exit
they left at (later first) and their partial score.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from ctxsent.errors import InputError
from ctxsent.models.backbones import DEFAULT_BACKBONE, depth_options, resolve_backbone
from ctxsent.models.layerwise import embed, run_layers
from ctxsent.models.pooling import masked_mean
from ctxsent.models.precision import keep_fp32
from ctxsent.models.segments import encode_segments, pad_batch
from ctxsent.models.staged import (
    CascadeCost,
    exit_costs,
    finish,
    pieces,
    pruning_steps,
    question_index,
    resolve_alphas,
)
from ctxsent.models.transformer_ranker import (
    RankerConfig,
    TransformerRanker,
    load_folder,
    quiet_transformers,
)
from ctxsent.saving import config_from, load_weights, register_model, save_weights
from ctxsent.tasks.as2_records import As2Record

PAPER_EXIT_FRACTIONS = (4 / 12, 6 / 12, 8 / 12, 10 / 12, 12 / 12)
HEADS_FILE = "cascade_heads.safetensors"
_PACK = 2048  # candidates whose partial encodings are kept in memory at once


def default_exits(depth: int) -> list[int]:
    """The paper's exit layers scaled to ``depth`` (1-based, strictly increasing, last = depth)."""
    return sorted({max(1, round(f * depth)) for f in PAPER_EXIT_FRACTIONS})


@dataclass
class CascadeConfig(RankerConfig):
    exits: list[int] = field(default_factory=list)
    #: Default drop rate(s) used by ``predict``: one per non-final classifier.
    alphas: list[float] = field(default_factory=list)


def exit_classifier(width: int, dropout: float = 0.1) -> nn.Sequential:
    """The partial classifier C_rho(i): 3 dense layers, tanh, dropout (section 5.2)."""
    return nn.Sequential(
        nn.Dropout(dropout),
        nn.Linear(width, width),
        nn.Tanh(),
        nn.Dropout(dropout),
        nn.Linear(width, width),
        nn.Tanh(),
        nn.Dropout(dropout),
        nn.Linear(width, 1),
    )


@register_model("cascade")
class CascadeRanker(TransformerRanker):
    """A transformer encoder with a scoring classifier after each exit layer."""

    def __init__(self, model: nn.Module, tokenizer, config: CascadeConfig) -> None:
        super().__init__(model, tokenizer, config)
        depth = model.config.num_hidden_layers
        config.exits = config.exits or default_exits(depth)
        if (
            config.exits != sorted(set(config.exits))
            or not 1 <= config.exits[0] <= config.exits[-1] <= depth
        ):
            raise InputError(f"exits must increase within 1..{depth}", field="exits")
        config.alphas = config.alphas or [0.0] * (len(config.exits) - 1)
        width = model.config.hidden_size
        self.heads = nn.ModuleList(keep_fp32(exit_classifier(width)) for _ in config.exits)
        self.exit_sampler = torch.Generator().manual_seed(int(torch.randint(2**62, ())))
        self.last_cost: CascadeCost | None = None

    head_prefix = "heads."  # the exit classifiers

    @property
    def trains_all_parameters_each_step(self) -> bool:
        """A step trains one exit: the other classifiers and the layers above it stay unused,
        unless the only exit is after the last layer."""
        return self.config.exits == [self.model.config.num_hidden_layers]

    def get_extra_state(self) -> torch.Tensor:
        """The exit sampler's state, saved with training checkpoints (not with the model)."""
        return self.exit_sampler.get_state()

    def set_extra_state(self, state: torch.Tensor) -> None:
        self.exit_sampler.set_state(state)

    @property
    def num_stages(self) -> int:
        """Number of classifiers; ``alphas`` holds one drop rate per stage but the last."""
        return len(self.heads)

    @property
    def alphas(self) -> list[float]:
        """Default drop rates of ``predict``, one per stage but the last (saved in the config)."""
        return self.config.alphas

    @alphas.setter
    def alphas(self, rates: Sequence[float]) -> None:
        self.config.alphas = resolve_alphas(list(rates), self.num_stages)

    # -- construction and persistence -------------------------------------------------
    @classmethod
    def from_backbone(
        cls,
        backbone: str = DEFAULT_BACKBONE,
        contextual: bool = False,
        max_length: int = 256,
        exits: Sequence[int] = (),
        layers: int | None = None,
    ) -> CascadeRanker:
        """A fresh cascade: pretrained encoder (its first ``layers`` layers), new exit heads at
        ``exits`` (default: :func:`default_exits`). One exit at the last layer is a monolithic
        ranker with the cascade's classifier, so truncated monolithic models and the cascade's
        exits share their read-out."""
        from transformers import AutoModel, AutoTokenizer

        path = resolve_backbone(backbone)
        quiet_transformers()
        model = AutoModel.from_pretrained(
            path, add_pooling_layer=False, **depth_options(path, layers)
        )
        config = CascadeConfig(backbone, contextual, max_length, list(exits))
        return cls(model, AutoTokenizer.from_pretrained(path), config)

    @classmethod
    def from_pretrained(cls, path: str | Path) -> CascadeRanker:
        from transformers import AutoModel

        manifest, model, tokenizer = load_folder(
            path, "cascade", AutoModel, add_pooling_layer=False
        )
        ranker = cls(model, tokenizer, config_from(CascadeConfig, manifest, path))
        load_weights(ranker.heads, Path(path) / HEADS_FILE)
        return ranker

    def save_weights(self, folder: Path) -> None:
        super().save_weights(folder)
        save_weights(self.heads, folder / HEADS_FILE)

    # -- the network, piece by piece ---------------------------------------------------
    def exit_logits(self, index: int, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """C_rho(i) over the masked mean of the token states (section 4.3), in fp32."""
        return self.heads[index](masked_mean(hidden, mask.bool()))[:, 0]

    def forward_exits(self, features: dict[str, torch.Tensor], upto: int | None = None):
        """Logits of classifiers 0..``upto`` (default: all), in one pass of the encoder."""
        upto = len(self.config.exits) - 1 if upto is None else upto
        mask = features["attention_mask"]
        hidden, done, logits = embed(self.model, features), 0, []
        for index, layer in enumerate(self.config.exits[: upto + 1]):
            hidden, done = run_layers(self.model, hidden, mask, done, layer), layer
            logits.append(self.exit_logits(index, hidden, mask))
        return logits

    def forward(self, features: dict[str, torch.Tensor]) -> torch.Tensor:
        """Training: one uniformly sampled classifier (4.3.1); evaluation: the final one."""
        if self.training:
            index = int(torch.randint(len(self.config.exits), (), generator=self.exit_sampler))
            return self.forward_exits(features, index)[index]
        return self.forward_exits(features)[-1]

    # -- cascaded inference ------------------------------------------------------------
    def predict_exits(
        self, records: Sequence[As2Record], batch_size: int = 64, upto: int | None = None
    ) -> np.ndarray:
        """Logits of classifiers 0..``upto`` (default: all) for every record: alpha = 0.

        Returns ``(exits, records)``; each row is the ranking of one exit used as
        a model of its own (paper, Table 2). Only the layers up to exit ``upto`` run.
        """
        upto = self.num_stages - 1 if upto is None else upto
        logits = np.empty((upto + 1, len(records)), dtype=np.float32)
        with self.inference(len(records)):
            for rows, features in self.sorted_batches(records, batch_size):
                for index, exit_logits in enumerate(self.forward_exits(features, upto)):
                    logits[index, rows] = exit_logits.float().cpu().numpy()
        return logits

    def predict(
        self,
        records: Sequence[As2Record],
        batch_size: int = 64,
        show_progress: bool = False,
        alpha: float | Sequence[float] | None = None,
    ) -> np.ndarray:
        """Cascade scores: exit reached + sigmoid(partial logit), higher first: survivors rank above
        the candidates dropped at later exits, each group by its score (module docstring).
        ``last_cost`` holds the call's layer-candidate cost."""
        with self.inference(len(records), show_progress) as progress:
            return finish(self.predict_steps(records, batch_size, alpha, progress=progress))

    def predict_steps(
        self,
        records: Sequence[As2Record],
        batch_size: int = 64,
        alpha: float | Sequence[float] | None = None,
        max_chars: float = math.inf,
        progress=None,
    ) -> Generator[float, None, np.ndarray]:
        """:meth:`predict` in steps, one forward pass each, for a service that interleaves
        requests (:mod:`ctxsent.serving.batching`): yields each pass's cost (its records'
        characters times the share of the encoder's layers it ran) and returns the scores.

        A pass holds at most ``batch_size`` records and ``max_chars`` characters (one record
        at least). Each pass sets up inference (:meth:`inference`) itself, so the steps of
        several calls may interleave in one thread.
        """
        alphas = resolve_alphas(self.config.alphas if alpha is None else alpha, self.num_stages)
        scores = np.empty(len(records), dtype=np.float64)
        per_exit = [0] * len(self.config.exits)
        evaluations = 0
        for pack in _question_packs(records, _PACK):
            pack_scores, pack_exit_counts, pack_evaluations = yield from self._cascade(
                [records[i] for i in pack], alphas, batch_size, max_chars
            )
            scores[pack] = pack_scores
            per_exit = [a + b for a, b in zip(per_exit, pack_exit_counts, strict=True)]
            evaluations += pack_evaluations
            if progress is not None:
                progress.update(len(pack))
        depth = self.model.config.num_hidden_layers
        self.last_cost = CascadeCost(evaluations, depth * len(records), per_exit)
        return scores

    def _cascade(
        self, records: list[As2Record], alphas: list[float], batch_size: int, max_chars: float
    ) -> Generator[float, None, tuple[np.ndarray, list[int], int]]:
        """Run the cascade over whole questions held in memory together, in steps."""
        device, pad = self.device, self.tokenizer.pad_token_id
        chars = [record.characters for record in records]
        exits, depth = self.config.exits, self.model.config.num_hidden_layers
        encoded: list = []
        for rows in pieces(np.arange(len(records)), chars, len(records), max_chars):
            piece = [records[i] for i in rows]
            encoded += encode_segments(self.tokenizer, self.segments(piece), self.config.max_length)
            yield sum(chars[i] for i in rows) / depth  # tokenising costs less than a layer
        states: dict[int, torch.Tensor] = {}  # partial encodings of the survivors

        def score_stage(index: int, active: np.ndarray) -> Generator[float, None, np.ndarray]:
            done = exits[index - 1] if index else 0
            for row in states.keys() - set(active.tolist()):
                del states[row]
            logits = np.empty(len(active))
            order = active[np.argsort([-len(encoded[i][0]) for i in active], kind="stable")]
            for rows in pieces(order, [chars[i] for i in order], batch_size, max_chars):
                with self.inference(len(rows)):
                    batch = pad_batch([encoded[i] for i in rows], pad)
                    batch = {k: v.to(device) for k, v in batch.items()}
                    mask = batch["attention_mask"]
                    if done == 0:
                        hidden = embed(self.model, batch)
                    else:
                        states_in = [states[i] for i in rows]
                        hidden = nn.utils.rnn.pad_sequence(states_in, batch_first=True)
                    hidden = run_layers(self.model, hidden, mask, done, exits[index])
                    logits[np.searchsorted(active, rows)] = (
                        self.exit_logits(index, hidden, mask).float().cpu().numpy()
                    )
                    if index < len(exits) - 1:  # the last stage's states are never read again
                        lengths = mask.sum(1).tolist()
                        for row, length, state in zip(rows, lengths, hidden, strict=True):
                            states[row] = state[:length]
                yield sum(chars[i] for i in rows) * (exits[index] - done) / depth
            return logits

        return (
            yield from pruning_steps(
                question_index([r.question_id for r in records]),
                alphas,
                exit_costs(exits),
                score_stage,
            )
        )


def _question_packs(records: Sequence[As2Record], size: int) -> list[np.ndarray]:
    """Row indices grouped into packs of whole questions with about ``size`` candidates each."""
    by_question: dict[str, list[int]] = {}
    for row, record in enumerate(records):
        by_question.setdefault(record.question_id, []).append(row)
    packs, current = [], []
    for rows in by_question.values():
        if current and len(current) + len(rows) > size:
            packs.append(np.array(current))
            current = []
        current += rows
    if current:
        packs.append(np.array(current))
    return packs
