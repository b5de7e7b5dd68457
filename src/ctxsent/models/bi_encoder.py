"""A mean-pooled HF transformer sentence encoder (the sentence-transformers recipe).

all-MiniLM-L6-v2 embeds a sentence as the attention-masked mean of its last hidden
states, then L2-normalises it (Reimers & Gurevych, 2019). :class:`BiEncoder` does the
same with plain ``transformers``, so any HF encoder folder or hub id works, and it
serves both the SentEval-style evaluation and the zero-shot AS2 baseline (question
and candidate embedded independently, ranked by cosine).

Inference follows the toolkit's CPU rules: texts are sorted by length, each batch is
padded to its longest item, and the original order is restored at the end.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm
from transformers import AutoConfig, AutoModel, AutoTokenizer, PreTrainedModel

from ctxsent.models.backbones import DEFAULT_BACKBONE, resolve_backbone
from ctxsent.saving import load_network, load_tokenizer
from ctxsent.text.length_chunks import length_sorted_chunks


class BiEncoder(nn.Module):
    """Transformer + masked mean pooling (+ L2 normalisation in :meth:`encode`)."""

    def __init__(
        self,
        transformer: PreTrainedModel,
        tokenizer,
        *,
        max_length: int = 256,
        bf16: bool = False,
    ) -> None:
        super().__init__()
        self.transformer = transformer
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.bf16 = bf16

    @classmethod
    def from_pretrained(
        cls,
        name_or_path: str = DEFAULT_BACKBONE,
        *,
        max_length: int | None = None,
        bf16: bool = False,
    ) -> BiEncoder:
        """Load a pretrained encoder; ``max_length`` defaults to the folder's sentence-transformers
        ``max_seq_length`` (256 for all-MiniLM-L6-v2), else the tokenizer's limit."""
        path = resolve_backbone(name_or_path)
        # strict: a local folder must hold its tokenizer files, the weights every tensor
        tokenizer = (
            load_tokenizer(path) if Path(path).is_dir() else AutoTokenizer.from_pretrained(path)
        )
        transformer = load_network(AutoModel, path, allow_unexpected=True)
        length = max_length or _default_max_length(path, tokenizer, transformer.config)
        return cls(transformer.eval(), tokenizer, max_length=length, bf16=bf16)

    @classmethod
    def random_init(
        cls, name_or_path: str = DEFAULT_BACKBONE, *, seed: int = 0, **config_overrides
    ) -> BiEncoder:
        """The same architecture and tokenizer with freshly initialised weights.

        With the defaults this is the evaluation's random-encoder control: a MiniLM-shaped
        transformer that was never trained, isolating what pre-training adds over the
        architecture and the tokenizer (cf. Wieting & Kiela, 2019, "No Training Required").
        ``config_overrides`` (e.g. ``num_hidden_layers=2, hidden_size=32``) give tiny test models.
        """
        path = resolve_backbone(name_or_path)
        config = AutoConfig.from_pretrained(path, **config_overrides)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            transformer = AutoModel.from_config(config)
        tokenizer = AutoTokenizer.from_pretrained(path)
        length = _default_max_length(path, tokenizer, config)
        return cls(transformer.eval(), tokenizer, max_length=length)

    @property
    def dim(self) -> int:
        return self.transformer.config.hidden_size

    @property
    def device(self) -> torch.device:
        return next(self.transformer.parameters()).device

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Masked mean of the last hidden states: ``(batch, hidden)``, not normalised."""
        hidden = self.transformer(input_ids=input_ids, attention_mask=attention_mask)
        mask = attention_mask.unsqueeze(-1).to(hidden.last_hidden_state.dtype)
        summed = (hidden.last_hidden_state * mask).sum(dim=1)
        return summed / mask.sum(dim=1).clamp(min=1e-9)

    def encode(
        self,
        texts: list[str],
        batch_size: int = 64,
        normalize: bool = True,
        show_progress: bool = False,
    ) -> np.ndarray:
        """Embed ``texts`` into a ``(len(texts), dim)`` float32 array, in input order."""
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        was_training = self.training
        self.eval()
        try:
            with (
                torch.inference_mode(),
                torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.bf16),
            ):
                chunks = length_sorted_chunks(texts, batch_size)
                for rows in tqdm(chunks, desc="encode", unit="batch", disable=not show_progress):
                    batch = self.tokenizer(
                        [texts[i] for i in rows],
                        padding=True,
                        truncation=True,
                        max_length=self.max_length,
                        return_tensors="pt",
                    ).to(self.device)
                    pooled = self(batch["input_ids"], batch["attention_mask"]).float()
                    if normalize:
                        pooled = nn.functional.normalize(pooled, p=2, dim=1)
                    out[rows] = pooled.cpu().numpy()
        finally:
            self.train(was_training)
        return out


def _default_max_length(path: str, tokenizer, config) -> int:
    st_config = Path(path) / "sentence_bert_config.json"
    if st_config.is_file():
        return int(json.loads(st_config.read_text())["max_seq_length"])
    return min(tokenizer.model_max_length, config.max_position_embeddings)
