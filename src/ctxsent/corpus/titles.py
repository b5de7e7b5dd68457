"""Titles to exclude from a pre-training corpus (articles that overlap evaluation sets).

Titles are compared after :func:`normalize_title`, so ``Super_Bowl_50``,
``super bowl 50``, ``Ise @-@ class battleship`` and ``Ise-class battleship`` or
``Kiss You ( One Direction song )`` and ``Kiss You (One Direction song)`` match.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from pathlib import Path

from ctxsent.corpus.readers.squad import load_squad
from ctxsent.corpus.readers.wikitext import read_wikitext, unescape_wikitext
from ctxsent.errors import InputError
from ctxsent.io import read_lines
from ctxsent.tasks.as2_readers import read_json, read_wikiqa

_SPACE_AROUND_PUNCTUATION = re.compile(r"\s*([^\w\s])\s*")

#: SelQA's test articles; its dev set holds the same ones and ``Netball``.
_SELQA_TEST = (
    "Albert Einstein",
    "Apollo 11",
    "Assassination of Robert F. Kennedy",
    "Bacteria",
    "Battle of Hastings",
    "Battle of Red Cliffs",
    "Glee (TV series)",
    "Global warming",
    "Henry Moore",
    "Love the Way You Lie",
    "Maple syrup",
    "Sistine Chapel ceiling",
    "Solar System",
    "Switzerland",
    "The Dark Knight Rises",
    "The Shawshank Redemption",
    "Toy Story",
    "Vincent van Gogh",
    "Yellowstone National Park",
    "Yosemite National Park",
)

#: Articles of ``../shared/data/wikipedia-en-2019`` that also appear in an evaluation
#: set there, by evaluation set, found by comparing :func:`normalize_title` of the
#: Wikipedia ``<doc title>`` with each set's titles: the README's lists plus what its
#: exact comparison missed (six WikiText titles such as ``Meridian , Mississippi``,
#: WikiQA's ``Han Dynasty`` and ``Global Warming``), and SelQA's ``article`` fields.
EVALUATION_OVERLAPS: dict[str, tuple[str, ...]] = {
    "wikitext-2-valid": (
        "Air Rhodesia Flight 825",
        "Frank Headlam",
        "Hu Zhengyan",
        "J. C. W. Beckham",
        "Japanese battleship Asahi",
        "Trout Creek Mountains",
        "U.S. Route 2 in Michigan",
        "Die Another Day",
        "Horrible Bosses",
        "Military history of Australia",
        "Mount Elbert",
        "Papa Stour",
        "Meridian, Mississippi",
        "Angel of Death (Slayer song)",
        "Hurricane Beatriz (2011)",
        "Battle of Edson's Ridge",
    ),
    "wikitext-2-test": (
        "Battle of Dürenstein",
        "Head VI",
        "Imagism",
        "Ironclad warship",
        "The Portage to San Cristobal of A.H.",
        "Dvorak technique",
        "Oxaziridine",
        "Shackleton (crater)",
        "American Beauty (1999 film)",
    ),
    "squad-v1.1-dev": ("Oxygen", "Scottish Parliament"),
    "wikiqa-train": (
        "2010 Haiti earthquake",
        "Apollo 11",
        "Assassination of Robert F. Kennedy",
        "Casey Stengel",
        "Charlie Chaplin",
        "Daylight saving time",
        "Elizabeth Cady Stanton",
        "Elk",
        "FIFA World Cup",
        "Great white shark",
        "Gunfight at the O.K. Corral",
        "HDMI",
        "Han Dynasty",
        "History of the board game Monopoly",
        "Hubble Space Telescope",
        "Hydrogen",
        "Joan Crawford",
        "John Adams",
        "Lady Gaga",
        "Magic Johnson",
        "Malcolm X",
        "Minnesota",
        "Neil Armstrong",
        "PHP",
        "Patrick Henry College",
        "Platypus",
        "Raccoon",
        "Secretariat (horse)",
        "Snow White and the Seven Dwarfs (1937 film)",
        "The Shawshank Redemption",
        "Tourette syndrome",
        "Ulysses S. Grant",
        "Vitamin",
        "William Howard Taft",
    ),
    "wikiqa-dev": (
        "Appalachian Trail",
        "Douglas MacArthur",
        "Global Warming",
        "Hajj",
        "John Adams",
        "Justinian I",
        "Multiple sclerosis",
        "Oklahoma City bombing",
        "Pancreatic cancer",
        "Shelton Benjamin",
        "The Shawshank Redemption",
        "Walter O'Malley",
    ),
    "wikiqa-test": (
        "Brad Pitt",
        "Cannon",
        "Douglas MacArthur",
        "Elephant",
        "Great white shark",
        "Guinea pig",
        "Harmon Killebrew",
        "Jefferson Davis",
        "Jet stream",
        "John Glenn",
        "Menstrual cycle",
        "Michigan State Capitol",
        "Thank Me Later",
    ),
    "selqa-dev": (*_SELQA_TEST, "Netball"),
    "selqa-test": _SELQA_TEST,
}

#: Every title of :data:`EVALUATION_OVERLAPS` once, in first-listed order.
EVALUATION_OVERLAP_TITLES: tuple[str, ...] = tuple(
    dict.fromkeys(title for titles in EVALUATION_OVERLAPS.values() for title in titles)
)


def normalize_title(title: str) -> str:
    """Case-fold, NFC, ``_`` → space, undo ``@-@`` escapes, drop spaces next to punctuation."""
    text = unicodedata.normalize("NFC", unescape_wikitext(title)).replace("_", " ")
    text = _SPACE_AROUND_PUNCTUATION.sub(r"\1", text)
    return " ".join(text.split()).casefold()


def normalize_titles(titles: Iterable[str]) -> frozenset[str]:
    return frozenset(normalize_title(title) for title in titles if title.strip())


def titles_from_file(path: str | Path) -> list[str]:
    """One title per line; blank lines and lines starting with ``#`` are skipped."""
    return [
        line.strip()
        for _, line in read_lines(path)
        if line.strip() and not line.lstrip().startswith("#")
    ]


