"""The built-in model kinds and the one loader of a saved model folder.

Each model class declares its kind with :func:`~ctxsent.saving.register_model`; this
module imports every built-in model module, so that every kind is known, and
:func:`load_model_folder` builds the class a folder's manifest names. A composite model
(a retrieve-then-rerank pipeline, the Sequential Ranker) holds other model folders: it
is handed this loader for its stages, so that no model module imports another's loader.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ctxsent.errors import ModelFolderError
from ctxsent.io import MANIFEST
from ctxsent.models.bi_encoder import BiEncoderRanker
from ctxsent.models.cascade import CascadeRanker
from ctxsent.models.cross_encoder import CrossEncoderRanker
from ctxsent.models.cross_thought import CrossThoughtModel, CrossThoughtRanker
from ctxsent.models.mean_max_aae import MeanMaxAaeEncoder
from ctxsent.models.pipeline import PipelineRanker
from ctxsent.models.rnn_cnn import RnnCnnEncoder
from ctxsent.models.sequential import SequentialRanker
from ctxsent.saving import (
    check_finite_weights,
    read_manifest,
    registered_models,
    warn_if_unfinished,
)

#: The built-in kinds (``ctxsent.json``'s ``kind``) and their classes.
MODEL_CLASSES: dict[str, type] = {
    cls.kind: cls
    for cls in (
        BiEncoderRanker,
        CascadeRanker,
        CrossEncoderRanker,
        CrossThoughtModel,
        CrossThoughtRanker,
        MeanMaxAaeEncoder,
        PipelineRanker,
        RnnCnnEncoder,
        SequentialRanker,
    )
}
#: Models whose folders hold other model folders: ``from_pretrained(path, load_stage)``.
COMPOSITE = (PipelineRanker, SequentialRanker)


def load_model_folder(path: str | Path) -> Any:
    """Load any saved ctxsent model, of the class its manifest's ``kind`` names (built in, or
    registered with :func:`~ctxsent.saving.register_model`); warns when an unfinished run
    saved it and refuses weights holding NaN or infinity."""
    path = Path(path)
    kind = read_manifest(path)["kind"]
    warn_if_unfinished(path)
    classes = {**registered_models(), **MODEL_CLASSES}
    if kind not in classes:
        raise ModelFolderError(
            f"unknown model kind {kind!r} (known: {', '.join(sorted(classes))})",
            path=path / MANIFEST,
            field="kind",
        )
    cls = classes[kind]
    if issubclass(cls, COMPOSITE):
        model = cls.from_pretrained(path, load_model_folder)
    else:
        model = cls.from_pretrained(path)
    check_finite_weights(model, path)
    return model
