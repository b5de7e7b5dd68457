"""Evaluate any ctxsent encoder on MTEB (``pip install mteb``, version 2).

:func:`mteb_encoder` gives a ctxsent :class:`~ctxsent.protocols.Encoder` the model metadata
and (cosine) similarity functions ``mteb.evaluate`` wants, and hands ``encode`` what MTEB
passes (its DataLoader of batches and keyword arguments, which ctxsent encoders accept)::

    import mteb, ctxsent
    model = ctxsent.mteb_encoder(ctxsent.load("runs/bi/model"), name="my-org/bi")
    mteb.evaluate(model, mteb.get_tasks(tasks=["STSBenchmark"]))
"""

from __future__ import annotations

from ctxsent.protocols import Encoder


def mteb_encoder(model: Encoder, name: str = "ctxsent/model"):
    """``model`` as an MTEB 2 encoder named ``name`` (``organisation/model``)."""
    from mteb.models import ModelMeta
    from mteb.models.abs_encoder import AbsEncoder

    if not isinstance(model, Encoder):
        raise TypeError(f"mteb_encoder takes an encoder (with encode), got {type(model).__name__}")

    class CtxsentEncoder(AbsEncoder):
        """A ctxsent encoder seen by MTEB: ``encode`` receives what MTEB passes."""

        def __init__(self) -> None:
            self.model = model
            self.mteb_model_meta = ModelMeta.create_empty({"name": name})

        def encode(self, inputs, **kwargs):
            return self.model.encode(inputs, **kwargs)

    return CtxsentEncoder()
