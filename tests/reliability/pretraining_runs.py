"""Tiny data folders and runs of every pre-training objective (SSP, ELECTRA + SSP,
Cross-Thought, RNN-CNN, Mean-Max AAE), through the public run functions only.

:mod:`ddp_run` (DDP against one process) and ``test_kill_resume_pretraining``
(``kill -9`` and resume) train them; a run's numbers depend only on its arguments.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

PRETRAIN_KINDS = ["ssp", "electra", "cross-thought", "rnn-cnn", "mean-max-aae"]
TEXT = "the keeper of the old lighthouse saw a ship near the stone island at night"


def write_pretrain_data(tiny_bert: str | Path, root: Path) -> dict[str, str]:
    """``ROOT/KIND``: a data folder per objective, from one corpus of 12 documents of 4
    paragraphs of 4 sentences; ``ROOT/data.json`` maps each kind to its folder."""
    from ctxsent.corpus import Document
    from ctxsent.objectives.pretrain_data import build_cross_thought_data, build_encoder_data
    from ctxsent.objectives.ssp import SspConfig
    from ctxsent.objectives.ssp_data import build_ssp_dataset
    from synthetic import write_corpus

    rng = random.Random(0)
    sentence = lambda: " ".join(rng.choice(TEXT.split()) for _ in range(rng.randint(4, 9))) + "."  # noqa: E731
    documents = [
        Document(str(d), f"Doc {d}", [[sentence() for _ in range(4)] for _ in range(4)])
        for d in range(12)
    ]
    corpus = write_corpus(root / "corpus", documents)
    ssp = SspConfig(block_size=8, max_length=64)
    build_ssp_dataset(corpus, root / "ssp", ssp, str(tiny_bert))
    build_ssp_dataset(corpus, root / "electra", ssp, vocab_size=150)
    build_cross_thought_data(
        corpus, root / "cross-thought", "cross-thought-3-64-cpu", str(tiny_bert)
    )
    build_encoder_data(corpus, root / "rnn-cnn", vocab_size=10, preset="rnn-cnn-small-cpu")
    build_encoder_data(corpus, root / "mean-max-aae", vocab_size=10, preset="mean-max-aae-cpu")
    folders = {kind: str(root / kind) for kind in PRETRAIN_KINDS}
    (root / "data.json").write_text(json.dumps(folders))
    return folders


def pretrain(
    kind: str,
    tiny_bert: str | Path,
    data: str | Path,
    out: str | Path,
    steps: int,
    checkpoint_every: int,
    devices: int = 1,
    dropout: bool = True,
    sequences_per_sample: int | None = None,
    accumulate: int = 1,
) -> dict:
    """Train ``kind`` on its data folder for ``steps`` steps of a global batch of 8 on CPU,
    in fp32, checkpointing every ``checkpoint_every`` steps (kept at the end); returns the
    run's record.

    The model is tiny: a tiny BERT ranker (SSP) or backbone (Cross-Thought), a width-32
    ELECTRA, width-8 encoders over 10 words. ``dropout=False`` sets dropout to 0 where the
    config has it (Cross-Thought, encoders; SSP keeps the ranker's own).
    ``sequences_per_sample`` replaces the Cross-Thought preset's 16 (each a sequence of 64
    tokens, whose masked tokens the MLM head scores over 30k words); ``accumulate`` splits
    each step's batch in that many.
    """
    from dataclasses import replace

    import torch

    from ctxsent.models.cross_encoder import CrossEncoderRanker
    from ctxsent.objectives.electra_sizes import ElectraSize
    from ctxsent.presets import get_preset
    from ctxsent.training import cross_thought_train, encoder_pretrain, ssp_pretrain

    tiny_bert, out = str(tiny_bert), Path(out)
    placement = {"accelerator": "cpu", "devices": devices, "precision": "fp32"}
    placement["accumulate"] = accumulate
    placement["keep_checkpoints"] = True  # the tests compare the final checkpoints
    if kind in ("ssp", "electra"):
        electra = kind == "electra"
        config = ssp_pretrain.SspPretrainConfig(
            objective="dpc", batch_size=8, max_steps=steps, warmup_steps=1,
            checkpoint_every=checkpoint_every, learning_rate=1e-3, max_length=64,
            heldout_examples=4, electra=ElectraSize(32, 2, 2, 64, 16, 0.5) if electra else None,
            **placement,
        )  # fmt: skip
        torch.manual_seed(0)
        ranker = None if electra else CrossEncoderRanker.from_backbone(tiny_bert, True, 64)
        return ssp_pretrain.pretrain_ssp(data, out, config, ranker)
    if kind == "cross-thought":
        config = replace(
            get_preset("cross-thought-3-64-cpu").config, backbone=tiny_bert, max_steps=steps,
            checkpoint_every=checkpoint_every, batch_size=8, **({} if dropout else {"dropout": 0}),
            **({"sequences_per_sample": sequences_per_sample} if sequences_per_sample else {}),
            **placement,
        )  # fmt: skip
        return cross_thought_train.pretrain_cross_thought(data, out, config)
    preset = {"rnn-cnn": "rnn-cnn-small-cpu", "mean-max-aae": "mean-max-aae-cpu"}[kind]
    config = get_preset(preset, "encoder").config
    config = replace(
        config, embedding_dim=8, hidden_size=8, ffn_size=16, heads=2, decoder_dims=(8, 16),
        batch_size=8, max_steps=steps, checkpoint_every=checkpoint_every, word_vectors="none",
        expand_vocabulary=0, max_sentences=None, vocab_size=10,
        **({} if dropout else {"dropout": 0.0}), **placement,
    )  # fmt: skip
    return encoder_pretrain.pretrain_encoder(data, out, config)
