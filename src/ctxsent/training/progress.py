"""Training progress bars on stderr, so a command's stdout holds only its JSON report.

Lightning's ``TQDMProgressBar`` writes its bars to ``sys.stdout``; ``ctxsent finetune
as2 ... > run.json`` then captured the bars ahead of the report.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable

from lightning.pytorch.callbacks import TQDMProgressBar


class StderrProgressBar(TQDMProgressBar):
    """``TQDMProgressBar`` whose bars are created while ``sys.stdout`` is ``sys.stderr``."""


def _on_stderr(create_bar: Callable) -> Callable:
    def create_on_stderr(self):
        with contextlib.redirect_stdout(sys.stderr):
            return create_bar(self)

    return create_on_stderr


for _stage in ("sanity", "train", "validation", "test", "predict"):
    _name = f"init_{_stage}_tqdm"
    setattr(StderrProgressBar, _name, _on_stderr(getattr(TQDMProgressBar, _name)))
