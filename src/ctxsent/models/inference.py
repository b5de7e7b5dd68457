"""The one way every model runs inference.

Under :func:`inference` a network is in eval mode (its previous mode restored after), runs
without autograd and under the autocast of its precision (:mod:`ctxsent.models.precision`),
and reports progress on stderr when asked. Inputs come in batches of similar length, each
padded to its own longest item: texts through
:func:`~ctxsent.text.length_chunks.length_sorted_chunks`, ranker records through
:meth:`~ctxsent.models.transformer_ranker.TransformerRanker.sorted_batches`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch import nn

from ctxsent.models.precision import announce_auto, autocast_context, resolve_precision


@contextlib.contextmanager
def inference(
    network: nn.Module,
    device: torch.device,
    precision: str = "fp32",
    total: int = 0,
    show_progress: bool = False,
    unit: str = "text",
) -> Iterator:
    """Run ``network`` for inference on ``device`` in ``precision``; yields a progress bar
    over ``total`` items (``update`` it; silent unless ``show_progress``). What ``auto``
    resolves to is said once per process on stderr."""
    from tqdm.auto import tqdm

    if precision == "auto":
        announce_auto(device.type, resolve_precision(precision, device))

    was_training = network.training
    network.eval()
    progress = tqdm(total=total, disable=not show_progress, desc="inference", unit=unit)
    try:
        with torch.inference_mode(), autocast_context(device, precision), progress:
            yield progress
    finally:
        network.train(was_training)
