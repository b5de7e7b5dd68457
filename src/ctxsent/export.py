"""Export models for other runtimes: sentence-transformers folders and ONNX.

Every export is exact (its scores or embeddings are ours up to float rounding; the tests
check parity) or refused with an :class:`InputError` before anything is written:

* :func:`export_sentence_transformer`: a bi-encoder (or its ranker), or a Cross-Thought
  encoder or ranker with one special token, as a folder whose
  ``SentenceTransformer(folder).encode`` gives the model's ``encode``;
* :func:`export_cross_encoder`: a pairwise :class:`CrossEncoderRanker` as a ``CrossEncoder``
  folder whose ``predict`` returns our logits (exact for pairs within ``max_length``
  tokens; longer ones are truncated by HF's longest-first rule there, by
  :mod:`ctxsent.models.segments` here);
* :func:`export_onnx`: a cross-encoder's scoring network (pairwise or contextual) or a
  bi-encoder's embedding network as ``model.onnx`` with its tokenizer, which
  :mod:`ctxsent.onnx_runtime` runs without torch; ``quantize="int8"`` trades exactness
  for speed and says so. A cascade is refused: its scores depend on per-question pruning.

Each format has a table, model class -> what it is written from (:func:`_exports`); a
ranker built on an encoder is looked up by its encoder's class too. Folders are written
atomically and replace an existing one only as :func:`~ctxsent.io.check_output` allows.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from ctxsent.errors import InputError
from ctxsent.io import atomic_path, check_output
from ctxsent.model_card import write_export_card
from ctxsent.onnx_runtime import ONNX_CONFIG, ONNX_MODEL, OnnxConfig, Quantization
from ctxsent.protocols import StagedRanker, WrapsEncoder
from ctxsent.resolver import load, zero_shot_backbone
from ctxsent.saving import is_model_folder
from ctxsent.tasks.as2_records import As2Record

#: The inputs of an exported cross-encoder's graph.
CROSS_ENCODER_INPUTS = ("input_ids", "token_type_ids", "attention_mask")


def export_kind(fmt: str) -> str:
    """The output kind (:func:`~ctxsent.io.check_output`) of an export folder in ``fmt``."""
    return f"{fmt} export"


def _write_json(path: Path, value: object) -> None:
    path.write_text(json.dumps(value, indent=2) + "\n")


def _set_json(path: Path, **fields: object) -> None:
    """Set top-level ``fields`` of the JSON object in ``path``."""
    _write_json(path, {**json.loads(path.read_text()), **fields})


def export_sentence_transformer(encoder, out: str | Path, overwrite: bool = False) -> Path:
    """Write a sentence encoder as a sentence-transformers folder at ``out`` whose
    ``SentenceTransformer(out).encode`` gives the encoder's own ``encode`` (:func:`_exports`: a
    bi-encoder or a one-special-token Cross-Thought encoder, or a ranker on either)."""
    backbone = getattr(getattr(encoder, "config", None), "backbone", None)  # for the card
    exported = _exporter(encoder, "sentence-transformers")
    transformer, tokenizer, max_seq_length, pooling, normalize, tokenizer_class = exported
    with atomic_path(out, export_kind("sentence-transformers"), overwrite=overwrite) as staged:
        staged.mkdir()
        transformer.save_pretrained(staged, safe_serialization=True)
        tokenizer.save_pretrained(staged)
        if tokenizer_class:
            _set_json(staged / "tokenizer_config.json", tokenizer_class=tokenizer_class)
        paths, names = ("", "1_Pooling", "2_Normalize"), ("Transformer", "Pooling", "Normalize")
        count = 3 if normalize else 2
        for path in paths[1:count]:
            (staged / path).mkdir()
        module = "sentence_transformers.models."
        files = {
            "modules.json": [
                {"idx": i, "name": str(i), "path": paths[i], "type": module + names[i]}
                for i in range(count)
            ],
            "sentence_bert_config.json": {"max_seq_length": max_seq_length, "do_lower_case": False},
            "1_Pooling/config.json": {
                "word_embedding_dimension": transformer.config.hidden_size,
                "pooling_mode_cls_token": pooling == "cls",
                "pooling_mode_mean_tokens": pooling == "mean",
                "pooling_mode_max_tokens": False,
                "pooling_mode_mean_sqrt_len_tokens": False,
            },
            "config_sentence_transformers.json": {
                "similarity_fn_name": "cosine" if normalize else "dot"
            },
        }
        for name, value in files.items():
            _write_json(staged / name, value)
        kind = "bi-encoder" if normalize else "cross-thought"
        write_export_card(staged, "sentence-transformers", kind, backbone)
    return Path(out)


def _bi_encoder_as_bert(encoder) -> tuple:
    """A :class:`~ctxsent.models.bi_encoder.BiEncoder` as it is: Transformer (its
    ``max_length`` as ``max_seq_length``), mean Pooling, Normalize, the layout
    all-MiniLM-L6-v2 itself ships in."""
    return encoder.transformer, encoder.tokenizer, encoder.max_length, "mean", True, None


def _cross_thought_as_bert(model) -> tuple:
    """A Cross-Thought encoder with ``N = 1`` rewritten exactly as BERT + tokenizer, CLS pooling,
    no Normalize (``encode`` returns ``E``).

    With one special token Eq. 1-2 encode ``[s; x_1 .. x_l]`` at positions ``0 .. l`` in
    segment 0 and take ``E = H[0]``: BERT's ``[CLS] x_1 .. x_l`` with CLS pooling, once the
    first slot's input embedding is ``s`` and no ``[SEP]`` follows. So ``s`` becomes a new
    word-embedding row (in a copy of the network) that the tokenizer's post-processor puts
    first; no text tokenises to it, so a literal ``[CLS]`` keeps its own embedding. The
    tokenizer is saved as a plain ``PreTrainedTokenizerFast`` (BERT's class would rebuild the
    ``[CLS] $A [SEP]`` post-processor on load). One difference stays: a blank text, which
    ``encode`` reads as ``[UNK]``, is the special token alone. ``N > 1`` concatenates ``N``
    states, which no sentence-transformers pooling does: refused."""
    import copy

    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    if model.config.num_special != 1:
        raise InputError(
            f"a Cross-Thought embedding with {model.config.num_special} special tokens "
            "concatenates their states, which no sentence-transformers pooling reproduces; "
            "only num_special=1 exports exactly",
            field="num_special",
        )
    if not getattr(model.tokenizer, "is_fast", False):
        raise InputError(
            "exporting a Cross-Thought model needs a fast tokenizer", field="tokenizer"
        )
    bert = copy.deepcopy(model.bert).eval()
    special_id = bert.config.vocab_size
    bert.resize_token_embeddings(special_id + 1, mean_resizing=False)
    bert.get_input_embeddings().weight.data[special_id] = model.special.data[0]
    backend = copy.deepcopy(model.tokenizer.backend_tokenizer)
    backend.no_truncation()
    backend.no_padding()
    backend.post_processor = processors.TemplateProcessing(
        single="[SPECIAL]:0 $A:0", special_tokens=[("[SPECIAL]", special_id)]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        model_max_length=model.config.max_length + 1,
        **model.tokenizer.special_tokens_map,
    )
    # CLS pooling, no Normalize (encode returns E); not transformers 5's TokenizersBackend
    return bert, tokenizer, tokenizer.model_max_length, "cls", False, "PreTrainedTokenizerFast"


def export_cross_encoder(ranker, out: str | Path, overwrite: bool = False) -> Path:
    """Write a pairwise cross-encoder ranker as a sentence-transformers CrossEncoder folder."""
    ranker = _exporter(ranker, "cross-encoder")
    with atomic_path(out, export_kind("cross-encoder"), overwrite=overwrite) as staged:
        staged.mkdir()
        config = ranker.model.config
        config.sentence_transformers = {"activation_fn": "torch.nn.modules.linear.Identity"}
        try:
            ranker.model.save_pretrained(staged, safe_serialization=True)
        finally:
            del config.sentence_transformers
        max_length = ranker.tokenizer.model_max_length
        ranker.tokenizer.model_max_length = ranker.config.max_length
        try:
            ranker.tokenizer.save_pretrained(staged)
        finally:
            ranker.tokenizer.model_max_length = max_length
        write_export_card(staged, "cross-encoder", ranker.kind, ranker.config.backbone)
    return Path(out)


def _pairwise(ranker):
    """A cross-encoder ranker that reads (question, candidate) pairs, as a CrossEncoder does."""
    if ranker.contextual:
        raise InputError(
            "a CrossEncoder reads (question, candidate) pairs; this model is contextual "
            "(export it with --to onnx)",
            field="model",
        )
    return ranker


def export_onnx(
    model,
    out: str | Path,
    opset: int = 17,
    overwrite: bool = False,
    quantize: Quantization = "none",
) -> Path:
    """Write a model's network to ``out/model.onnx`` with its tokenizer and
    :data:`~ctxsent.onnx_runtime.ONNX_CONFIG`, which :func:`ctxsent.onnx_runtime.load_onnx`
    (``ctxsent.load(out)``) runs without torch.

    A cross-encoder ranker (pairwise or contextual) takes ``input_ids``, ``token_type_ids``,
    ``attention_mask`` and gives ``score``, its logit; a bi-encoder (ranker) takes
    ``input_ids``, ``attention_mask`` of a text and gives ``embedding`` (L2-normalised, whose
    dot products are the ranker's cosines) and ``pooled``. Batch and sequence axes are
    dynamic. ``quantize="int8"`` writes int8 weights (:func:`_quantize_int8`) and says so in
    the config: the one export that is not exact. Other models are refused before anything
    is written."""
    import torch

    if quantize not in ("none", "int8"):
        raise InputError(f"quantize must be none or int8, got {quantize!r}", field="quantize")
    exported = _exporter(model, "onnx")
    if not getattr(exported.tokenizer, "is_fast", False):
        raise InputError("ONNX export needs a fast tokenizer (tokenizer.json)", field="tokenizer")
    was_training = model.training  # the wrapper is new: its own flag says nothing
    exported.module.eval()
    try:
        with (
            atomic_path(out, export_kind("onnx"), overwrite=overwrite) as staged,
            torch.inference_mode(),
        ):
            staged.mkdir()
            graph = staged / ("model-fp32.onnx" if quantize == "int8" else ONNX_MODEL)
            inputs = list(exported.sample)
            torch.onnx.export(
                exported.module,
                tuple(exported.sample.values()),
                str(graph),
                input_names=inputs,
                output_names=list(exported.outputs),
                dynamic_axes={
                    **{name: {0: "batch", 1: "sequence"} for name in inputs},
                    **{name: {0: "batch"} for name in exported.outputs},
                },
                opset_version=opset,
                dynamo=False,
            )
            if quantize == "int8":
                _quantize_int8(graph, staged / ONNX_MODEL)
                graph.unlink()
            exported.tokenizer.save_pretrained(staged)
            config = OnnxConfig(exported.kind, exported.contextual, exported.max_length, quantize)
            _write_json(staged / ONNX_CONFIG, asdict(config))
            backbone = getattr(getattr(model, "config", None), "backbone", None)
            write_export_card(staged, "onnx", exported.kind, backbone)
    finally:
        model.train(was_training)
    return Path(out)


@dataclass
class _OnnxGraph:
    """What :func:`export_onnx` traces: a module of the named input tensors, a sample of
    them, its outputs' names, the tokenizer and the :class:`OnnxConfig` fields."""

    module: Any
    sample: dict[str, Any]
    outputs: tuple[str, ...]
    tokenizer: Any
    kind: str
    contextual: bool
    max_length: int


#: The records an ONNX graph is traced on.
SAMPLE = [As2Record("q", "what is exported?", "an onnx graph of the ranker.", 0, "a", "b")] * 2


def _cross_encoder_graph(ranker) -> _OnnxGraph:
    """A cross-encoder ranker's logits as a function of the three input tensors."""
    import torch

    class Scorer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ranker = ranker

        def forward(self, input_ids, token_type_ids, attention_mask):
            inputs = (input_ids, token_type_ids, attention_mask)
            return self.ranker(dict(zip(CROSS_ENCODER_INPUTS, inputs, strict=True)))

    _, batch = next(ranker.sorted_batches(SAMPLE, len(SAMPLE), torch.device("cpu")))
    return _OnnxGraph(
        Scorer(),
        {name: batch[name] for name in CROSS_ENCODER_INPUTS},
        ("score",),
        ranker.tokenizer,
        ranker.kind,
        ranker.contextual,
        ranker.config.max_length,
    )


def _bi_encoder_graph(encoder) -> _OnnxGraph:
    """A bi-encoder's normalised and raw mean-pooled embedding of each text."""
    import torch

    from ctxsent.models.bi_encoder import BiEncoderRanker

    class Embedder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids, attention_mask):
            pooled = self.encoder(input_ids, attention_mask)
            return torch.nn.functional.normalize(pooled, p=2, dim=1), pooled

    return _OnnxGraph(
        Embedder(),
        encoder.tokenize([r.candidate for r in SAMPLE]),
        ("embedding", "pooled"),
        encoder.tokenizer,
        BiEncoderRanker.kind,
        False,
        encoder.max_length,
    )


