"""Training progress bars on stderr, so a command's stdout holds only its JSON report.

Lightning's ``TQDMProgressBar`` writes its bars to ``sys.stdout``; ``ctxsent finetune
as2 ... > run.json`` then captured the bars ahead of the report.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable

from lightning.pytorch.callbacks import TQDMProgressBar


def _on_stderr(create_bar: Callable) -> Callable:
    """``create_bar`` run while ``sys.stdout`` is ``sys.stderr`` (tqdm binds its file then)."""

    def create_on_stderr(self):
        with contextlib.redirect_stdout(sys.stderr):
            return create_bar(self)

    return create_on_stderr


class StderrProgressBar(TQDMProgressBar):
    """``TQDMProgressBar`` whose bars write to stderr."""

    init_sanity_tqdm = _on_stderr(TQDMProgressBar.init_sanity_tqdm)
    init_train_tqdm = _on_stderr(TQDMProgressBar.init_train_tqdm)
    init_validation_tqdm = _on_stderr(TQDMProgressBar.init_validation_tqdm)
    init_test_tqdm = _on_stderr(TQDMProgressBar.init_test_tqdm)
    init_predict_tqdm = _on_stderr(TQDMProgressBar.init_predict_tqdm)
