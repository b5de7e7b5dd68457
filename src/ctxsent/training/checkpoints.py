"""How every training run keeps its resumable checkpoint: ``OUT/checkpoints/last.ckpt``.

Lightning 2.6 writes ``last.ckpt`` for ``save_last=True`` only when it also saves a
top-k checkpoint, so ``save_top_k=0`` kept nothing until training ended, and a run
killed mid-way started again from step 0. Here the newest checkpoint is kept as
``latest.ckpt`` (with no monitor, the top 1 is the newest) and ``last.ckpt`` links to it.
"""

from __future__ import annotations

from pathlib import Path

import lightning as L


def newest_checkpoint(dirpath: Path, **when) -> L.pytorch.callbacks.ModelCheckpoint:
    """A callback that keeps only the newest checkpoint; ``when`` says how often to save."""
    return L.pytorch.callbacks.ModelCheckpoint(
        dirpath=dirpath,
        filename="latest",
        save_top_k=1,
        save_last="link",
        enable_version_counter=False,
        **when,
    )
