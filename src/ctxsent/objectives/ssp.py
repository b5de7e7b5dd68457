"""SSP ("Sentences in Same Paragraph") examples for context-aware AS2 pre-training.

SSP paper, section 4 and appendix A.1: ``(s1, s2, context, label)`` triples from a
document -> paragraph -> sentence corpus. A positive takes ``s1`` (one sentence) and ``s2``
(1-3 contiguous sentences, length drawn uniformly) from one paragraph ``P``; up to 2 hard
negatives take ``s2`` from other paragraphs of the document, easy negatives from another
document, until each positive has 4 negatives. The context, always around ``s2``, is per
objective: SDC the first paragraph of ``s2``'s document; DPC ``s2``'s paragraph without
``s1`` and ``s2``; DSLC the sentences just before and after ``s2`` (at least one); All one
of the three per positive (and its negatives), drawn among those the paragraph can serve,
with one classification head.

Decisions where the paper is silent (so that the label cannot be read off the context):

* SDC never takes ``s2`` (or a positive) from a document's first paragraph, which would
  contain ``s2``; single-paragraph documents give no SDC examples.
* DPC needs a non-empty context: ``|P| >= |s2| + 2`` for a positive, ``|P'| >= |s2| + 1``
  for a negative's paragraph.
* DSLC never uses ``s1`` as a neighbour of ``s2``; a positive's ``s2`` needs another one.
* The ``s2`` length drawn from 1..3 is lowered until the paragraph allows it; the
  ``(s1, s2)`` placement is uniform over the valid ones.
* One positive per eligible paragraph by default (``positives_per_paragraph``);
  hard-negative paragraphs are distinct.
* Easy negatives come from another document of the same block of ``block_size``
  consecutive documents. Blocks are independent work units with random streams seeded by
  ``(seed, block)``: the output is the same for any number of processes, and one block at
  a time is in memory.

Each sentence of a block is tokenised once (fast tokenizer, batched) and the segments are
assembled from token lists with the special tokens, segment ids (0, 1, 2) and truncation
of :func:`ctxsent.models.segments.encode_segments` (equal output for WordPiece, as a test
checks).
"""

from __future__ import annotations

import copy
import enum
import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain

from ctxsent.errors import InputError, check_range
from ctxsent.models.segments import segment_budgets


class SspObjective(enum.StrEnum):
    SDC = "sdc"
    DPC = "dpc"
    DSLC = "dslc"
    ALL = "all"


#: id stored in the ``objective`` column of built examples
OBJECTIVE_IDS = {SspObjective.SDC: 0, SspObjective.DPC: 1, SspObjective.DSLC: 2}
_SINGLE = (SspObjective.SDC, SspObjective.DPC, SspObjective.DSLC)


@dataclass(frozen=True)
class SspConfig:
    """How examples are drawn (section 4, appendix A.1) and encoded (appendix C: 128 tokens)."""

    objective: SspObjective = SspObjective.DPC
    negatives: int = 4
    max_hard_negatives: int = 2
    max_s2_sentences: int = 3
    positives_per_paragraph: int = 1
    block_size: int = 500
    max_length: int = 128
    seed: int = 0

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "objective", SspObjective(self.objective))
        except ValueError:
            choices = ", ".join(o.value for o in SspObjective)
            raise InputError(
                f"unknown SSP objective {self.objective!r} (choose {choices})", field="objective"
            ) from None
        check_range(self, "negatives max_s2_sentences positives_per_paragraph block_size", 1)
        check_range(self, "max_hard_negatives", 0, self.negatives)
        check_range(self, "max_length", 8)


@dataclass(frozen=True, slots=True)
class SspExample:
    """One triple; segments are flat sentence indices into the block's sentence list."""

    s1: tuple[int, ...]
    s2: tuple[int, ...]
    context: tuple[int, ...]
    label: int
    objective: int


@lru_cache(maxsize=4096)
def _placements(n: int, k: int, objective: SspObjective) -> tuple[tuple[int, int], ...]:
    """Valid ``(s1, s2_start)`` pairs for a positive with a ``k``-sentence ``s2`` in ``n``."""
    pairs = []
    for start in range(n - k + 1):
        for s1 in range(n):
            if start <= s1 < start + k:
                continue
            if objective is SspObjective.DPC and n - k - 1 < 1:
                continue
            if objective is SspObjective.DSLC:
                before = start - 1 >= 0 and start - 1 != s1
                after = start + k < n and start + k != s1
                if not (before or after):
                    continue
            pairs.append((s1, start))
    return tuple(pairs)


