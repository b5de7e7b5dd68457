"""Cross-Thought sentence encoder (Wang et al., 2020, section 3.2), without its pre-training head.

* Eq. 1-2: a BERT-style Transformer encodes ``[S; X_m]``, ``S`` being ``N`` learned special
  embeddings; their states ``E_m = H_m[0:N]``, concatenated, are the sentence embedding.
* Eq. 3-7: per special index ``n`` a cross-sequence Transformer runs over the ``M``
  sequences' ``n``-th embeddings ``F_n``; its first layer gives the attention weights
  ``alpha = softmax(Q K^T / sqrt(d_head))`` per head (:meth:`attention_logits`).
* The top layer (Eq. 8) and the masked-word loss (Eq. 9) live in
  :mod:`ctxsent.objectives.cross_thought`, so the encoder is saved and evaluated alone.

Positions (section 4.2): special tokens keep positions ``0..N-1``; words take ``N + o + i``
with the offset ``o`` drawn in pre-training so that word positions stay in
``[0, word_positions - 1]`` = ``[0, 564]``. At inference ``o = 0``: up to 565 tokens.

Choices the paper leaves open:

* No ``[CLS]``/``[SEP]``: the ``N`` special embeddings take their place.
* Initialised from a BERT-style folder (MiniLM by default): special token 0 starts as the
  ``[CLS]`` word embedding, each further one as ``[CLS]`` plus its own N(0, 0.02) draw
  (seeded by ``build``), so the N = 1/3/5 ablation compares ``N`` distinct vectors (on
  MiniLM close ones: a 0.02 draw moves the top-layer special states by ~3e-5, another
  sentence by ~0.9; they separate as the ``N`` cross-sequence heads train). The draw sits in
  the token vector, not the position table, as BERT sums the two before its LayerNorm.
  Special positions copy the backbone's position 0, word position ``p`` its ``p + 1``; rows
  beyond the backbone's table (MiniLM has 512) are N(0, 0.02). ``pretrained=False`` builds
  the same architecture randomly initialised.
* One post-LayerNorm layer per cross-sequence Transformer (``cross_layers``), with the
  backbone's number of heads; ``alpha`` comes from the first layer, which Eq. 5-6 apply to
  ``F_n`` directly. Scaling is ``sqrt(d_head)`` (multi-head).
* ``cross_sequence=False`` gives the MLM-1-64 / MLM-1-512 baselines: no cross-sequence
  Transformers; they rank by cosine of ``E`` as the paper does (section 4.2).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from ctxsent.errors import InputError, ModelFolderError, check_range
from ctxsent.models.backbones import DEFAULT_BACKBONE, resolve_backbone
from ctxsent.models.inference import inference
from ctxsent.models.ranker_base import As2Ranker
from ctxsent.models.transformer_ranker import quiet_transformers
from ctxsent.protocols import encode_inputs
from ctxsent.saving import (
    config_from,
    load_tokenizer,
    load_weights,
    model_folder,
    read_manifest,
    register_model,
    save_weights,
)
from ctxsent.tasks.as2_records import As2Record
from ctxsent.tasks.senteval import Pairs
from ctxsent.text.length_chunks import length_sorted_chunks

WEIGHTS_FILE = "model.safetensors"
BACKBONE_CONFIG_FILE = "config.json"


@dataclass
class CrossThoughtConfig:
    """Architecture of a Cross-Thought encoder; ``backbone`` names the tokenizer and shape."""

    backbone: str = DEFAULT_BACKBONE
    pretrained: bool = True
    num_special: int = 1
    cross_sequence: bool = True
    cross_layers: int = 1
    word_positions: int = 565
    max_length: int = 565
    dropout: float = 0.1

    def __post_init__(self) -> None:
        check_range(self, "num_special cross_layers", 1)
        check_range(self, "max_length", 1, self.word_positions)


class AttentionLayer(nn.Module):
    """A post-LayerNorm Transformer layer whose attention weights are returned (Eq. 5-7).

    Used for the cross-sequence Transformers (over ``M`` sequence embeddings) and for the
    pre-training top layer of Eq. 8 (over ``N + l_m`` positions).
    """

    def __init__(self, width: int, heads: int, ffn: int, dropout: float) -> None:
        super().__init__()
        if width % heads:
            raise InputError(f"width {width} is not divisible by {heads} heads", field="heads")
        self.heads = heads
        self.query = nn.Linear(width, width)
        self.key = nn.Linear(width, width)
        self.value = nn.Linear(width, width)
        self.output = nn.Linear(width, width)
        self.attention_norm = nn.LayerNorm(width, eps=1e-12)
        self.feed_forward = nn.Sequential(
            nn.Linear(width, ffn), nn.GELU(), nn.Linear(ffn, width), nn.Dropout(dropout)
        )
        self.output_norm = nn.LayerNorm(width, eps=1e-12)
        self.dropout = nn.Dropout(dropout)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """``(..., M, width)`` to ``(..., heads, M, width / heads)``."""
        *lead, length, width = x.shape
        return x.view(*lead, length, self.heads, width // self.heads).transpose(-2, -3)

    def logits(self, queries: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """``Q K^T / sqrt(d_head)`` per head (Eq. 5-7 before the softmax): ``(..., h, Mq, Mk)``."""
        q = self.split_heads(self.query(queries))
        k = self.split_heads(self.key(keys))
        return q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])

    def forward(
        self, x: torch.Tensor, key_mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``x``: ``(B, M, width)``; ``key_mask``: ``(B, M)`` True for real items.

        Returns the layer output and ``alpha`` ``(B, heads, M, M)``.
        """
        logits = self.logits(x, x)
        if key_mask is not None:
            logits = logits.masked_fill(~key_mask[:, None, None, :], torch.finfo(logits.dtype).min)
        alpha = logits.softmax(dim=-1)
        mixed = self.dropout(alpha) @ self.split_heads(self.value(x))
        mixed = mixed.transpose(-2, -3).reshape(x.shape)
        hidden = self.attention_norm(x + self.dropout(self.output(mixed)))
        return self.output_norm(hidden + self.feed_forward(hidden)), alpha


