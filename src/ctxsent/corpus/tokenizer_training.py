"""Training a BERT-style WordPiece tokenizer on a corpus folder (for models built from scratch).

SSP's ELECTRA variant builds its model from scratch and needs a vocabulary:
:func:`train_wordpiece` learns one with HF ``tokenizers`` from a corpus folder's sentences,
streamed in batches, and saves a fast-tokenizer folder: ``BertNormalizer`` (lowercased,
accents stripped), ``BertPreTokenizer``, ``##`` continuations, ``[PAD] [UNK] [CLS] [SEP]
[MASK]`` at ids 0-4 and BERT's ``[CLS] a [SEP] b [SEP]`` template: the pipeline
:class:`~ctxsent.objectives.ssp.SentenceTokenizer` tokenises word by word.

Determinism: ``WordPieceTrainer`` gives ``##x`` tokens ids in hash-map order and breaks
merge ties by id, so two runs can differ (huggingface/tokenizers#1794). We count the
characters in a first pass, keep the ``limit_alphabet`` most frequent (ties by code point)
and hand the trainer that alphabet and, as reserved tokens, every ``##x`` in code-point
order, fixing every id and tie-break; the tokenizer is then rebuilt from the learned
vocabulary with only the five real special tokens marked special.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from ctxsent.corpus.storage import load_corpus
from ctxsent.errors import InputError
from ctxsent.io import atomic_path

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
SPECIALS = (PAD, UNK, CLS, SEP, MASK)
PREFIX = "##"
_BATCH = 256  # corpus documents per streamed batch


def _pipeline(vocab: dict[str, int] | None = None):
    """An (untrained or trained) WordPiece tokenizer with BERT's normaliser and pre-tokenizer."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers

    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token=UNK, continuing_subword_prefix=PREFIX))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece(prefix=PREFIX)
    return tokenizer


def _sentence_batches(corpus, max_documents: int | None) -> Iterator[list[str]]:
    dataset = corpus.dataset
    if max_documents is not None:
        dataset = dataset.select(range(min(max_documents, len(dataset))))
    for batch in dataset.iter(batch_size=_BATCH):
        yield [s for paragraphs in batch["paragraphs"] for p in paragraphs for s in p]


def _alphabet(normalizer, batches: Iterator[list[str]], limit: int) -> list[str]:
    """The ``limit`` most frequent characters of the trainer's words (ties by code point).

    ``BertNormalizer`` turns every whitespace character into a space and
    ``BertPreTokenizer`` drops only whitespace, so the words' characters are
    those of the normalised text without spaces (counted a batch at a time).
    """
    counts: Counter[str] = Counter()
    for sentences in batches:
        counts.update(normalizer.normalize_str(" ".join(sentences)))
    counts.pop(" ", None)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:limit]
    return sorted(char for char, _ in ranked)


def train_wordpiece(
    corpus: str | Path,
    out: str | Path,
    vocab_size: int = 30522,
    max_documents: int | None = None,
    limit_alphabet: int = 1000,
    min_frequency: int = 2,
):
    """Train a WordPiece tokenizer on the sentences of ``corpus``; save and return it.

    ``vocab_size`` counts everything (specials, characters, ``##`` forms,
    merges): BERT's 30522 at paper scale, ~8000 for the CPU presets.
    ``max_documents`` uses the corpus' first documents only. The output is
    written atomically to ``out`` (a ``save_pretrained`` folder).
    """
    from tokenizers import processors, trainers
    from transformers import BertTokenizerFast

    if vocab_size <= len(SPECIALS):
        raise InputError(f"must exceed {len(SPECIALS)}, got {vocab_size}", field="vocab_size")
    loaded = load_corpus(corpus)
    pipeline = _pipeline()
    batches = _sentence_batches(loaded, max_documents)
    alphabet = _alphabet(pipeline.normalizer, batches, limit_alphabet)
    if not alphabet:
        raise InputError("has no sentences to train a tokenizer on", path=corpus)
    needed = len(SPECIALS) + 2 * len(alphabet)
    if vocab_size < needed:
        raise InputError(
            f"{vocab_size} is too small for this corpus: the special tokens, its "
            f"{len(alphabet)} characters and their {PREFIX} forms need {needed}",
            field="vocab_size",
        )
    continuations = [PREFIX + char for char in alphabet]
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=[*SPECIALS, *continuations],
        initial_alphabet=alphabet,
        limit_alphabet=len(alphabet),
        continuing_subword_prefix=PREFIX,
        show_progress=False,
    )
    pipeline.train_from_iterator(_sentence_batches(loaded, max_documents), trainer)
    tokenizer = _pipeline(pipeline.get_vocab())
    tokenizer.add_special_tokens(list(SPECIALS))
    cls, sep = tokenizer.token_to_id(CLS), tokenizer.token_to_id(SEP)
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{CLS}:0 $A:0 {SEP}:0",
        pair=f"{CLS}:0 $A:0 {SEP}:0 $B:1 {SEP}:1",
        special_tokens=[(CLS, cls), (SEP, sep)],
    )
    fast = BertTokenizerFast(
        tokenizer_object=tokenizer,
        unk_token=UNK,
        sep_token=SEP,
        pad_token=PAD,
        cls_token=CLS,
        mask_token=MASK,
        model_max_length=512,
    )
    with atomic_path(out, "tokenizer") as staged:
        fast.save_pretrained(staged)
    return fast