def _can_be_positive(n: int, paragraph: int, objective: SspObjective) -> bool:
    if objective is SspObjective.SDC and paragraph == 0:
        return False
    return bool(_placements(n, 1, objective))


def _can_be_negative(n: int, paragraph: int, objective: SspObjective) -> bool:
    if objective is SspObjective.SDC:
        return paragraph > 0 and n >= 1
    return n >= 2


class _Document:
    """Flat sentence offsets of one document in its block, and its eligible paragraphs."""

    __slots__ = ("starts", "sizes", "negative_sources")

    def __init__(self, offset: int, paragraphs: Sequence[Sequence[str]]) -> None:
        self.sizes = [len(p) for p in paragraphs]
        self.starts = []
        for size in self.sizes:
            self.starts.append(offset)
            offset += size
        self.negative_sources = {
            objective: [i for i, n in enumerate(self.sizes) if _can_be_negative(n, i, objective)]
            for objective in _SINGLE
        }


class SspBuilder:
    """Draws the SSP examples of one block of documents (see the module docstring)."""

    def __init__(self, config: SspConfig) -> None:
        self.config = config
        self.objectives = _SINGLE if config.objective is SspObjective.ALL else (config.objective,)

    def block_examples(
        self, block: int, documents: Sequence[Sequence[Sequence[str]]]
    ) -> tuple[list[str], list[SspExample]]:
        """Flat sentence list of the block and its examples, in a seed-determined order."""
        rng = random.Random(f"ssp:{self.config.seed}:{block}")
        sentences: list[str] = []
        docs = []
        for paragraphs in documents:
            docs.append(_Document(len(sentences), paragraphs))
            for paragraph in paragraphs:
                sentences.extend(paragraph)
        easy_sources = {
            objective: [i for i, d in enumerate(docs) if d.negative_sources[objective]]
            for objective in self.objectives
        }
        examples: list[SspExample] = []
        for index, doc in enumerate(docs):
            for paragraph, n in enumerate(doc.sizes):
                usable = [o for o in self.objectives if _can_be_positive(n, paragraph, o)]
                if not usable:
                    continue  # too short for a positive (section 4, DSLC)
                for _ in range(self.config.positives_per_paragraph):
                    objective = usable[0] if len(usable) == 1 else rng.choice(usable)
                    examples += self._group(rng, docs, index, paragraph, objective, easy_sources)
        return sentences, examples

    def _group(self, rng, docs, index, paragraph, objective, easy_sources) -> list[SspExample]:
        """A positive for ``paragraph`` of ``docs[index]`` and its negatives."""
        config, doc = self.config, docs[index]
        n, first = doc.sizes[paragraph], doc.starts[paragraph]
        k = rng.randint(1, config.max_s2_sentences)
        while not (pairs := _placements(n, k, objective)):
            k -= 1
        s1, start = rng.choice(pairs)
        s2 = tuple(range(first + start, first + start + k))
        context = _context(doc, paragraph, start, k, objective, s1)
        tag = OBJECTIVE_IDS[objective]
        s1 = (first + s1,)
        group = [SspExample(s1, s2, context, 1, tag)]
        hard = [p for p in doc.negative_sources[objective] if p != paragraph]
        hard = rng.sample(hard, min(config.max_hard_negatives, len(hard)))
        for p in hard:
            group.append(self._negative(rng, doc, p, s1, objective, tag))
        others = easy_sources[objective]
        if len(others) > 1 or (others and others[0] != index):
            for _ in range(config.negatives - len(hard)):
                other = index
                while other == index:
                    other = others[rng.randrange(len(others))]
                source = docs[other]
                p = rng.choice(source.negative_sources[objective])
                group.append(self._negative(rng, source, p, s1, objective, tag))
        return group

    def _negative(self, rng, doc, paragraph, s1, objective, tag) -> SspExample:
        """``s2`` drawn from ``paragraph`` of ``doc``, with the context the objective gives it."""
        n, first = doc.sizes[paragraph], doc.starts[paragraph]
        room = n if objective is SspObjective.SDC else n - 1  # DPC/DSLC keep a context sentence
        k = min(rng.randint(1, self.config.max_s2_sentences), room)
        start = rng.randrange(n - k + 1)
        s2 = tuple(range(first + start, first + start + k))
        return SspExample(s1, s2, _context(doc, paragraph, start, k, objective), 0, tag)


