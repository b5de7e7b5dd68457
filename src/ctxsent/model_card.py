"""Model cards: the ``README.md`` of every saved and exported model folder.

A card is a Hugging Face Hub card (:class:`huggingface_hub.ModelCard`): YAML metadata the
Hub reads (``base_model``, ``library_name``, ``pipeline_tag``, ``datasets``, ``license``,
``model-index`` with the dev and test metrics) above a readable body: what the model is,
its settings, its data and recipe, its metrics and how to load it, in ctxsent and in the
runtimes ``ctxsent export`` writes it for (only those it does not refuse). Cards are built
from metadata dicts; :func:`ctxsent.saving.write_model_card` reads them from a folder.
:func:`push_to_hub` uploads a folder and its card (``ctxsent push``).
"""

from __future__ import annotations

import json
from pathlib import Path

from ctxsent.errors import CtxsentError, InputError
from ctxsent.io import atomic_write
from ctxsent.presets import is_builtin_backbone

MODEL_CARD = "README.md"
#: How the AS2 metrics in model cards are computed (:mod:`ctxsent.evaluation.as2_metrics`).
METRIC_CONVENTIONS = (
    "macro averages over questions; ties ranked pessimistically; a question without a "
    "correct candidate scores 0"
)
_MINILM = "sentence-transformers/all-MiniLM-L6-v2"  # the built-in backbone, Apache-2.0
#: Hub ids of the data sets ``--data NAME:PATH`` reads (``hf:ID`` names its own).
_HUB_DATASETS = {"wikiqa": "microsoft/wiki_qa", "squad-as2": "rajpurkar/squad"}
_ENCODERS = {"cross-thought", "rnn-cnn-encoder", "mean-max-aae-encoder"}
_RANKER_USE = "`ctxsent rank --model PATH`, `ctxsent eval as2 --model PATH`, `ctxsent serve PATH`."
_ENCODER_USE = "`ctxsent eval senteval --model PATH`."
_RUNTIMES = {
    "sentence-transformers": "sentence-transformers: `SentenceTransformer(DIR).encode(texts)`",
    "cross-encoder": "sentence-transformers: `CrossEncoder(DIR).predict([(question, answer)])`",
    "onnx": "onnxruntime: `ctxsent.load(DIR)` scores with `model.onnx`, without torch",
}


def pipeline_tag(kind: str) -> str:
    """The Hub task of a model kind: encoders extract features, a bi-encoder compares
    sentences, the other kinds rank candidates."""
    if kind in _ENCODERS:
        return "feature-extraction"
    return "sentence-similarity" if kind == "bi-encoder" else "text-ranking"


def export_formats(kind: str, config: dict) -> list[str]:
    """The ``ctxsent export --to`` formats a model exports to: those :mod:`ctxsent.export`
    does not refuse (a cascade's pruning, a contextual CrossEncoder, a Cross-Thought
    embedding of several special tokens, word-level encoders)."""
    if kind == "bi-encoder":
        return ["sentence-transformers", "onnx"]
    if kind == "cross-encoder":
        return ["onnx"] if config.get("contextual") else ["cross-encoder", "onnx"]
    if kind in ("cross-thought", "cross-thought-ranker") and config.get("num_special") == 1:
        return ["sentence-transformers"]
    return []