def titles_from_wikiqa(path: str | Path) -> list[str]:
    """The ``DocumentTitle`` column of a WikiQA TSV file (:func:`read_wikiqa`), or of every
    ``*.tsv`` in a folder."""
    path = Path(path)
    files = sorted(path.glob("*.tsv")) if path.is_dir() else [path]
    if not files:
        raise InputError("no *.tsv files in this folder", path=path)
    return [record.document_title for file in files for record in read_wikiqa(file)]


def titles_from_selqa(path: str | Path) -> list[str]:
    """The ``article`` field of a SelQA JSON file, or of every ``*.json[.gz]`` under a folder."""
    path = Path(path)
    files = (
        [file for file in sorted(path.rglob("*")) if file.name.endswith((".json", ".json.gz"))]
        if path.is_dir()
        else [path]
    )
    if not files:
        raise InputError("no *.json or *.json.gz files under this folder", path=path)
    titles: list[str] = []
    for file in files:
        entries = read_json(file)
        if not isinstance(entries, list):
            raise InputError("expected a JSON array of questions", path=file)
        for index, entry in enumerate(entries):
            title = entry.get("article") if isinstance(entry, dict) else None
            if not isinstance(title, str):
                raise InputError(f"entry {index}: expected a string", path=file, field="article")
            titles.append(title)
    return titles


def titles_from_squad(path: str | Path) -> list[str]:
    """Every article title of a SQuAD JSON file."""
    return [str(article.get("title", "")) for article in load_squad(path)]


def titles_from_squad_as2(path: str | Path) -> list[str]:
    """The article titles of every split of a ``ctxsent data squad-as2`` folder (its summary)."""
    summary_file = Path(path) / "summary.json"
    if not summary_file.is_file():
        raise InputError("no summary.json: not a `ctxsent data squad-as2` folder", path=path)
    summary = read_json(summary_file)
    splits = summary.get("splits") if isinstance(summary, dict) else None
    if not splits or not all("titles" in split for split in splits.values()):
        raise InputError(
            "lists no article titles; rebuild it with `ctxsent data squad-as2` or use squad:FILE",
            path=summary_file,
            field="splits",
        )
    return [title for split in splits.values() for title in split["titles"]]


def titles_from_wikitext(path: str | Path) -> list[str]:
    """Every article title of a WikiText raw file."""
    return [doc.title for doc in read_wikitext(path) if doc.title]


#: Where titles to exclude come from, by ``--exclude-from`` name: a list of titles
#: (``titles:FILE``) and the evaluation sets drawn from Wikipedia articles.
TITLE_SOURCES = {
    "titles": titles_from_file,
    "wikiqa": titles_from_wikiqa,
    "selqa": titles_from_selqa,
    "squad": titles_from_squad,
    "squad-as2": titles_from_squad_as2,
    "wikitext": titles_from_wikitext,
}
