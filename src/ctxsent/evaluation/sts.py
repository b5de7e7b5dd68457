"""Semantic textual similarity by cosine, and SICK-R's supervised relatedness regression.

SentEval's unsupervised STS protocol (Conneau & Kiela, 2018; RNN-CNN Table 2, Mean-Max AAE
Table 1): a pair's score is the cosine of its embeddings, compared with the gold scores by
Pearson's r and Spearman's rho. Papers aggregate a year's subsets differently, so all
three are reported: ``all`` (one correlation over the pooled pairs), ``mean`` (unweighted
mean of the subsets' correlations) and ``wmean`` (weighted by subset size), SentEval's
names; a single-set task (STS Benchmark) has one subset. SICK-R is supervised, as in
SentEval: :func:`fit_relatedness`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch
from scipy.stats import pearsonr, spearmanr
from torch import nn


@dataclass(frozen=True, slots=True)
class Correlation:
    pearson: float
    spearman: float
    n: int

    def to_dict(self) -> dict[str, float]:
        return {"pearson": self.pearson, "spearman": self.spearman, "n": self.n}


@dataclass(frozen=True, slots=True)
class StsResult:
    subsets: dict[str, Correlation]
    all: Correlation
    mean: Correlation
    wmean: Correlation


def cosine_similarity(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine of two ``(n, d)`` arrays; a zero vector has similarity 0 to anything."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    dots = np.einsum("ij,ij->i", a, b)
    return np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)


def correlation(predicted: np.ndarray, gold: np.ndarray) -> Correlation:
    """Pearson and Spearman between predictions and gold scores (NaN if either is constant)."""
    predicted = np.asarray(predicted, dtype=np.float64)
    gold = np.asarray(gold, dtype=np.float64)
    if len(predicted) < 2 or np.ptp(predicted) == 0 or np.ptp(gold) == 0:
        return Correlation(float("nan"), float("nan"), len(predicted))
    return Correlation(
        float(pearsonr(predicted, gold).statistic),
        float(spearmanr(predicted, gold).statistic),
        len(predicted),
    )


def evaluate_sts(subsets: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]) -> StsResult:
    """Score ``{name: (embeddings_a, embeddings_b, gold)}`` by cosine; aggregate as above."""
    predictions = {name: cosine_similarity(a, b) for name, (a, b, _) in subsets.items()}
    golds = {name: np.asarray(gold, dtype=np.float64) for name, (_, _, gold) in subsets.items()}
    per_subset = {name: correlation(predictions[name], golds[name]) for name in subsets}
    pooled = correlation(
        np.concatenate(list(predictions.values())), np.concatenate(list(golds.values()))
    )
    sizes = np.array([c.n for c in per_subset.values()], dtype=np.float64)
    total = int(sizes.sum())

    def average(weights: np.ndarray) -> Correlation:
        pearson = [c.pearson for c in per_subset.values()]
        spearman = [c.spearman for c in per_subset.values()]
        return Correlation(
            float(np.average(pearson, weights=weights)),
            float(np.average(spearman, weights=weights)),
            total,
        )

    return StsResult(per_subset, pooled, average(np.ones_like(sizes)), average(sizes))


def relatedness_targets(scores: np.ndarray, n_classes: int = 5) -> np.ndarray:
    """Scores in ``[1, n_classes]`` as distributions over the integers (Tai et al., 2015):
    4.3 puts 0.7 on 4 and 0.3 on 5, so the expectation is the score again."""
    scores = np.asarray(scores, dtype=np.float64)
    floor = np.floor(scores).astype(int)
    frac = scores - floor
    targets = np.zeros((len(scores), n_classes), dtype=np.float32)
    rows = np.arange(len(scores))
    targets[rows, floor - 1] = 1.0 - frac
    upper = frac > 0
    targets[rows[upper], floor[upper]] = frac[upper]
    return targets


def fit_relatedness(
    train: tuple[np.ndarray, np.ndarray],
    dev: tuple[np.ndarray, np.ndarray],
    test_features: np.ndarray,
    *,
    epochs_per_round: int,
    patience: int,
    seed: int,
    batch_size: int = 64,
    max_epochs: int = 1000,
) -> tuple[float, np.ndarray]:
    """SentEval's SICK-R regression: predict the score distribution, read off its mean.

    A linear layer + softmax over the classes 1..5 is trained with Adam on the summed
    squared error to :func:`relatedness_targets` (SentEval ``RelatednessPytorch``), in
    rounds of ``epochs_per_round`` epochs; the model with the best dev Pearson is kept,
    and training stops at the ``patience``-th round without improvement (SentEval: 50
    epochs a round, patience 4). Returns ``(best dev Pearson, test predictions)``.
    """
    (train_x, train_scores), (dev_x, dev_scores) = train, dev
    n_classes = 5
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = nn.Linear(train_x.shape[1], n_classes)
    optimizer = torch.optim.Adam(model.parameters())
    generator = torch.Generator().manual_seed(seed)
    x = torch.as_tensor(train_x, dtype=torch.float32)
    y = torch.as_tensor(relatedness_targets(train_scores, n_classes))
    levels = torch.arange(1, n_classes + 1, dtype=torch.float32)

    def predict(features: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            probs = model(torch.as_tensor(features, dtype=torch.float32)).softmax(dim=-1)
            return (probs @ levels).numpy()

    best_pearson, best_state, bad_rounds, epochs = -np.inf, None, 0, 0
    while bad_rounds < patience and epochs < max_epochs:
        for _ in range(epochs_per_round):
            for rows in torch.randperm(len(x), generator=generator).split(batch_size):
                loss = (model(x[rows]).softmax(dim=-1) - y[rows]).pow(2).sum()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        epochs += epochs_per_round
        pearson = correlation(predict(dev_x), dev_scores).pearson
        if pearson > best_pearson:
            best_pearson, best_state = pearson, copy.deepcopy(model.state_dict())
        else:
            bad_rounds += 1
    model.load_state_dict(best_state)
    return float(best_pearson), predict(test_features)
