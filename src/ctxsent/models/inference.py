"""The one way every model runs inference.

Under :func:`inference` a network is in eval mode (its previous mode restored after), runs
without autograd and under the autocast of its precision (:mod:`ctxsent.models.precision`),
and reports progress on stderr when asked (:func:`progress_bar`). Inputs come in batches of
similar length, each padded to its own longest item: texts through
:func:`~ctxsent.text.length_chunks.length_sorted_chunks`, ranker records through
:meth:`~ctxsent.models.transformer_ranker.TransformerRanker.sorted_batches`.
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
from collections.abc import Iterator

import torch
from torch import nn
from tqdm import tqdm

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
    if precision == "auto":
        announce_auto(device.type, resolve_precision(precision, device))

    was_training = network.training
    network.eval()
    progress = progress_bar(total=total, disable=not show_progress, desc="inference", unit=unit)
    try:
        with torch.inference_mode(), autocast_context(device, precision), progress:
            yield progress
    finally:
        network.train(was_training)


#: Seconds between progress lines where stderr is not a terminal (:class:`LogLines`).
LOG_EVERY = 30


def progress_bar(bar_class: type | None = None, **options) -> tqdm:
    """A progress bar on stderr: ``bar_class`` (``tqdm.auto``'s by default) redrawn on a
    terminal; where stderr is a file (a log, CI) a :class:`LogLines`, not redraws."""
    if not sys.stderr.isatty():
        bar_class = LogLines
    elif bar_class is None:
        from tqdm.auto import tqdm as bar_class
    return bar_class(file=sys.stderr, **options)


class LogLines(tqdm):
    """A tqdm bar written as a line when its total is known, every :data:`LOG_EVERY`
    seconds after and when it closes, instead of one line redrawn on every update."""

    _written = -math.inf

    def display(self, msg: str | None = None, pos: int | None = None) -> None:
        if msg != "" and self.total is not None and time.monotonic() - self._written >= LOG_EVERY:
            self._write()  # msg "" clears a redrawn bar: nothing to clear here

    def close(self) -> None:
        if not self.disable:
            self._write()
        self.leave = False  # tqdm's leaving writes a newline
        super().close()

    def _write(self) -> None:
        self._written = time.monotonic()
        self.fp.write(f"{self}\n")
        self.fp.flush()
