"""Choosing a cascade's drop rates for a cost budget (the paper's future work).

The paper tunes alpha by an exhaustive grid (section 5.5, Figure 2) and leaves choosing it
for a target cost open (section 3, footnote 3). A candidate's partial score at an exit does
not depend on which others were dropped, so one alpha = 0 pass recording every exit's
logits (:meth:`CascadeRanker.predict_exits`) lets any setting be *simulated exactly*: its
ranking, metrics and layer-candidate cost. Two searches over per-exit rates in
{0.0, 0.1, ..., 0.6} (the paper's grid): ``grid`` tries every combination; ``greedy``
starts from no dropping and raises the one rate whose next step loses the least dev
accuracy per unit of cost saved, until the budget is met. The most accurate setting within
the budget wins.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ctxsent.errors import InputError
from ctxsent.evaluation.as2_metrics import as2_metrics
from ctxsent.io import atomic_path, check_writable
from ctxsent.models.cascade import CascadeRanker
from ctxsent.models.precision import on_accelerator
from ctxsent.models.staged import exit_costs, prune_in_stages, question_index
from ctxsent.resolver import load
from ctxsent.tasks.as2_load import evaluation_records
from ctxsent.tasks.as2_records import As2Record, sample_questions

PAPER_GRID = tuple(round(0.1 * i, 1) for i in range(7))


@dataclass(frozen=True)
class CascadeSetting:
    alphas: tuple[float, ...]
    relative_cost: float
    metrics: dict


def simulate_cascade(
    exit_logits: np.ndarray,
    question_ids: Sequence[str],
    alphas: Sequence[float],
    exits: Sequence[int],
    depth: int,
) -> tuple[np.ndarray, float]:
    """Scores and relative cost that ``CascadeRanker.predict`` would give with ``alphas``."""
    scores, _, evaluations = prune_in_stages(
        question_index(question_ids),
        alphas,
        exit_costs(exits),
        lambda index, active: exit_logits[index, active],
    )
    return scores, evaluations / (depth * exit_logits.shape[1])


def evaluate_setting(
    exit_logits: np.ndarray,
    question_ids: Sequence[str],
    labels: Sequence[int],
    alphas: Sequence[float],
    exits: Sequence[int],
    depth: int,
) -> CascadeSetting:
    scores, cost = simulate_cascade(exit_logits, question_ids, alphas, exits, depth)
    return CascadeSetting(tuple(alphas), cost, as2_metrics(question_ids, labels, scores))


def grid_search(exit_logits, question_ids, labels, exits, depth, grid=PAPER_GRID):
    """Every combination of per-exit rates from ``grid`` (paper, section 5.5)."""
    return [
        evaluate_setting(exit_logits, question_ids, labels, alphas, exits, depth)
        for alphas in itertools.product(grid, repeat=len(exits) - 1)
    ]


def greedy_search(
    exit_logits,
    question_ids,
    labels,
    exits,
    depth,
    budget: float,
    metric: str = "map",
    grid=PAPER_GRID,
):
    """Raise one rate at a time, cheapest accuracy loss per cost saved first, to the budget."""
    current = evaluate_setting(
        exit_logits, question_ids, labels, [grid[0]] * (len(exits) - 1), exits, depth
    )
    path = [current]
    while current.relative_cost > budget:
        steps = []
        for index, alpha in enumerate(current.alphas):
            position = grid.index(alpha)
            if position + 1 < len(grid):
                alphas = list(current.alphas)
                alphas[index] = grid[position + 1]
                steps.append(
                    evaluate_setting(exit_logits, question_ids, labels, alphas, exits, depth)
                )
        if not steps:
            break
        current = min(steps, key=lambda s: _loss_per_saving(current, s, metric))
        path.append(current)
    return path


def _loss_per_saving(before: CascadeSetting, after: CascadeSetting, metric: str) -> float:
    saved = before.relative_cost - after.relative_cost
    lost = before.metrics[metric] - after.metrics[metric]
    return lost / saved if saved > 0 else float("inf")


def best_within_budget(
    settings: Sequence[CascadeSetting], budget: float, metric: str = "map"
) -> CascadeSetting | None:
    """The most accurate setting whose cost is within ``budget`` (ties: cheaper first)."""
    fitting = [s for s in settings if s.relative_cost <= budget + 1e-12]
    return max(fitting, key=lambda s: (s.metrics[metric], -s.relative_cost), default=None)


def tune_cascade(
    ranker,
    records: Sequence[As2Record],
    budget: float,
    metric: str = "map",
    search: str = "both",
    batch_size: int = 64,
) -> tuple[CascadeSetting, list[CascadeSetting]]:
    """The most accurate drop rates of a :class:`~ctxsent.models.cascade.CascadeRanker` on
    ``records`` within ``budget`` (relative cost), and every setting tried; ``search`` is
    ``grid``, ``greedy`` or ``both``. One pass records every exit's logits; the searches
    simulate each setting on them."""
    logits = ranker.predict_exits(records, batch_size=batch_size)
    ids, labels = [r.question_id for r in records], [r.label for r in records]
    depth, exits = ranker.model.config.num_hidden_layers, ranker.config.exits
    settings = []
    if search in ("grid", "both"):
        settings += grid_search(logits, ids, labels, exits, depth)
    if search in ("greedy", "both"):
        settings += greedy_search(logits, ids, labels, exits, depth, budget, metric)
    chosen = best_within_budget(settings, budget, metric)
    if chosen is None:
        raise InputError(f"no setting tried costs <= {budget}", field="budget")
    return chosen, settings


def pyplot():
    """``matplotlib.pyplot`` on a file backend, or a one-line error naming the extra to install.

    Call it before the search too, so that a missing plotting library stops a run
    before any work rather than after it.
    """
    try:
        import matplotlib
    except ImportError:
        raise InputError(
            "plotting needs matplotlib (pip install 'ctxsent[bench]')", field="plot"
        ) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_settings(
    settings: Sequence[CascadeSetting], chosen: CascadeSetting | None, metric: str, path
) -> None:
    """Accuracy against relative cost for every setting tried (the paper's Figure 2)."""
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(6, 4))
    axes.scatter(
        [s.relative_cost for s in settings], [s.metrics[metric] for s in settings], s=6, alpha=0.5
    )
    for alpha in (0.3, 0.4, 0.5):
        uniform = [s for s in settings if set(s.alphas) == {alpha}]
        if uniform:
            axes.scatter(
                uniform[0].relative_cost,
                uniform[0].metrics[metric],
                marker="^",
                s=60,
                label=f"alpha = {alpha} at every exit",
            )
    if chosen is not None:
        axes.scatter(
            chosen.relative_cost,
            chosen.metrics[metric],
            marker="*",
            s=160,
            c="red",
            label=f"chosen {list(chosen.alphas)}",
        )
    axes.set_xlabel("relative cost (layer-candidate evaluations / monolithic)")
    axes.set_ylabel(f"dev {metric.upper()}")
    axes.legend(fontsize=8)
    figure.tight_layout()
    with atomic_path(path) as staged:
        figure.savefig(staged, dpi=120, format="png")
    plt.close(figure)


