"""Evaluate any ctxsent encoder on MTEB (``pip install mteb``, version 2).

``mteb.evaluate`` takes models that carry MTEB's model metadata and similarity functions
besides ``encode``; :func:`mteb_encoder` wraps a ctxsent :class:`~ctxsent.protocols.Encoder`
in them and hands ``encode`` exactly what MTEB passes (its DataLoader of batches and its
keyword arguments, which ctxsent encoders accept)::

    import mteb, ctxsent
    model = ctxsent.mteb_encoder(ctxsent.load("runs/bi/model"), name="my-org/bi")
    mteb.evaluate(model, mteb.get_tasks(tasks=["STSBenchmark"]))

Similarities are MTEB's defaults for an encoder (cosine), which is what every ctxsent
encoder is trained or documented for.
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