def _exports() -> dict[str, dict[type, Callable]]:
    """Format -> model class -> what the format is written from, given the model (built on
    first use: the model modules import torch)."""
    from ctxsent.models.bi_encoder import BiEncoder
    from ctxsent.models.cross_encoder import CrossEncoderRanker
    from ctxsent.models.cross_thought import CrossThoughtModel

    return {
        "sentence-transformers": {
            BiEncoder: _bi_encoder_as_bert,
            CrossThoughtModel: _cross_thought_as_bert,
        },
        "cross-encoder": {CrossEncoderRanker: _pairwise},
        "onnx": {CrossEncoderRanker: _cross_encoder_graph, BiEncoder: _bi_encoder_graph},
    }


#: Each format's one-line refusal of a model it has no entry for (``{name}``: its class).
REFUSALS = {
    "sentence-transformers": "a {name} has no exact sentence-transformers equivalent; "
    "sentence-transformers export takes a bi-encoder or a Cross-Thought model (rankers "
    "export with --to cross-encoder or --to onnx)",
    "cross-encoder": "CrossEncoder export takes a cross-encoder ranker, got a {name}",
    "onnx": "ONNX export takes a cross-encoder or bi-encoder ranker, got a {name}",
}
EARLY_EXITS = (
    " (its scores come from early exits that prune candidates per question, which one "
    "ONNX forward pass does not reproduce)"
)