def tune_saved_cascade(
    model: str | Path,
    data: str,
    budget: float,
    *,
    split: str | None = None,
    columns: dict[str, str] | None = None,
    questions: int | None = None,
    metric: str = "map",
    search: str = "both",
    plot: str | Path | None = None,
    save: bool = True,
    batch_size: int = 64,
    accelerator: str = "auto",
) -> dict:
    """What ``ctxsent cascade tune`` prints: :func:`tune_cascade` on the clean questions of
    ``split`` of ``data`` (``dev`` of a folder; ``questions`` of them drawn at random, seed
    0), the chosen rates stored in the saved cascade ``model`` if ``save``, and accuracy
    against cost drawn to the PNG ``plot``. Outputs are checked before any work."""
    if save:
        check_writable(model, folder=True)
    if plot is not None:
        check_writable(plot, folder=False)
        pyplot()  # a missing optional dependency stops the run before any work
    ranker = load(model)
    if not isinstance(ranker, CascadeRanker):
        raise InputError("not a cascade model", path=model)
    records, dropped = evaluation_records(data, split, True, columns, default_split="dev")
    if questions is not None:
        records = sample_questions(records, questions)
    tuned = on_accelerator(ranker, accelerator)
    chosen, settings = tune_cascade(tuned, records, budget, metric, search, batch_size)
    if save:
        ranker.config.alphas = list(chosen.alphas)
        ranker.save_pretrained(model)
    if plot is not None:
        plot_settings(settings, chosen, metric, plot)
    return {
        "alphas": list(chosen.alphas),
        "relative_cost": round(chosen.relative_cost, 4),
        "dev": chosen.metrics,
        "questions": len({r.question_id for r in records}),
        "dropped": dropped,
        "settings_tried": len(settings),
        "saved": save,
    }
