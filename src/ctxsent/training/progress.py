"""Training progress on stderr, so a command's stdout holds only its JSON report: one bar,
training's (a line every :data:`~ctxsent.models.inference.LOG_EVERY` seconds where stderr
is not a terminal); the evaluations inside a run draw none of their own."""

from __future__ import annotations

import sys

from lightning.pytorch.callbacks import TQDMProgressBar
from lightning.pytorch.callbacks.progress.tqdm_progress import Tqdm

from ctxsent.models.inference import progress_bar


class StderrProgressBar(TQDMProgressBar):
    """``TQDMProgressBar`` with the training bar on stderr and no other bar."""

    @property
    def refresh_rate(self) -> int:
        """Batches between updates; every batch on a log, whose lines are rare anyway."""
        return self._refresh_rate if sys.stderr.isatty() else 1

    def get_metrics(self, trainer, module) -> dict:
        return {k: v for k, v in super().get_metrics(trainer, module).items() if k != "v_num"}

    def init_train_tqdm(self) -> Tqdm:
        return progress_bar(
            Tqdm,
            desc=self.train_description,
            disable=self.is_disabled,
            leave=True,
            dynamic_ncols=True,
            smoothing=0,
            bar_format=self.BAR_FORMAT,
        )

    def init_validation_tqdm(self) -> Tqdm:
        return Tqdm(disable=True)

    init_sanity_tqdm = init_test_tqdm = init_predict_tqdm = init_validation_tqdm
