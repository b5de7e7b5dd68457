"""The Sequential Ranker baseline of the Cascade paper (section 4.2).

Independent monolithic rankers of increasing depth (MiniLM-L6 truncated to 2, 3, 4, 5 and
6 layers, each fine-tuned on its own) chained with the cascade's drop rule
(:mod:`~ctxsent.models.staged`). Unlike the cascade every stage encodes its candidates from
scratch, so its cost is the sum over stages of depth x candidates seen. A saved one is a
folder of ``stage-0`` ... and a manifest with the default drop rates.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ctxsent.errors import InputError, ModelFolderError
from ctxsent.io import check_output
from ctxsent.models.ranker_base import As2Ranker
from ctxsent.models.staged import (
    CascadeCost,
    prune_in_stages,
    question_index,
    resolve_alphas,
    set_alphas,
)
from ctxsent.protocols import LayeredRanker
from ctxsent.saving import model_folder, read_manifest, register_model
from ctxsent.tasks.as2_records import As2Record


def encoder_depth(ranker) -> int:
    """Transformer layers of a stage ranker (its cost per candidate)."""
    if not isinstance(ranker, LayeredRanker):
        raise InputError(f"a {type(ranker).__name__} has no transformer depth", field="stages")
    return ranker.num_layers


@register_model("sequential")
class SequentialRanker(As2Ranker):
    """Rankers of increasing depth, each re-scoring the survivors of the previous one."""

    def __init__(self, stages: Sequence[As2Ranker], alphas: Sequence[float] = ()) -> None:
        if len(stages) < 2:
            raise InputError("a Sequential Ranker needs at least 2 stages", field="stages")
        depths = [encoder_depth(stage) for stage in stages]
        if depths != sorted(depths):
            raise InputError(f"stages must not get shallower, got depths {depths}", field="stages")
        if len({stage.contextual for stage in stages}) != 1:
            raise InputError("stages mix pairwise and contextual models", field="stages")
        self.stages = list(stages)
        self.depths = depths
        self.contextual = stages[0].contextual
        self.alphas = resolve_alphas(list(alphas) or 0.0, len(stages))
        self.last_cost: CascadeCost | None = None

    @property
    def num_stages(self) -> int:
        return len(self.stages)

    @classmethod
    def from_pretrained(
        cls, path: str | Path, load_stage: Callable[[Path], Any]
    ) -> SequentialRanker:
        """Load a saved ``sequential`` folder; ``load_stage`` loads each stage's folder
        (:func:`~ctxsent.models.registry.load_model_folder`)."""
        manifest = read_manifest(path, "sequential")
        count = manifest["config"].get("stages")
        if not isinstance(count, int) or count < 2:
            raise ModelFolderError("manifest needs 'stages' >= 2", path=path, field="stages")
        stages = [load_stage(Path(path) / f"stage-{i}") for i in range(count)]
        return cls(stages, manifest["config"].get("alphas", ()))

    def save_pretrained(self, path: str | Path, overwrite: bool = False) -> Path:
        """Write every stage and the manifest atomically to ``path`` (an existing folder as
        :func:`~ctxsent.io.check_output` allows)."""
        config = {"stages": len(self.stages), "alphas": self.alphas}
        with model_folder(path, self.kind, config, overwrite) as staged:
            for index, stage in enumerate(self.stages):
                stage.save_pretrained(staged / f"stage-{index}")
        return Path(path)

    def predict(
        self,
        records: Sequence[As2Record],
        batch_size: int = 64,
        show_progress: bool = False,
        alpha: float | Sequence[float] | None = None,
    ) -> np.ndarray:
        """Stage index + sigmoid(score) at the stage each candidate left; ``last_cost`` is set."""
        alphas = resolve_alphas(self.alphas if alpha is None else alpha, self.num_stages)
        scores, counts, evaluations = prune_in_stages(
            question_index([r.question_id for r in records]),
            alphas,
            self.depths,
            lambda index, active: self.stages[index].predict(
                [records[i] for i in active], batch_size=batch_size
            ),
        )
        self.last_cost = CascadeCost(evaluations, self.depths[-1] * len(records), counts)
        return scores


def build_sequential(
    stages: Sequence[str | Path],
    out: str | Path,
    load_stage: Callable[[Path], Any],
    alpha: str | Sequence[float] | None = None,
    overwrite: bool = False,
) -> SequentialRanker:
    """What ``ctxsent cascade sequential`` does: the saved rankers ``stages`` (shallowest
    first; ``load_stage`` loads a folder, as in :meth:`SequentialRanker.from_pretrained`)
    chained with the drop rates ``alpha`` (:func:`~ctxsent.models.staged.set_alphas`) and
    saved to ``out``, which is checked before the stages load."""
    check_output(out, SequentialRanker.kind, overwrite)
    ranker = SequentialRanker([load_stage(Path(folder)) for folder in stages])
    set_alphas(ranker, alpha)
    ranker.save_pretrained(out, overwrite)
    return ranker
