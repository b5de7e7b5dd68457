"""Word tokenisation and a word vocabulary from a corpus.

RNN-CNN (section 4) and Mean-Max AAE (section 4.2) train on "the 20k most frequent words"
(:meth:`Vocabulary.build`). Choices left open: text is lowercased (GloVe 6B is uncased);
tokens are PTB-like (clitics such as ``n't`` and ``'s`` split off, punctuation on its own);
frequency ties break alphabetically, so a vocabulary is reproducible; four special tokens
come first (:data:`SPECIALS`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ctxsent.errors import InputError
from ctxsent.io import atomic_write, read_lines

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<s>", "</s>"
SPECIALS = (PAD, UNK, BOS, EOS)
PAD_ID, UNK_ID, BOS_ID, EOS_ID = range(4)

_WORD_PIECES = re.compile(r"n't|'(?:s|re|ve|ll|d|m)(?!\w)|\w+(?=n't)|\w+|[^\w\s]")


def word_tokens(text: str, lowercase: bool = True) -> list[str]:
    """Split ``text`` into words, clitics and punctuation marks (``"Don't!"`` -> do n't !)."""
    return _WORD_PIECES.findall(text.lower() if lowercase else text)


@dataclass(frozen=True)
class Vocabulary:
    """Words by id; ids 0-3 are :data:`SPECIALS`, unknown words map to ``<unk>``."""

    words: list[str]
    lowercase: bool = True
    index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if tuple(self.words[: len(SPECIALS)]) != SPECIALS:
            raise ValueError(f"a vocabulary starts with {SPECIALS}, got {self.words[:4]}")
        index = {word: i for i, word in enumerate(self.words)}
        if len(index) != len(self.words):
            raise ValueError("duplicate words in vocabulary")
        object.__setattr__(self, "index", index)

    def __len__(self) -> int:
        return len(self.words)

    @classmethod
    def build(
        cls, sentences: Iterable[str], size: int = 20_000, lowercase: bool = True
    ) -> Vocabulary:
        """The ``size`` most frequent words of ``sentences`` (specials not counted in ``size``)."""
        counts: Counter[str] = Counter()
        for sentence in sentences:
            counts.update(word_tokens(sentence, lowercase))
        return cls.from_counts(counts, size, lowercase)

    @classmethod
    def from_counts(
        cls, counts: Mapping[str, int], size: int = 20_000, lowercase: bool = True
    ) -> Vocabulary:
        """The ``size`` most frequent words of ``counts`` (word -> count), ties alphabetical."""
        ranked = sorted(
            ((word, n) for word, n in counts.items() if word not in SPECIALS),
            key=lambda item: (-item[1], item[0]),
        )[:size]
        if not ranked:
            raise InputError("no words to build a vocabulary from (empty corpus?)")
        return cls([*SPECIALS, *(word for word, _ in ranked)], lowercase)

    def extended(self, words: Iterable[str]) -> Vocabulary:
        """This vocabulary followed by the new ones among ``words`` (vocabulary expansion)."""
        new = [w for w in dict.fromkeys(words) if w not in self.index]
        return Vocabulary([*self.words, *new], self.lowercase)

    def ids(self, text: str) -> list[int]:
        """Word ids of ``text``; out-of-vocabulary words become ``<unk>``."""
        return [self.index.get(token, UNK_ID) for token in word_tokens(text, self.lowercase)]

    def save(self, path: str | Path) -> None:
        """Write one word per line (atomically); the first line records the casing."""
        with atomic_write(path) as handle:
            handle.write(f"#lowercase={int(self.lowercase)}\n")
            handle.writelines(word + "\n" for word in self.words)

    @classmethod
    def load(cls, path: str | Path) -> Vocabulary:
        lines = [line for _, line in read_lines(path)]
        if not lines or not lines[0].startswith("#lowercase="):
            raise InputError("not a vocabulary file (no '#lowercase=' header)", path=path, line=1)
        try:
            return cls(lines[1:], lowercase=lines[0] == "#lowercase=1")
        except ValueError as err:
            raise InputError(str(err), path=path) from None