def _exporter(model, fmt: str) -> Any:
    """What ``fmt`` is written from: the entry (:func:`_exports`) of ``model``'s class, or
    of the encoder it is built on (:class:`~ctxsent.protocols.WrapsEncoder`), applied to it;
    for any other model an :class:`InputError`, before anything is written."""
    table = _exports()[fmt]
    for candidate in (model, model.sentence_encoder if isinstance(model, WrapsEncoder) else None):
        if type(candidate) in table:
            return table[type(candidate)](candidate)
    early_exits = EARLY_EXITS if fmt == "onnx" and isinstance(model, StagedRanker) else ""
    raise InputError(REFUSALS[fmt].format(name=type(model).__name__) + early_exits, field="model")


def _quantize_int8(source: Path, target: Path) -> None:
    """Dynamic int8 quantisation (onnxruntime ``quantize_dynamic``) of the graph's ``MatMul``
    nodes with constant weights: the transformer's linear layers, with int8 weights per
    output channel and activations quantised per batch at run time. Embedding tables, and
    the 2-D ``Gemm`` of a cross-encoder's head on the ``[CLS]`` vector, stay fp32.

    Per-channel because per-tensor weights moved MiniLM bi-encoder cosines by up to 0.088
    (Spearman 0.975 with fp32) on 40 WikiQA dev pairs, per-channel by 0.032 (0.996); on all
    of WikiQA dev the trained ``bi-encoder`` moved by 0.174 and 0.064 (unsigned weights:
    0.103 and 0.052, dev MAP within 0.014 of fp32's 0.786 for all four). On this AVX2 CPU
    without VNNI int8 saved only 5-8% of the CPU time. onnxruntime's pre-processing runs
    first, as it asks (it changed no score there); its symbolic shape inference is skipped,
    as it cannot finish on this graph.
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    prepared = source.with_name("model-prepared.onnx")
    quant_pre_process(str(source), str(prepared), skip_symbolic_shape=True)
    quantize_dynamic(
        prepared,
        target,
        op_types_to_quantize=["MatMul"],
        per_channel=True,
        weight_type=QuantType.QInt8,
    )
    prepared.unlink()


EXPORTERS = {
    "sentence-transformers": export_sentence_transformer,
    "cross-encoder": export_cross_encoder,
    "onnx": export_onnx,
}
#: The keys of :data:`EXPORTERS`.
ExportFormat = Literal["sentence-transformers", "cross-encoder", "onnx"]


def export_model(
    model: str,
    out: str | Path,
    to: ExportFormat = "onnx",
    overwrite: bool = False,
    quantize: Quantization = "none",
) -> Path:
    """Export the model ``model`` names (a saved folder or a :func:`ctxsent.load` spec) in
    format ``to``; a backbone or ``bi-encoder[:BACKBONE]`` exports to sentence-transformers
    as its zero-shot bi-encoder. The output folder is checked before the model loads."""
    if quantize != "none" and to != "onnx":
        raise InputError("--quantize applies to --to onnx only", field="quantize")
    check_output(out, export_kind(to), overwrite)
    if to == "sentence-transformers" and not is_model_folder(model):
        from ctxsent.models.bi_encoder import BiEncoder

        encoder = BiEncoder.from_pretrained(zero_shot_backbone(model))
        return export_sentence_transformer(encoder, out, overwrite=overwrite)
    options = {"quantize": quantize} if to == "onnx" else {}
    return EXPORTERS[to](load(model), out, overwrite=overwrite, **options)
