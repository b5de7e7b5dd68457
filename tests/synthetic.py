"""Test fixtures' raw material: tiny random backbones and synthetic AS2 data."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ctxsent.tasks.as2_records import As2Record


def make_tiny_bert(folder: Path, type_vocab_size: int = 2, layers: int = 2, seed: int = 0) -> Path:
    """Save a random BERT (hidden 32, 2 layers) with MiniLM's WordPiece tokenizer.

    The weights depend on ``seed`` only (the global RNG is left untouched), so a test sees
    the same backbone whichever tests ran before it.
    """
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from ctxsent.models.backbones import resolve_backbone

    config = BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=256,
        type_vocab_size=type_vocab_size,
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        BertModel(config).save_pretrained(folder)
    AutoTokenizer.from_pretrained(resolve_backbone("minilm")).save_pretrained(folder)
    return folder


def spread_attention(bert, std: float = 0.3) -> None:
    """Redraw a random BERT's attention value and output weights with a wider ``std``.

    At BERT's init (std 0.02) [CLS] barely reads the input: a random cross-encoder's scores
    for different candidates differ by ~1e-7, as little as batching or another runtime
    changes them, so its rankings are ties. After this they differ by >= ~5e-5.
    """
    import torch

    with torch.no_grad():
        for layer in bert.encoder.layer:
            for linear in (layer.attention.self.value, layer.attention.output.dense):
                torch.nn.init.normal_(linear.weight, std=std)


def synthetic_as2(questions: int, seed: int) -> list[As2Record]:
    """Questions about a colour; only the positive candidate gives a reason ("because")."""
    rng = np.random.default_rng(seed)
    colours = ["red", "green", "blue", "yellow", "purple", "orange"]
    records = []
    for q in range(questions):
        colour = colours[rng.integers(len(colours))]
        others = [c for c in colours if c != colour]
        answer = int(rng.integers(4))
        for k in range(4):
            word = others[rng.integers(len(others))]
            text = f"it is {colour} because of dye." if k == answer else f"the box is {word}."
            records.append(As2Record(f"q{q}", f"which one is {colour}?", text, int(k == answer)))
    return records


def make_records(questions: int = 3, candidates: int = 10) -> list[As2Record]:
    rng = np.random.default_rng(0)
    words = [
        "red",
        "green",
        "blue",
        "tower",
        "light",
        "keeper",
        "island",
        "lamp",
        "stone",
        "sea",
        "ship",
        "wreck",
    ]
    return [
        As2Record(
            f"q{q}",
            f"question {q} about {words[q]}?",
            " ".join(rng.choice(words, size=int(rng.integers(2, 12)))),
            int(c == 0),
            "before " * int(rng.integers(0, 3)),
        )
        for q in range(questions)
        for c in range(candidates)
    ]


def write_corpus(folder: Path, documents) -> Path:
    """A corpus folder in the layout of ``ctxsent corpus build`` holding ``documents``."""
    import json

    from datasets import Dataset

    from ctxsent.corpus.storage import SUMMARY_FILE, corpus_features

    Dataset.from_list([d.to_row() for d in documents], features=corpus_features()).save_to_disk(
        str(folder)
    )
    (folder / SUMMARY_FILE).write_text(json.dumps({"documents": len(documents)}))
    return folder


class ScriptedEvaluator:
    """Wraps an evaluator so that a keep-best test knows which evaluation is the best: runs
    it, reports ``values`` in turn as its primary metric, and records each evaluated
    model's embedding of ``probe`` (in :attr:`seen`, with the metrics reported)."""

    def __init__(self, inner, values, probe: str) -> None:
        self.inner, self.values, self.probe = inner, list(values), probe
        self.primary_metric = inner.primary_metric
        self.seen: list[tuple[dict, np.ndarray]] = []

    def __call__(self, model) -> dict:
        metrics = {**self.inner(model), self.primary_metric: self.values[len(self.seen)]}
        self.seen.append((metrics, np.asarray(model.encode([self.probe]))))
        return metrics


def script_evaluations(monkeypatch, module, values, probe: str) -> list[ScriptedEvaluator]:
    """Make ``module.evaluator_from_spec`` return :class:`ScriptedEvaluator` s around the
    evaluators it built; returns the list they are appended to."""
    made: list[ScriptedEvaluator] = []
    real = module.evaluator_from_spec

    def scripted(spec, *args, **kwargs):
        made.append(ScriptedEvaluator(real(spec, *args, **kwargs), values, probe))
        return made[-1]

    monkeypatch.setattr(module, "evaluator_from_spec", scripted)
    return made


def run_steps(steps):
    """Drain a ``predict_steps`` generator: the cost each step yielded, and the scores it
    returned."""
    costs = []
    while True:
        try:
            costs.append(next(steps))
        except StopIteration as stop:
            return costs, stop.value
