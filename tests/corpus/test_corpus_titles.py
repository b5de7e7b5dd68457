import json

import pytest
from corpus_files import write

from ctxsent.corpus.exclusions import exclusions_from_source
from ctxsent.corpus.titles import (
    EVALUATION_OVERLAP_TITLES,
    EVALUATION_OVERLAPS,
    normalize_title,
    titles_from_file,
    titles_from_selqa,
    titles_from_squad_as2,
    titles_from_wikiqa,
)
from ctxsent.errors import InputError


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Super_Bowl_50", "super bowl 50"),
        ("Ise @-@ class battleship", "Ise-class battleship"),
        ("Kiss You ( One Direction song )", "Kiss You (One Direction song)"),
        ("Meridian , Mississippi", "Meridian, Mississippi"),
        ("Battle of Edson 's Ridge", "Battle of Edson's Ridge"),
        ("Battle of Du\u0308renstein", "Battle of Dürenstein"),
        ("  U.S.  Route 2 ", "U.S. Route 2"),
    ],
)
def test_normalize_title_matches_spellings(a, b):
    assert normalize_title(a) == normalize_title(b)


def test_normalize_title_keeps_different_titles_apart():
    assert normalize_title("Mount Elbert") != normalize_title("Mount Elbert (ship)")
    assert normalize_title("Head VI") != normalize_title("Head V I")


def test_builtin_overlaps_cover_every_evaluation_set_with_articles():
    sizes = {name: len(titles) for name, titles in EVALUATION_OVERLAPS.items()}
    assert sizes == {
        "wikitext-2-valid": 16,
        "wikitext-2-test": 9,
        "squad-v1.1-dev": 2,
        "wikiqa-train": 34,
        "wikiqa-dev": 12,
        "wikiqa-test": 13,
        "selqa-dev": 21,
        "selqa-test": 20,
    }
    assert len(EVALUATION_OVERLAP_TITLES) == len(set(EVALUATION_OVERLAP_TITLES)) == 100
    assert {"Oxygen", "Papa Stour", "Imagism", "Han Dynasty", "Apollo 11", "Netball"} <= set(
        EVALUATION_OVERLAP_TITLES
    )


def test_titles_from_file_skips_blank_and_comment_lines(tmp_path):
    path = write(tmp_path / "titles.txt", "# evaluation\nOxygen\n\n  Papa Stour \n", newline="\r\n")
    assert titles_from_file(path) == ["Oxygen", "Papa Stour"]


WIKIQA_HEADER = "QuestionID\tQuestion\tDocumentID\tDocumentTitle\tSentenceID\tSentence\tLabel\n"


def test_titles_from_wikiqa_folder(tmp_path):
    write(
        tmp_path / "WikiQA-dev.tsv",
        WIKIQA_HEADER + 'Q1\thow "x"?\tD1\tAfrican immigration\tD1-0\ts\t0\n',
    )
    write(
        tmp_path / "WikiQA-test.tsv",
        WIKIQA_HEADER + "Q2\tq\tD2\tGolf\tD2-0\ts\t1\n",
        newline="\r\n",
    )
    write(tmp_path / "README.txt", "not a tsv")
    assert titles_from_wikiqa(tmp_path) == ["African immigration", "Golf"]
    exclusions = exclusions_from_source(f"wikiqa:{tmp_path}")
    assert exclusions.titles == {"African immigration", "Golf"} and not exclusions.sentences


def test_titles_from_wikiqa_errors(tmp_path):
    with pytest.raises(InputError, match="no \\*.tsv"):
        titles_from_wikiqa(tmp_path)
    bad = write(tmp_path / "bad.tsv", "QuestionID\tQuestion\nQ1\tq\n")
    with pytest.raises(InputError, match="bad.tsv:1: expected header .*DocumentTitle"):
        titles_from_wikiqa(bad)
    short = write(tmp_path / "short.tsv", WIKIQA_HEADER + "Q1\tq\tD1\n")
    with pytest.raises(InputError, match="short.tsv:2: expected 7 TAB-separated columns"):
        titles_from_wikiqa(short)


def test_titles_from_squad_and_wikitext_sources(tmp_path):
    squad = write(tmp_path / "dev.json", json.dumps({"data": [{"title": "Super_Bowl_50"}]}))
    assert exclusions_from_source(f"squad:{squad}").titles == {"Super_Bowl_50"}
    wikitext = write(tmp_path / "w.raw", " \n = Du Fu = \n \n Text . \n")
    assert exclusions_from_source(f"wikitext:{wikitext}").titles == {"Du Fu"}


def selqa_entry(article: str) -> dict:
    return {"question": "q?", "article": article, "candidates": ["a", "b"], "answers": [0]}


def test_titles_from_selqa_folder_and_file(tmp_path):
    (tmp_path / "ass").mkdir()
    dev = write(tmp_path / "ass/selqa-ass-dev.json", json.dumps([selqa_entry("Apollo 11")]))
    test = [selqa_entry("Toy Story"), selqa_entry("Apollo 11")]
    write(tmp_path / "ass/selqa-ass-test.json.gz", json.dumps(test))
    write(tmp_path / "ass/selqa-ass-test.tsv.gz", "q\ta\t1\n")
    assert titles_from_selqa(dev) == ["Apollo 11"]
    assert titles_from_selqa(tmp_path) == ["Apollo 11", "Toy Story", "Apollo 11"]
    assert exclusions_from_source(f"selqa:{tmp_path}").titles == {"Apollo 11", "Toy Story"}


def test_titles_from_selqa_errors(tmp_path):
    with pytest.raises(InputError, match="no \\*.json"):
        titles_from_selqa(tmp_path)
    bad = write(tmp_path / "bad.json", json.dumps([selqa_entry("A"), {"question": "q"}]))
    with pytest.raises(InputError, match="bad.json: field 'article': entry 1"):
        titles_from_selqa(bad)


def test_titles_from_squad_as2_folder_summary(tmp_path):
    splits = {"train": {"titles": ["Oxygen", "Harvard"]}, "dev": {"titles": ["Black_Death"]}}
    write(tmp_path / "summary.json", json.dumps({"splits": splits}))
    assert titles_from_squad_as2(tmp_path) == ["Oxygen", "Harvard", "Black_Death"]
    assert exclusions_from_source(f"squad-as2:{tmp_path}").titles == {
        "Oxygen",
        "Harvard",
        "Black_Death",
    }
    write(tmp_path / "summary.json", json.dumps({"splits": {"dev": {"articles": 7}}}))
    with pytest.raises(InputError, match="summary.json: field 'splits': lists no article titles"):
        titles_from_squad_as2(tmp_path)
    with pytest.raises(InputError, match="no summary.json"):
        titles_from_squad_as2(tmp_path / "absent")