def write_model_card(
    folder: str | Path,
    kind: str,
    config: dict,
    summary: str = "",
    training: dict | None = None,
    metrics: dict[str, dict] | None = None,
) -> None:
    """Write the card of the ``kind`` model in ``folder``: ``config`` as its settings,
    ``training``, a run's report (``step``, ``data`` sizes, ``train`` recipe, ``dev`` and
    ``test`` metrics, anything else), as its data, recipe and metrics, and ``metrics``
    (``{"dev": {...}, "test": {...}}``) too."""
    from huggingface_hub import ModelCardData

    training = dict(training or {})
    splits = [k for k in ("dev", "test") if isinstance(training.get(k), dict)]
    metrics = {**{k: training.pop(k) for k in splits}, **(metrics or {})}
    recipe = training.pop("train", None) or training.pop("config", None) or {}
    data = training.pop("data", {})
    lines = [f"# A ctxsent `{kind}` model", "", summary, "", "## Settings", ""]
    lines += _table(("setting", "value"), [(f"`{k}`", _code(v)) for k, v in config.items()])
    if training or recipe or data:
        lines += ["", "## Training", ""]
        if "step" in training:
            lines.append(f"- best dev step: {training.pop('step')}")
        if isinstance(data, dict):  # split -> size
            lines += [f"- {split} data: {size}" for split, size in data.items()]
        elif data:  # a corpus
            lines.append(f"- data: {_source(str(data))}")
        lines += _list(training)
        if recipe:
            lines += ["", "Recipe (the run's settings):", ""]
            lines += _table(("setting", "value"), [(f"`{k}`", _code(v)) for k, v in recipe.items()])
    formats = export_formats(kind, config)
    base = _base_model(config.get("backbone"))
    data = ModelCardData(
        base_model=base,
        library_name="ctxsent",
        pipeline_tag=pipeline_tag(kind),
        license="apache-2.0" if base == _MINILM else None,
        tags=["ctxsent", kind] + ["sentence-transformers"] * ("sentence-transformers" in formats),
        model_name=Path(folder).name,
    )
    use = [
        "```python",
        "import ctxsent",
        'model = ctxsent.load("PATH")  # this folder',
        "```",
        "",
        "Command line: " + (_ENCODER_USE if kind in _ENCODERS else _RANKER_USE),
    ]
    if formats:
        use += ["", "Other runtimes, same scores (`ctxsent export PATH --to FORMAT --out DIR`):"]
        use += ["", *(f"- `--to {fmt}`: {_RUNTIMES[fmt]}" for fmt in formats)]
    _save(Path(folder), data, lines, "\n".join(use), metrics, {})


def update_model_card(
    folder: str | Path, test_metrics: dict | None = None, datasets: dict | None = None
) -> None:
    """Add ``test_metrics`` (the test set's scores) and ``datasets`` (split -> ``--data``
    specs or a file: Hub ids go to the metadata, names to the metrics table) to the card
    :func:`write_model_card` wrote in ``folder``."""
    from huggingface_hub import ModelCard

    card = ModelCard.load(Path(folder) / MODEL_CARD)
    metrics: dict[str, dict] = {}
    sources: dict[str, str] = {}
    for result in card.data.eval_results or []:
        metrics.setdefault(result.dataset_split, {})[result.metric_type] = result.metric_value
        sources[result.dataset_split] = result.dataset_name
    if test_metrics:
        metrics["test"] = test_metrics
    specs = {split: [s] if isinstance(s, str) else s for split, s in (datasets or {}).items() if s}
    sources |= {
        split: " + ".join(map(_source, split_specs)) for split, split_specs in specs.items()
    }
    ids = [*(card.data.datasets or []), *(_hub_id(s) for ss in specs.values() for s in ss)]
    card.data.datasets = sorted({i for i in ids if i}) or None
    body, _, use = card.text.partition("\n## Use\n\n")
    body = body.split("\n## Evaluation")[0]
    _save(Path(folder), card.data, body.strip().splitlines(), use.strip(), metrics, sources)


def write_export_card(folder: Path, fmt: str, kind: str, backbone: str | None = None) -> None:
    """The card of a folder ``ctxsent export`` writes in ``fmt`` for a model of ``kind``."""
    from huggingface_hub import ModelCardData

    onnx = fmt == "onnx"
    data = ModelCardData(
        base_model=_base_model(backbone),
        library_name="ctxsent" if onnx else "sentence-transformers",
        pipeline_tag="text-ranking" if fmt == "cross-encoder" else pipeline_tag(kind),
        tags=["ctxsent", "onnx" if onnx else "sentence-transformers"],
    )
    lines = [
        f"# A ctxsent `{kind}` model exported to {fmt}",
        "",
        f"Written by `ctxsent export --to {fmt}`: the model's scores or embeddings, exact up to "
        "float rounding" + (" unless `ctxsent-onnx.json` says `quantize: int8`." if onnx else "."),
    ]
    _save(folder, data, lines, _RUNTIMES[fmt].replace("DIR", "PATH") + " (PATH: this folder)")


