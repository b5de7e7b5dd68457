"""What a model can do, asked by name: ``isinstance(model, StagedRanker)``, not ``hasattr``.

These are structural types (:class:`typing.Protocol`): a class qualifies by having the
methods and attributes, whether or not it inherits from anything here, so a user's own
ranker or encoder works wherever ctxsent's do. The commands, the service, evaluation and
export dispatch on them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ctxsent.errors import InputError


@runtime_checkable
class Encoder(Protocol):
    """Texts to one vector each: ``encode(texts, **kwargs) -> (n, dim)``.

    ``texts`` is a sequence of strings or, as MTEB 2 gives it, an iterable of batches
    (:func:`encode_inputs`); ctxsent's encoders take MTEB's keyword arguments too. MTEB 2
    evaluates a model that also has ``similarity``, ``similarity_pairwise`` and
    ``mteb_model_meta``: :func:`ctxsent.mteb_encoder` adds them.
    """

    def encode(self, texts: Sequence[str], **kwargs: Any) -> np.ndarray: ...


#: What MTEB tells ``encode`` about a call (``EncoderProtocol.encode``): the task, split and
#: subset, whether the texts are queries or documents, and MTEB 1's ``task_name``. ctxsent's
#: encoders embed a text the same way whatever they say (no prompts, no instructions).
MTEB_CONTEXT = frozenset({"task_metadata", "hf_split", "hf_subset", "prompt_type", "task_name"})
#: MTEB's ``encode_kwargs`` (``EncodeKwargs``): ``batch_size`` binds to an encoder's own
#: argument (an encoder without batches ignores it), ``show_progress_bar`` stands for
#: ``show_progress``, and ``precision`` (the embeddings' quantisation) must be ``float32``.
MTEB_OPTIONS = frozenset({"batch_size", "show_progress_bar", "precision"})


def as_texts(texts: Iterable[str] | Iterable[Mapping[str, Any]]) -> list[str]:
    """``encode``'s input as a list of strings, in order: a sequence of strings, or an iterable
    of batches, mappings whose ``"text"`` holds a list of strings (the ``DataLoader`` that
    MTEB 2 passes; other keys, such as a corpus's ``"id"``, are ignored).

    Raises :class:`~ctxsent.errors.InputError` naming the item for anything else: a single
    string (which would be read as one text per character), a batch without ``"text"``, or
    an item that is not a string.
    """
    if isinstance(texts, str):
        raise InputError("expected a list of strings, got a single string", field="texts")
    out: list[str] = []
    for i, item in enumerate(texts):
        if isinstance(item, str):
            out.append(item)
            continue
        if not isinstance(item, Mapping):
            raise InputError(f"item {i} is not a string: {type(item).__name__}", field="texts")
        if "text" not in item:
            keys = ", ".join(map(repr, item)) or "none"
            raise InputError(f"batch {i} has no 'text' key (keys: {keys})", field="texts")
        batch = item["text"]
        is_list = isinstance(batch, Sequence) and not isinstance(batch, str)
        if not (is_list and all(isinstance(text, str) for text in batch)):
            raise InputError(f"batch {i}: 'text' is not a list of strings", field="texts")
        out.extend(batch)
    return out


def encode_inputs(
    texts: Iterable[str] | Iterable[Mapping[str, Any]],
    options: Mapping[str, Any],
    show_progress: bool = False,
) -> tuple[list[str], bool]:
    """The texts (:func:`as_texts`) and whether to show a progress bar, for an ``encode``
    called with keyword arguments ``options`` beyond its own.

    ``options`` may hold MTEB's :data:`MTEB_CONTEXT` and :data:`MTEB_OPTIONS`, which do not
    change the embeddings; any other name raises :class:`TypeError`, as Python does for an
    unexpected keyword argument, so that (say) ``normalize=True`` given to an encoder without
    it is not ignored.
    """
    unknown = sorted(set(options) - MTEB_CONTEXT - MTEB_OPTIONS)
    if unknown:
        raise TypeError(f"encode() got unexpected keyword arguments: {', '.join(unknown)}")
    if options.get("precision") not in (None, "float32"):
        raise InputError(f"embeddings are float32; got {options['precision']!r}", field="precision")
    return as_texts(texts), bool(options.get("show_progress_bar", show_progress))


@runtime_checkable
class Ranker(Protocol):
    """Scores AS2 records (:class:`~ctxsent.tasks.as2_records.As2Record`), higher first;
    :class:`~ctxsent.models.ranker_base.As2Ranker` adds ``rank`` and ``rank_document``."""

    contextual: bool

    def predict(self, records: Sequence[Any], **kwargs: Any) -> np.ndarray: ...

    def rank(self, question: str, candidates: Sequence[str], **kwargs: Any) -> list: ...

    def rank_document(self, question: str, document: str, top_k: int | None = 5) -> list: ...


@runtime_checkable
class StagedRanker(Ranker, Protocol):
    """A ranker that prunes candidates in stages (:mod:`ctxsent.models.staged`):
    ``predict(..., alpha=...)`` takes drop rates, ``alphas`` are its defaults and
    ``last_cost`` the :class:`~ctxsent.models.staged.CascadeCost` of its latest call."""

    alphas: list[float]
    last_cost: Any

    @property
    def num_stages(self) -> int: ...


@runtime_checkable
class SteppedRanker(Ranker, Protocol):
    """A ranker that scores a call in steps, for a service that interleaves requests
    (:mod:`ctxsent.serving.batching`): ``predict_steps(records, batch_size, max_chars=...,
    **options)`` yields each step's cost (characters) and returns the scores; a step holds
    at most ``max_chars`` characters of input (one record at least)."""

    def predict_steps(
        self, records: Sequence[Any], batch_size: int = 64, **kwargs: Any
    ) -> Iterator[float]: ...


@runtime_checkable
class LayeredRanker(Ranker, Protocol):
    """A transformer ranker: ``num_layers``, the layers every candidate goes through (its
    cost per candidate, as a Sequential Ranker's stage)."""

    @property
    def num_layers(self) -> int: ...


@runtime_checkable
class InferencePrecision(Protocol):
    """A model whose inference precision can be chosen (:mod:`ctxsent.models.precision`):
    ``auto``, ``fp32``, ``bf16``, ``fp16`` or, where supported, ``int8``."""

    precision: str


@runtime_checkable
class Evaluator(Protocol):
    """Scores a model on held-out data: ``evaluator(model) -> metrics``, of which
    ``primary_metric`` names the one to report and to stop early on."""

    primary_metric: str

    def __call__(self, model: Any) -> dict[str, float]: ...


@runtime_checkable
class SavedModel(Protocol):
    """A model that saves itself as a folder :func:`ctxsent.load` reads back: ``kind`` (its
    manifest's) and ``save_pretrained(path, overwrite=False)``."""

    kind: str

    def save_pretrained(self, path: Any, *args: Any, **kwargs: Any) -> Any: ...


@runtime_checkable
class WrapsEncoder(Protocol):
    """A ranker built on a sentence encoder that it hands out as ``sentence_encoder`` (to
    export, or to rank passages with)."""

    @property
    def sentence_encoder(self) -> Any: ...
