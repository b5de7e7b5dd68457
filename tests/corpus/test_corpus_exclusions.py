"""Evaluation sets kept out of corpora: by title (article sets), by sentence (STS/SentEval)."""

import json

import pytest
from corpus_files import corpus_cli, write
from typer.testing import CliRunner

from ctxsent.corpus import CorpusFilter, RawDocument, load_corpus
from ctxsent.corpus.exclusions import exclusions_from_source, normalize_sentence
from ctxsent.corpus.filters import process_document
from ctxsent.corpus.stats import CorpusStats
from ctxsent.errors import InputError

STS_PAIR = ("A man is playing a flute.", "A man plays the flute .")
REVIEW = "it 's a charming and often affecting journey ."
KEPT = "The apse was rebuilt in the twelfth century by the abbot."


@pytest.fixture
def data_dir(tmp_path):
    """A ``../shared/data``-like folder with an STS12 subset and MR."""
    root = tmp_path / "data"
    (root / "sts12").mkdir(parents=True)
    write(root / "sts12/STS.input.MSRvid.txt", "\t".join(STS_PAIR) + "\n")
    write(root / "sts12/STS.gs.MSRvid.txt", "4.2\n")
    (root / "senteval/MR").mkdir(parents=True)
    write(root / "senteval/MR/rt-polarity.pos", REVIEW + " a good film .\n")
    write(root / "senteval/MR/rt-polarity.neg", "dull .\n")
    return root


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("It's a charming and often affecting journey.", REVIEW),
        ("24.8 million people live there.", "24.8 million people live there ."),
        ("Ｕｎｉｃｏｄｅ wide", "unicode WIDE"),
    ],
)
def test_normalize_sentence_ignores_case_spacing_and_punctuation(a, b):
    assert normalize_sentence(a) == normalize_sentence(b)


def test_normalize_sentence_keeps_different_words_apart():
    assert normalize_sentence("A man plays a flute.") != normalize_sentence("A man plays flutes.")


def test_sentence_sources_read_the_sts_and_senteval_files(data_dir):
    sts = exclusions_from_source(f"sts12:{data_dir}")
    assert sts.sentences == set(STS_PAIR) and not sts.titles
    mr = exclusions_from_source(f"MR:{data_dir}").sentences
    # evaluation texts are split like corpus paragraphs: REVIEW ends before "a good film ."
    assert mr == {REVIEW, "a good film .", "dull ."}
    assert exclusions_from_source(f"senteval:{data_dir}").sentences == sts.sentences | mr


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("wikiqa", "NAME:PATH"),
        ("trecqa:x", "NAME:PATH"),
        ("squad:", "NAME:PATH"),
        ("sts99:x", "NAME:PATH"),
        ("stsb:{tmp}", "no folder for task STSB"),
        ("senteval:{tmp}", "holds none of senteval/"),
    ],
)
def test_bad_exclusion_sources_are_named(tmp_path, spec, message):
    with pytest.raises(InputError, match=message):
        exclusions_from_source(spec.format(tmp=tmp_path))


def test_excluded_sentence_is_counted_only_when_long_enough_to_be_kept():
    texts = frozenset([*STS_PAIR, "Why?"])
    corpus_filter = CorpusFilter(exclude_sentences=texts, min_document_chars=0)
    stats = CorpusStats()
    paragraph = f"A man plays the flute. Why? {KEPT} {KEPT}"
    doc = process_document(RawDocument("1", "Flutes", [paragraph]), corpus_filter, stats)
    assert doc.paragraphs == [[KEPT, KEPT]]
    assert (stats.sentences_read, stats.sentences_excluded, stats.sentences_dropped) == (4, 1, 1)
    assert CorpusFilter().to_dict()["excluded_sentence_count"] == 0


def test_builtin_overlaps_are_excluded_unless_kept():
    assert CorpusFilter().excludes("Apollo_11") and CorpusFilter().excludes("Papa Stour")
    assert not CorpusFilter(exclude_titles=frozenset()).excludes("Apollo 11")


def wikiextractor(titles_and_text: list[tuple[str, str]]) -> str:
    return "".join(
        f'<doc id="{i}" url="u" title="{title}">\n{title}\n\n{text}\n</doc>\n'
        for i, (title, text) in enumerate(titles_and_text)
    )


@pytest.mark.parametrize(
    ("flags", "excluded"),
    [
        ([], ["Apollo 11", "Toy Story"]),
        (["--exclude-evaluation-overlaps"], ["Apollo 11", "Toy Story"]),
        (["--keep-evaluation-overlaps"], []),
    ],
)
def test_cli_excludes_the_builtin_overlaps_by_default(tmp_path, flags, excluded):
    text = " ".join([KEPT] * 5)
    source = write(
        tmp_path / "wiki_00",
        wikiextractor([("Apollo 11", text), ("Toy Story", text), ("Abbey of Cluny", text)]),
    )
    args = ["corpus", "build", str(source), "--out", str(tmp_path / "corpus"), *flags]
    result = CliRunner().invoke(corpus_cli(), args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["excluded_titles"] == excluded
    assert summary["documents"] == 3 - len(excluded)


def test_cli_excludes_sentences_and_selqa_articles(tmp_path, data_dir):
    selqa = write(tmp_path / "selqa-ass-test.json", json.dumps([{"article": "Flute choir"}]))
    source = write(
        tmp_path / "wiki_00",
        wikiextractor(
            [
                ("Flute", f"{KEPT} A man is playing a flute. {KEPT}\n{KEPT} {KEPT}"),
                ("Flute choir", " ".join([KEPT] * 5)),
            ]
        ),
    )
    args = ["corpus", "build", str(source), "--out", str(tmp_path / "corpus")]
    args += ["--exclude-from", f"sts12:{data_dir}", "--exclude-from", f"selqa:{selqa}"]
    result = CliRunner().invoke(corpus_cli(), args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["excluded_titles"] == ["Flute choir"]
    assert summary["dropped"]["sentences_excluded_by_text"] == 1
    assert summary["filters"]["excluded_sentence_count"] == 2
    (doc,) = load_corpus(tmp_path / "corpus")
    assert doc.paragraphs == [[KEPT, KEPT], [KEPT, KEPT]]
