"""Why a mean-max sentence vector scores what it does on cosine STS.

For each ``--model`` (any spec of ``ctxsent eval senteval``; ``untrained:FOLDER`` is the
ctxsent encoder in FOLDER with every layer but its word embeddings re-initialised, seed 0)
it prints JSON: per STS task, the ``mean`` (unweighted over subsets, SentEval's) and
``wmean`` Pearson/Spearman of cosine similarity on

* ``whole``: the sentence vector as the encoder returns it;
* ``mean-half`` / ``max-half``: its two halves (only for ``mean-max`` encoders), to test
  whether one half dominates the cosine;
* ``standardised``: every dimension z-scored over the task's sentences;
* ``top-component-removed``: centred, minus its first principal component;
* ``length-regressed-out``: minus its least-squares fit on (1, words, log words);

(the last three see the test sentences, without labels: diagnostics, not protocols), and
the geometry: each half's share of the squared norm, the mean cosine of random sentence
pairs, the cosine between a sentence's mean and max halves (near 1 when its word states
barely differ), and the correlation of the first principal component with length.

    OMP_NUM_THREADS=1 python benchmarks/aae_sts_diagnosis.py --model glove-bow \
        --model runs/aae/model --model untrained:runs/aae/model
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch

from ctxsent.evaluation.sts import cosine_similarity, evaluate_sts
from ctxsent.resolver import load_encoder
from ctxsent.tasks.senteval import get_task, load_task


def untrained(folder: str):
    """The encoder in ``folder`` with all layers but the (frozen) word vectors re-initialised."""
    encoder = load_encoder(folder)
    torch.manual_seed(0)
    for module in encoder.modules():
        if module is not encoder.embedding and hasattr(module, "reset_parameters"):
            module.reset_parameters()
    return encoder


def standardised(vectors: np.ndarray) -> np.ndarray:
    return (vectors - vectors.mean(axis=0)) / (vectors.std(axis=0) + 1e-8)


def top_component_removed(vectors: np.ndarray) -> np.ndarray:
    centred = vectors - vectors.mean(axis=0)
    top = np.linalg.svd(centred, full_matrices=False)[2][:1]
    return centred - centred @ top.T @ top


def length_regressed_out(vectors: np.ndarray, words: np.ndarray) -> np.ndarray:
    design = np.column_stack([np.ones_like(words), words, np.log(words)])
    return vectors - design @ np.linalg.lstsq(design, vectors, rcond=None)[0]


def halves(encoder, width: int) -> dict[str, slice]:
    if getattr(getattr(encoder, "config", None), "pooling", None) != "mean-max":
        return {}
    return {"mean-half": slice(0, width // 2), "max-half": slice(width // 2, width)}


def evaluate(encoder, task_name: str, data: Path, seed: int) -> dict:
    subsets = load_task(get_task(task_name), data).splits
    texts = sorted({t for pairs in subsets.values() for t in (*pairs.first, *pairs.second)})
    vectors = encoder.encode(texts)
    words = np.array([max(len(text.split()), 1) for text in texts], dtype=np.float64)
    row = {text: i for i, text in enumerate(texts)}
    parts = {"whole": slice(None), **halves(encoder, vectors.shape[1])}
    variants = {name: vectors[:, part] for name, part in parts.items()}
    variants["standardised"] = standardised(vectors)
    variants["top-component-removed"] = top_component_removed(vectors)
    variants["length-regressed-out"] = length_regressed_out(vectors, words)
    scores = {}
    for name, variant in variants.items():
        sts = evaluate_sts(
            {
                subset: (
                    variant[[row[t] for t in pairs.first]],
                    variant[[row[t] for t in pairs.second]],
                    pairs.labels,
                )
                for subset, pairs in subsets.items()
            }
        )
        scores[name] = {agg: getattr(sts, agg).to_dict() for agg in ("mean", "wmean")}
    first, second = np.random.default_rng(seed).integers(len(texts), size=(2, 2000))
    total = (vectors**2).sum(axis=1).mean()
    centred = vectors - vectors.mean(axis=0)
    top = centred @ np.linalg.svd(centred, full_matrices=False)[2][0]
    geometry = {
        "top_component_length_correlation": float(abs(np.corrcoef(top, words)[0, 1])),
        **{
            name: {
                "norm_share": float((vectors[:, part] ** 2).sum(axis=1).mean() / total),
                "random_pair_cosine": float(
                    cosine_similarity(vectors[first, part], vectors[second, part]).mean()
                ),
            }
            for name, part in parts.items()
        },
    }
    if len(parts) == 3:
        mean_half, max_half = vectors[:, parts["mean-half"]], vectors[:, parts["max-half"]]
        geometry["mean_max_half_cosine"] = float(cosine_similarity(mean_half, max_half).mean())
    return {"sentences": len(texts), "scores": scores, "geometry": geometry}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", action="append", required=True)
    parser.add_argument("--tasks", nargs="+", default=["STS12", "STSB"])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    report = {}
    for spec in args.model:
        kind, _, folder = spec.partition(":")
        encoder = untrained(folder) if kind == "untrained" else load_encoder(spec)
        report[spec] = {task: evaluate(encoder, task, args.data, args.seed) for task in args.tasks}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