def _context(doc, paragraph, start, k, objective, s1=-1) -> tuple[int, ...]:
    """The objective's context of ``s2`` = sentences ``start .. start + k - 1`` of
    ``paragraph`` of ``doc``, without the paragraph's sentence ``s1``."""
    if objective is SspObjective.SDC:
        return tuple(range(doc.starts[0], doc.starts[0] + doc.sizes[0]))
    n, first = doc.sizes[paragraph], doc.starts[paragraph]
    if objective is SspObjective.DPC:
        return tuple(first + i for i in range(n) if i != s1 and not start <= i < start + k)
    return tuple(first + i for i in (start - 1, start + k) if 0 <= i < n and i != s1)


_WORD_LOCAL_NORMALIZERS = ("BertNormalizer", "Lowercase", "NFD", "NFKD", "StripAccents")
_WHITESPACE_PRE_TOKENIZERS = ("BertPreTokenizer", "Whitespace", "WhitespaceSplit")


class SentenceTokenizer:
    """Token ids of sentences without special tokens, batched on the fast tokenizer.

    With a WordPiece-style pipeline (a normaliser that acts per character and a
    pre-tokenizer that splits on whitespace) a sentence's tokens are the
    concatenation of its whitespace-separated words' tokens, so each distinct
    word is tokenised once and cached (Zipf: a block's words repeat a lot).
    Any other tokenizer tokenises whole sentences. Both give the ids of
    ``tokenizer(sentences, add_special_tokens=False)``.
    """

    def __init__(self, tokenizer, max_cache: int = 2_000_000) -> None:
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is None:
            raise InputError("SSP examples need a fast (Rust) tokenizer", field="tokenizer")
        self.backend = copy.deepcopy(backend)  # saved tokenizers may pad/truncate by default
        self.backend.no_padding()
        self.backend.no_truncation()
        normalizer = type(self.backend.normalizer).__name__ if self.backend.normalizer else None
        self.word_level = (
            normalizer in (None, *_WORD_LOCAL_NORMALIZERS)
            and type(self.backend.pre_tokenizer).__name__ in _WHITESPACE_PRE_TOKENIZERS
        )
        self.max_cache = max_cache
        self.cache: dict[str, list[int]] = {}

    def _encode(self, texts: list[str]) -> list[list[int]]:
        encode = getattr(self.backend, "encode_batch_fast", self.backend.encode_batch)
        return [e.ids for e in encode(texts, add_special_tokens=False)]

    def __call__(self, sentences: Sequence[str]) -> list[list[int]]:
        if not self.word_level:
            return self._encode(list(sentences))
        words = [sentence.split() for sentence in sentences]
        cache = self.cache
        if len(cache) > self.max_cache:
            cache.clear()
        new = list({w for ws in words for w in ws if w not in cache})
        if new:
            cache.update(zip(new, self._encode(new), strict=True))
        return [list(chain.from_iterable(map(cache.__getitem__, ws))) for ws in words]


def encode_examples(
    tokenizer: SentenceTokenizer,
    sentences: Sequence[str],
    examples: Sequence[SspExample],
    max_length: int,
    cls: int,
    sep: int,
):
    """A ``pyarrow.Table`` of ``input_ids``, ``token_type_ids``, ``label``, ``objective``: each
    sentence tokenised once, joined as ``[CLS] s1 [SEP] s2 [SEP] context [SEP]`` with segment
    ids 0, 1, 2, in flat columns (one Arrow buffer each, much cheaper than lists)."""
    import numpy as np
    import pyarrow as pa

    tokens = tokenizer(sentences)
    room = max_length - 4
    ids: list[int] = []
    types: list[int] = []
    offsets = [0]
    for example in examples:
        parts = []
        for segment in (example.s1, example.s2, example.context):
            if len(segment) == 1:
                parts.append(tokens[segment[0]])
            else:
                parts.append(list(chain.from_iterable(tokens[i] for i in segment)))
        a, b, c = parts
        if len(a) + len(b) + len(c) > room:
            keep_a, keep_b, keep_c = segment_budgets([len(a), len(b), len(c)], room)
            a, b, c = a[:keep_a], b[:keep_b], c[:keep_c]
        ids += [cls, *a, sep, *b, sep, *c, sep]
        types += [0] * (len(a) + 2)
        types += [1] * (len(b) + 1)
        types += [2] * (len(c) + 1)
        offsets.append(len(ids))
    offsets_array = pa.array(np.array(offsets, dtype=np.int32))
    return pa.table(
        {
            "input_ids": pa.ListArray.from_arrays(
                offsets_array, pa.array(np.array(ids, dtype=np.int32))
            ),
            "token_type_ids": pa.ListArray.from_arrays(
                offsets_array, pa.array(np.array(types, dtype=np.int8))
            ),
            "label": pa.array(np.array([e.label for e in examples], dtype=np.int8)),
            "objective": pa.array(np.array([e.objective for e in examples], dtype=np.int8)),
        }
    )