class CrossSequenceTransformer(nn.Module):
    """Eq. 4: ``C_n = Cross-Transformer(F_n)``; ``alpha`` of its first layer is returned."""

    def __init__(self, width: int, heads: int, ffn: int, layers: int, dropout: float) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            AttentionLayer(width, heads, ffn, dropout) for _ in range(layers)
        )

    def forward(
        self, f: torch.Tensor, key_mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        alpha = None
        for layer in self.layers:
            f, weights = layer(f, key_mask)
            alpha = weights if alpha is None else alpha
        return f, alpha


def _bert_config(config: CrossThoughtConfig, overrides: dict | None):
    from transformers import AutoConfig

    quiet_transformers()
    backbone = AutoConfig.from_pretrained(resolve_backbone(config.backbone), **(overrides or {}))
    if backbone.model_type != "bert":
        raise InputError(
            f"backbone {config.backbone!r} is a {backbone.model_type!r}; Cross-Thought needs a "
            "BERT-style encoder (absolute position embeddings)",
            field="backbone",
        )
    return backbone


@register_model("cross-thought")
class CrossThoughtModel(nn.Module):
    """Encoder (Eq. 1-2) plus one cross-sequence Transformer per special token (Eq. 3-7)."""

    kind: str

    def __init__(self, bert: nn.Module, tokenizer, config: CrossThoughtConfig) -> None:
        super().__init__()
        self.bert = bert
        self.tokenizer = tokenizer
        self.config = config
        width = bert.config.hidden_size
        self.special = nn.Parameter(torch.zeros(config.num_special, width))
        heads, ffn = bert.config.num_attention_heads, bert.config.intermediate_size
        self.cross = nn.ModuleList(
            CrossSequenceTransformer(width, heads, ffn, config.cross_layers, config.dropout)
            for _ in range(config.num_special if config.cross_sequence else 0)
        )

    # ---- construction -------------------------------------------------------------------
    @classmethod
    def build(
        cls, config: CrossThoughtConfig, bert_overrides: dict | None = None, seed: int = 0
    ) -> CrossThoughtModel:
        """A new model: backbone weights when ``config.pretrained``, else random init.

        ``bert_overrides`` (e.g. ``num_hidden_layers=2, hidden_size=32``) change the
        backbone's shape and imply random initialisation (tiny test models).
        """
        from transformers import AutoTokenizer, BertModel

        path = resolve_backbone(config.backbone)
        bert_config = _bert_config(config, bert_overrides)
        source_positions = bert_config.max_position_embeddings
        bert_config.max_position_embeddings = config.num_special + config.word_positions
        bert_config.hidden_dropout_prob = bert_config.attention_probs_dropout_prob = config.dropout
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            bert = BertModel(bert_config, add_pooling_layer=False)
            model = cls(bert, AutoTokenizer.from_pretrained(path), config)
            nn.init.normal_(model.special, std=bert_config.initializer_range)
            model.cross.apply(_init_bert_style)
        if config.pretrained and not bert_overrides:
            model._load_backbone_weights(path, source_positions)
        return model

    def _load_backbone_weights(self, path: str, source_positions: int) -> None:
        from transformers import BertModel

        source = BertModel.from_pretrained(path, add_pooling_layer=False).state_dict()
        old_positions = source.pop("embeddings.position_embeddings.weight")
        missing, unexpected = self.bert.load_state_dict(source, strict=False)
        if unexpected or set(missing) - {"embeddings.position_embeddings.weight"}:
            raise ModelFolderError(
                f"backbone weights do not fit (missing {missing}, unexpected {unexpected})",
                path=path,
            )
        n = self.config.num_special
        table = self.bert.embeddings.position_embeddings.weight.data
        table[:n] = old_positions[0]
        copied = min(self.config.word_positions, source_positions - 1)
        table[n : n + copied] = old_positions[1 : 1 + copied]
        cls_id = self.tokenizer.cls_token_id
        if cls_id is not None:
            # the fresh N(0, 0.02) draw of ``build`` becomes each token's own perturbation
            self.special.data[0] = 0.0
            self.special.data += self.bert.embeddings.word_embeddings.weight.data[cls_id]

    # ---- Eq. 1-7 -------------------------------------------------------------------------
    @property
    def width(self) -> int:
        return self.bert.config.hidden_size

    @property
    def heads(self) -> int:
        return self.bert.config.num_attention_heads

    @property
    def embedding_dim(self) -> int:
        return self.config.num_special * self.width

    @property
    def device(self) -> torch.device:
        return self.special.device

    def encode_tokens(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        position_offset: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Eq. 1: ``H = Transformer([S; X])`` for ``(B, l)`` word ids; returns ``(B, N + l, d)``.

        ``position_offset`` ``(B,)`` shifts each sequence's word positions (pre-training).
        """
        batch, length = input_ids.shape
        n = self.config.num_special
        if length > self.config.word_positions:
            raise InputError(
                f"{length} word tokens exceed the {self.config.word_positions} word positions",
                field="input_ids",
            )
        words = self.bert.embeddings.word_embeddings(input_ids)
        specials = self.special.to(words.dtype).expand(batch, n, -1)
        offset = torch.zeros(batch, dtype=torch.long, device=input_ids.device)
        if position_offset is not None:
            offset = position_offset.to(input_ids.device)
        word_positions = n + offset[:, None] + torch.arange(length, device=input_ids.device)
        special_positions = torch.arange(n, device=input_ids.device).expand(batch, n)
        mask = torch.cat([attention_mask.new_ones(batch, n), attention_mask], dim=1)
        return self.bert(
            inputs_embeds=torch.cat([specials, words], dim=1),
            attention_mask=mask,
            position_ids=torch.cat([special_positions, word_positions], dim=1),
            token_type_ids=torch.zeros_like(mask),
        ).last_hidden_state

    def sentence_embeddings(self, hidden: torch.Tensor) -> torch.Tensor:
        """Eq. 2: ``E = H[0:N]``, ``(..., N, d)``."""
        return hidden[..., : self.config.num_special, :]

    def cross_sequence(
        self, embeddings: torch.Tensor, sequence_mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Eq. 3-7 over ``E`` ``(B, M, N, d)``: returns ``C`` ``(B, M, N, d)`` and
        ``alpha`` ``(B, N, heads, M, M)`` (first layer of each cross-sequence Transformer)."""
        self._require_cross()
        outputs, alphas = [], []
        for n, transformer in enumerate(self.cross):
            c_n, alpha_n = transformer(embeddings[:, :, n], sequence_mask)
            outputs.append(c_n)
            alphas.append(alpha_n)
        return torch.stack(outputs, dim=2), torch.stack(alphas, dim=1)

    def self_attention_logits(self, embeddings: torch.Tensor) -> torch.Tensor:
        """Each sequence's first-layer attention logit on itself, per head of every
        cross-sequence Transformer: ``(B, N * heads)`` from ``(B, N, d)`` (the ``alpha[0][0]``
        term of Eq. 7's softmax for a question)."""
        keys = self.attention_vectors(embeddings, "key")
        return (self.attention_vectors(embeddings, "query") * keys).sum(-1)

    def attention_vectors(self, embeddings: torch.Tensor, role: str) -> torch.Tensor:
        """Per-head query or key vectors of each cross-sequence Transformer's first layer.

        ``embeddings`` ``(B, N, d)``; returns ``(B, N * heads, d_head)``. Queries are scaled by
        ``1 / sqrt(d_head)``, so a query's and a key's dot product for one head is that
        head's logit of Eq. 7 (used to index keys once and match queries later).
        """
        self._require_cross()
        vectors = []
        for n, transformer in enumerate(self.cross):
            layer = transformer.layers[0]
            projection = layer.query if role == "query" else layer.key
            heads = layer.split_heads(projection(embeddings[:, n])[:, None])[:, :, 0]
            vectors.append(heads / math.sqrt(heads.shape[-1]) if role == "query" else heads)
        return torch.cat(vectors, dim=1)

    def attention_logits(self, queries: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """First-layer attention logits of every head of every cross-sequence Transformer.

        ``queries`` ``(Q, N, d)`` and ``keys`` ``(K, N, d)`` sentence embeddings; returns
        ``(Q, N * heads, K)``, from which :func:`selection_log_probs` computes the
        answer-selection weight of section 3.3 (Eq. 10).
        """
        q = self.attention_vectors(queries, "query")
        k = self.attention_vectors(keys, "key")
        return torch.einsum("qhd,khd->qhk", q, k)

    def _require_cross(self) -> None:
        if not self.config.cross_sequence:
            raise InputError(
                "this model was built without cross-sequence Transformers (an MLM baseline); "
                "it has no attention weights to rank or classify with",
                field="cross_sequence",
            )

    # ---- inference -----------------------------------------------------------------------
    def tokenize(self, texts: list[str]) -> dict[str, torch.Tensor]:
        """Word ids without ``[CLS]``/``[SEP]``, truncated to ``max_length``, padded."""
        return self.tokenizer(
            texts,
            add_special_tokens=False,
            truncation=True,
            max_length=self.config.max_length,
            padding=True,
            return_tensors="pt",
        )

    def embed(self, texts: list[str], batch_size: int | None = None) -> torch.Tensor:
        """``E`` for a batch of texts, ``(B, N, d)``, with gradients (for fine-tuning).

        With ``batch_size``, the texts run in length-sorted chunks of that size: less
        padding, and activation memory grows with the texts' own lengths instead of
        ``len(texts)`` times the longest one. Rows come back in input order.
        """
        if not texts:
            raise InputError("no texts to embed", field="texts")
        if batch_size is None or len(texts) <= batch_size:
            return self._embed_batch(texts)
        chunks = length_sorted_chunks(texts, batch_size)
        parts = [self._embed_batch([texts[i] for i in rows]) for rows in chunks]
        order = torch.tensor([i for rows in chunks for i in rows], device=self.device)
        return torch.cat(parts)[order.argsort()]

    def _embed_batch(self, texts: list[str]) -> torch.Tensor:
        batch = self.tokenize([t if t.strip() else self.tokenizer.unk_token for t in texts])
        batch = {k: v.to(self.device) for k, v in batch.items()}
        return self.sentence_embeddings(
            self.encode_tokens(batch["input_ids"], batch["attention_mask"])
        )

    def encode_special(
        self, texts: list[str], batch_size: int = 64, show_progress: bool = False
    ) -> torch.Tensor:
        """``E`` ``(len(texts), N, d)`` float32 on the CPU, in input order (length-sorted)."""
        out = torch.empty(len(texts), self.config.num_special, self.width)
        with inference(self, self.device, total=len(texts), show_progress=show_progress) as bar:
            for rows in length_sorted_chunks(texts, batch_size):
                out[rows] = self._embed_batch([texts[i] for i in rows]).float().cpu()
                bar.update(len(rows))
        return out

    def encode(
        self,
        texts: Sequence[str],
        batch_size: int = 64,
        show_progress: bool = False,
        **options: Any,
    ) -> np.ndarray:
        """The sentence embedding: the ``N`` special-token states concatenated, ``(n, N*d)``.

        ``texts`` may be MTEB 2's batches, and ``options`` MTEB's keyword arguments, which do
        not change the embeddings (:func:`~ctxsent.protocols.encode_inputs`).
        """
        texts, show_progress = encode_inputs(texts, options, show_progress)
        embeddings = self.encode_special(texts, batch_size, show_progress)
        return embeddings.reshape(len(texts), -1).numpy()

    # ---- saving --------------------------------------------------------------------------
    def save_pretrained(
        self, path: str | Path, kind: str | None = None, overwrite: bool = False
    ) -> Path:
        """Write weights (safetensors), backbone config, tokenizer and manifest atomically.

        ``kind`` defaults to ``cross-thought``; fine-tuned answer selectors are saved as
        ``cross-thought-ranker`` so that :func:`ctxsent.load` returns an AS2 ranker. An
        existing folder is replaced as :func:`~ctxsent.io.check_output` allows.
        """
        with model_folder(path, kind or self.kind, asdict(self.config), overwrite) as staged:
            save_weights(self, staged / WEIGHTS_FILE)
            (staged / BACKBONE_CONFIG_FILE).write_text(self.bert.config.to_json_string())
            self.tokenizer.save_pretrained(staged)
        return Path(path)

    @classmethod
    def from_pretrained(cls, path: str | Path) -> CrossThoughtModel:
        """Load a folder written by :meth:`save_pretrained` (no network, no pickles)."""
        from transformers import BertConfig, BertModel

        path = Path(path)
        manifest = read_manifest(path, cls.kind, CrossThoughtRanker.kind)
        config = config_from(CrossThoughtConfig, manifest, path)
        tokenizer = load_tokenizer(path)
        try:
            bert_config = BertConfig.from_dict(
                json.loads((path / BACKBONE_CONFIG_FILE).read_text(encoding="utf-8"))
            )
        except (OSError, ValueError) as err:
            raise ModelFolderError(f"cannot load the backbone config: {err}", path=path) from None
        model = cls(BertModel(bert_config, add_pooling_layer=False), tokenizer, config)
        load_weights(model, path / WEIGHTS_FILE)
        return model.eval()


def _init_bert_style(module: nn.Module) -> None:
    if isinstance(module, nn.Linear):
        nn.init.normal_(module.weight, std=0.02)
        nn.init.zeros_(module.bias)
    elif isinstance(module, nn.LayerNorm):
        nn.init.ones_(module.weight)
        nn.init.zeros_(module.bias)


#: Temperature of the cosine softmax used to fine-tune MLM baselines (no attention weights).
COSINE_TEMPERATURE = 0.05


def candidate_log_weights(
    logits: torch.Tensor, self_logits: torch.Tensor | None = None
) -> torch.Tensor:
    """Log of Eq. 10's ``alpha[0][m]`` from attention logits: ``(..., K)``.

    ``logits`` ``(..., heads, K)`` are the question's logits against the ``K`` candidates and
    ``self_logits`` ``(..., heads)`` its logit against itself. Per head, Eq. 7's softmax runs
    over ``F_n = [E_0[n]; E_1[n]; ...]``, the question ``X_0`` included, so it covers the
    question and the candidates; the candidates' weights are then averaged over the heads
    (section 3.3) and sum to 1 minus the question's mean weight on itself. Without
    ``self_logits`` the softmax runs over the candidates only: a deviation from the paper,
    kept only to reproduce retrieval numbers measured with it
    (:class:`~ctxsent.evaluation.retrieval.CrossThoughtScorer`).
    """
    if self_logits is not None:
        logits = torch.cat([self_logits[..., None], logits], dim=-1)
    per_head = logits.log_softmax(dim=-1)
    if self_logits is not None:
        per_head = per_head[..., 1:]
    return per_head.logsumexp(dim=-2) - math.log(per_head.shape[-2])


def selection_log_probs(
    model: CrossThoughtModel, queries: torch.Tensor, candidates: torch.Tensor
) -> torch.Tensor:
    """Log answer-selection weights ``(Q, K)`` from embeddings ``(Q, N, d)``, ``(K, N, d)``.

    Section 3.3: ``alpha[0][m]`` of the first layer of every head of every cross-sequence
    Transformer for the sequences ``[question; candidates]``, averaged over heads and special
    tokens (:func:`candidate_log_weights`); minus an entry is Eq. 10. The candidates are
    encoded without the question (cached), and only the question's row of ``alpha`` is
    computed. Models without cross-sequence Transformers (MLM baselines) use a softmax
    over cosine similarities of ``E`` / :data:`COSINE_TEMPERATURE` (cosine ranking,
    section 4.2).
    """
    if not model.config.cross_sequence:
        q = nn.functional.normalize(queries.flatten(1), dim=-1)
        cosine = q @ nn.functional.normalize(candidates.flatten(1), dim=-1).T
        return (cosine / COSINE_TEMPERATURE).log_softmax(dim=-1)
    own = model.self_attention_logits(queries)  # (Q, N * heads)
    return candidate_log_weights(model.attention_logits(queries, candidates), own)


@register_model("cross-thought-ranker")
class CrossThoughtRanker(As2Ranker):
    """AS2 from cached candidate embeddings matched against the question (section 3.3).

    Each distinct candidate is encoded once, independently of any question, into :attr:`cache`
    (emptied when the weights change, so a ranker can be evaluated during fine-tuning); a
    question is scored against its candidates with :func:`selection_log_probs`."""

    kind: str

    def __init__(self, model: CrossThoughtModel) -> None:
        self.model = model
        self.cache: dict[str, torch.Tensor] = {}
        self._cached_weights = -1

    @property
    def sentence_encoder(self) -> CrossThoughtModel:
        """The Cross-Thought encoder it ranks with (:class:`~ctxsent.protocols.WrapsEncoder`)."""
        return self.model

    def cache_candidates(
        self, texts: Sequence[str], batch_size: int = 64, show_progress: bool = False
    ) -> None:
        weights = sum(p._version for p in self.model.parameters())  # in-place updates count
        if weights != self._cached_weights:
            self.cache.clear()
            self._cached_weights = weights
        new = [text for text in dict.fromkeys(texts) if text not in self.cache]
        if new:
            embedded = self.model.encode_special(new, batch_size, show_progress)
            self.cache.update(zip(new, embedded, strict=True))

    def predict(
        self, records: Sequence[As2Record], batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray:
        self.cache_candidates([r.candidate for r in records], batch_size, show_progress)
        rows_by_question: dict[str, list[int]] = {}
        for row, record in enumerate(records):
            rows_by_question.setdefault(record.question_id, []).append(row)
        groups = list(rows_by_question.values())
        question_embeddings = self.model.encode_special(
            [records[rows[0]].question for rows in groups], batch_size
        )
        scores = np.empty(len(records), dtype=np.float32)
        device = self.model.device
        # scores in fp32 on the model's device, also inside a training run's autocast
        with torch.inference_mode(), torch.autocast(device.type, enabled=False):
            for rows, embedding in zip(groups, question_embeddings, strict=True):
                candidates = torch.stack([self.cache[records[i].candidate] for i in rows])
                log_probs = selection_log_probs(
                    self.model, embedding[None].to(device), candidates.to(device)
                )
                scores[rows] = log_probs[0].exp().cpu().numpy()
        return scores

    def encode(
        self,
        texts: Sequence[str],
        batch_size: int = 64,
        show_progress: bool = False,
        **options: Any,
    ) -> np.ndarray:
        """:meth:`CrossThoughtModel.encode` (MTEB's batches and keyword arguments too)."""
        return self.model.encode(texts, batch_size, show_progress, **options)

    def save_pretrained(self, path: str | Path, overwrite: bool = False) -> Path:
        return self.model.save_pretrained(path, self.kind, overwrite)

    @classmethod
    def from_pretrained(cls, path: str | Path) -> CrossThoughtRanker:
        return cls(CrossThoughtModel.from_pretrained(path))


class PairClassifier(nn.Module):
    """Eq. 11: ``softmax(W^c flatten([C_0; ...; C_{N-1}]))`` for a pair ``(X_0, X_1)``."""

    def __init__(self, model: CrossThoughtModel, classes: int) -> None:
        super().__init__()
        self.model = model
        self.classifier = nn.Linear(2 * model.embedding_dim, classes)

    def forward(self, first: list[str], second: list[str]) -> torch.Tensor:
        embeddings = torch.stack([self.model.embed(first), self.model.embed(second)], dim=1)
        if self.model.config.cross_sequence:
            embeddings, _ = self.model.cross_sequence(embeddings)  # (B, 2, N, d): C
        return self.classifier(embeddings.flatten(1))

    def predict(self, pairs: Pairs, batch_size: int = 64) -> np.ndarray:
        """The predicted class of each pair."""
        with inference(self, self.model.device):
            logits = [
                self(pairs.first[i : i + batch_size], pairs.second[i : i + batch_size])
                for i in range(0, len(pairs), batch_size)
            ]
        return torch.cat(logits).argmax(dim=-1).numpy()
