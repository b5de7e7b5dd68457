import json

import pytest
from corpus_files import write

from ctxsent.corpus.titles import (
    EVALUATION_OVERLAP_TITLES,
    normalize_title,
    titles_from_file,
    titles_from_source,
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


def test_builtin_overlaps_cover_readme_lists():
    assert len(EVALUATION_OVERLAP_TITLES) == 27
    assert {"Oxygen", "Scottish Parliament", "Papa Stour", "Imagism"} <= set(
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
    assert titles_from_source(f"wikiqa:{tmp_path}") == ["African immigration", "Golf"]


def test_titles_from_wikiqa_errors(tmp_path):
    with pytest.raises(InputError, match="no \\*.tsv"):
        titles_from_wikiqa(tmp_path)
    bad = write(tmp_path / "bad.tsv", "QuestionID\tQuestion\nQ1\tq\n")
    with pytest.raises(InputError, match="bad.tsv:1: field 'DocumentTitle'"):
        titles_from_wikiqa(bad)
    short = write(tmp_path / "short.tsv", WIKIQA_HEADER + "Q1\tq\tD1\n")
    with pytest.raises(InputError, match="short.tsv:2: field 'DocumentTitle'"):
        titles_from_wikiqa(short)


def test_titles_from_squad_and_wikitext_sources(tmp_path):
    squad = write(tmp_path / "dev.json", json.dumps({"data": [{"title": "Super_Bowl_50"}]}))
    assert titles_from_source(f"squad:{squad}") == ["Super_Bowl_50"]
    wikitext = write(tmp_path / "w.raw", " \n = Du Fu = \n \n Text . \n")
    assert titles_from_source(f"wikitext:{wikitext}") == ["Du Fu"]


@pytest.mark.parametrize("spec", ["wikiqa", "trecqa:x", "squad:"])
def test_titles_from_source_rejects_bad_specs(spec):
    with pytest.raises(InputError, match="KIND:PATH"):
        titles_from_source(spec)