def _save(folder: Path, data, lines, use: str, metrics=None, sources=None) -> None:
    """Write ``data`` (given the model-index of ``metrics``: split -> name -> value, floats
    only) over ``lines``, an Evaluation section and the Use section ``use``."""
    from huggingface_hub import EvalResult, ModelCard

    sources, hub_ids = sources or {}, data.datasets or []
    results = [
        EvalResult(
            task_type=data.pipeline_tag,
            dataset_type=sources[split] if sources.get(split) in hub_ids else "custom",
            dataset_name=sources.get(split, split),
            dataset_split=split,
            metric_type=name,
            metric_value=round(value, 4),
        )
        for split, values in (metrics or {}).items()
        for name, value in values.items()
        if isinstance(value, float)
    ]
    data.eval_results = results or None
    data.model_name = (data.model_name or folder.name) if results else None
    if results:
        names = list(dict.fromkeys(r.metric_type for r in results))
        lines = [*lines, "", "## Evaluation", ""]
        lines += [f"AS2 metrics: {METRIC_CONVENTIONS}.", ""] if "map" in names else []
        rows = [
            (f"{split} ({sources[split]})" if split in sources else split,
             *(f"{values[n]:.4f}" if n in values else "" for n in names))
            for split, values in metrics.items()
        ]  # fmt: skip
        lines += _table(("split", *names), rows)
    text = "\n".join([*lines, "", "## Use", "", use, ""])
    with atomic_write(folder / MODEL_CARD) as handle:
        handle.write(str(ModelCard(f"---\n{data.to_yaml()}\n---\n\n{text}")))


def _base_model(backbone: object) -> str | None:
    """The Hub id of a backbone; None for a local folder, which names no Hub model."""
    if not isinstance(backbone, str) or not backbone or Path(backbone).exists():
        return None
    return _MINILM if is_builtin_backbone(backbone) else backbone


def _hub_id(spec: str | None) -> str | None:
    """The Hub data set of a ``--data`` spec: ``hf:ID[@SPLIT]``, or a built-in set's."""
    name, _, rest = (spec or "").partition(":")
    if not rest:
        return None
    return rest.split("@")[0] if name == "hf" else _HUB_DATASETS.get(name)


def _source(spec: str) -> str:
    """A data spec as the card shows it: its Hub id, a set's or a file's name (no paths)."""
    name, _, rest = spec.partition(":")
    if not rest:
        return Path(spec).name
    return _hub_id(spec) or (Path(rest).name if name == "hf-disk" else name)


def _list(mapping: dict, depth: int = 0) -> list[str]:
    """Nested markdown list lines for a dict."""
    lines = []
    for key, value in mapping.items():
        if isinstance(value, dict):
            lines += [f"{'  ' * depth}- {key}:", *_list(value, depth + 1)]
        else:
            lines.append(f"{'  ' * depth}- {key}: {_code(value)}")
    return lines


def _code(value: object) -> str:
    return f"`{json.dumps(value)}`"


def _table(header: tuple[str, ...], rows) -> list[str]:
    """Markdown table lines."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(map(str, row)) + " |" for row in rows]


def push_to_hub(
    folder: str | Path, repo_id: str, private: bool = False, token: str | None = None
) -> str:
    """Upload ``folder`` (a saved or exported model with its card) to the Hugging Face Hub
    repository ``repo_id``, created (``private``) if it does not exist; returns the commit's
    URL. A Hub that cannot be reached (offline, ``HF_HUB_OFFLINE=1``) or that refuses (a
    token, a name) is a one-line :class:`~ctxsent.errors.CtxsentError`."""
    import sys

    from huggingface_hub import HfApi, get_session

    folder = Path(folder)
    if not (folder / MODEL_CARD).is_file():
        raise InputError(
            f"not a model folder with a card ({MODEL_CARD}): save or export a model there",
            path=folder,
        )
    client = sys.modules[type(get_session()).__module__.split(".")[0]]  # httpx or requests
    api = HfApi(token=token)
    try:
        api.create_repo(repo_id, private=private, exist_ok=True)
        return str(api.upload_folder(repo_id=repo_id, folder_path=folder).commit_url)
    except (OSError, getattr(client, "TransportError", OSError)) as err:
        raise CtxsentError(f"{repo_id}: cannot push to the Hugging Face Hub: {err}") from None
