import json

import pytest
from corpus_files import write

from ctxsent.corpus.readers import CorpusFormat, detect_format, read_documents
from ctxsent.corpus.readers.plaintext import document_name
from ctxsent.corpus.readers.wikiextractor import clean_markup
from ctxsent.errors import InputError

WIKIEXTRACTOR = """<doc id="12" url="https://en.wikipedia.org/wiki?curid=12" title="Texas A&amp;M">
Texas A&amp;M

First paragraph of the lead.
Second lead paragraph, no blank line before it.<ref name="x"></ref>

After a blank line, with <nowiki>markup</nowiki> &amp; entities.
<poem>
</poem>
</doc>
<doc id="13" url="https://en.wikipedia.org/wiki?curid=13" title="Other">
Other

Only paragraph.
</doc>
"""


def read(path, fmt=CorpusFormat.AUTO, encoding="utf-8"):
    return list(read_documents(path, fmt, encoding))


@pytest.mark.parametrize("name", ["wiki_00", "wiki_00.gz"])
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_wikiextractor_documents_paragraphs_and_markup(tmp_path, name, newline):
    path = write(tmp_path / name, WIKIEXTRACTOR, newline=newline)
    docs = read(path)
    assert [(d.id, d.title, d.line) for d in docs] == [("12", "Texas A&M", 1), ("13", "Other", 11)]
    assert docs[0].paragraphs == [
        "First paragraph of the lead.",
        "Second lead paragraph, no blank line before it.",
        "After a blank line, with markup & entities.",
    ]
    assert docs[1].paragraphs == ["Only paragraph."]


def test_clean_markup():
    assert clean_markup('A.<ref name="a">Smith (2001)</ref> B.<ref name="b"/> C') == "A. B. C"
    assert clean_markup("one.<br>two<br/>three") == "one. two three"
    assert clean_markup("Ne < He < Ar, &lt;tag&gt;") == "Ne < He < Ar, <tag>"


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ('<doc id="1" title="A">\nA\n<doc id="2" title="B">\n</doc>\n', 3, "opened before"),
        ('<doc id="1" url="u">\ntext\n</doc>\n', 1, "field 'title'"),
        ('<doc id="1" title="A"\ntext\n</doc>\n', 1, "malformed <doc> line"),
        ('stray text\n<doc id="1" title="A">\n</doc>\n', 1, "outside"),
        ('<doc id="1" title="A">\ntext\n</doc>\n</doc>\n', 4, "without a matching"),
        ('\n<doc id="1" title="A">\ntext\n', 2, "not closed"),
    ],
)
def test_wikiextractor_malformed_input_names_file_and_line(tmp_path, text, line, problem):
    path = write(tmp_path / "bad.txt", text)
    with pytest.raises(InputError, match=problem) as caught:
        read(path, CorpusFormat.WIKIEXTRACTOR)
    assert (caught.value.path, caught.value.line) == (str(path), line)
    assert str(caught.value).startswith(f"{path}:{line}: ")


WIKITEXT = """ 
 = Ise @-@ class battleship = 
 
 The Ise class had 14 @.@ 1 inch armour and cost 1 @,@ 000 yen . 
 
 = = Design = = 
 
 Body text after a heading . 
 = 1 rad / s and k = 
 = = = Deeper = = = 
 
 = Second = 
 
 Second article text . 
"""


def test_wikitext_titles_headings_and_escapes(tmp_path):
    docs = read(write(tmp_path / "wiki.valid.raw", WIKITEXT))
    assert [(d.id, d.title) for d in docs] == [("2", "Ise-class battleship"), ("12", "Second")]
    assert docs[0].paragraphs == [
        "The Ise class had 14.1 inch armour and cost 1,000 yen .",
        "Body text after a heading .",
        # not framed by blank lines: an equation and a heading-like line are paragraphs
        "= 1 rad / s and k =",
        "= = = Deeper = = =",
    ]
    assert docs[1].paragraphs == ["Second article text ."]


def test_wikitext_text_before_first_title_is_untitled_document(tmp_path):
    docs = read(write(tmp_path / "a.raw", "Intro line .\n\n = T = \n\n Body .\n"), "wikitext")
    assert [(d.title, d.paragraphs) for d in docs] == [("", ["Intro line ."]), ("T", ["Body ."])]


def test_text_joins_wrapped_lines_and_splits_on_blank_lines(tmp_path):
    text = "  Title line\n\nFirst paragraph is\nhard wrapped.\n\n\n\nSecond one.\n"
    [doc] = read(write(tmp_path / "book.txt.gz", text, newline="\r\n"))
    assert (doc.id, doc.title, doc.line) == ("book", "book", 1)
    assert doc.paragraphs == ["Title line", "First paragraph is hard wrapped.", "Second one."]


def test_text_latin1_needs_encoding(tmp_path):
    path = write(tmp_path / "ball.txt", "Plain line.\n\nBrunetière, Coppée.\n", encoding="latin-1")
    with pytest.raises(InputError, match="not valid utf-8") as caught:
        read(path)
    # ctxsent.io.read_lines decodes 8 kB chunks, so the line it names is only
    # approximate (here 1, not 3); the file is named exactly.
    assert caught.value.path == str(path) and caught.value.line is not None
    [doc] = read(path, encoding="latin-1")
    assert doc.paragraphs[1] == "Brunetière, Coppée."


def test_jsonl_text_and_paragraph_fields(tmp_path):
    lines = [
        {"id": 7, "title": "A", "text": "One\nwrapped.\n\nTwo."},
        {"title": "B", "paragraphs": ["  x  y ", "", "z"]},
    ]
    path = write(tmp_path / "docs.jsonl", "\n".join(map(json.dumps, lines)) + "\n\n")
    docs = read(path)
    assert [(d.id, d.title, d.paragraphs, d.line) for d in docs] == [
        ("7", "A", ["One wrapped.", "Two."], 1),
        ("2", "B", ["x y", "z"], 2),
    ]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"title": "x"}', "field 'text': missing"),
        ('{"paragraphs": "not a list"}', "field 'paragraphs'"),
        ('{"text": "t", "title": ["x"]}', "field 'title'"),
    ],
)
def test_jsonl_bad_line_names_file_line_and_field(tmp_path, line, message):
    path = write(tmp_path / "docs.jsonl", '{"text": "fine"}\n' + line + "\n")
    with pytest.raises(InputError, match=message) as caught:
        read(path)
    assert (caught.value.path, caught.value.line) == (str(path), 2)


def test_squad_articles_and_contexts(tmp_path):
    squad = {
        "version": "1.1",
        "data": [
            {"title": "Super_Bowl_50", "paragraphs": [{"context": "A b.\n c.", "qas": []}]},
            {"title": "Oxygen", "paragraphs": [{"context": "O2.", "qas": []}, {"context": " "}]},
        ],
    }
    docs = read(write(tmp_path / "dev-v1.1.json.gz", json.dumps(squad)))
    assert [(d.id, d.title, d.paragraphs) for d in docs] == [
        ("Super_Bowl_50", "Super_Bowl_50", ["A b. c."]),
        ("Oxygen", "Oxygen", ["O2."]),
    ]


def test_squad_bad_structure(tmp_path):
    path = write(tmp_path / "s.json", '{"data": [{"title": "T", "paragraphs": [{"qas": []}]}]}')
    with pytest.raises(InputError, match=r"data\[0\]\.paragraphs\[0\]\.context"):
        read(path)
    with pytest.raises(InputError, match=r"s2.json:2: not valid JSON"):
        read(write(tmp_path / "s2.json", '{"data":\n ]'))


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("x.jsonl.gz", '{"text": "a"}\n', CorpusFormat.JSONL),
        ("dev.json", "{}", CorpusFormat.SQUAD),
        ("wiki_00", '\n<doc id="1" title="A">\n', CorpusFormat.WIKIEXTRACTOR),
        ("wiki.test.raw", " \n = Robert Boulter = \n \n", CorpusFormat.WIKITEXT),
        ("records", '{"text": "a"}\n', CorpusFormat.JSONL),
        ("emma.txt", "Emma Woodhouse, handsome,\n", CorpusFormat.TEXT),
    ],
)
def test_detect_format(tmp_path, name, text, expected):
    assert detect_format(write(tmp_path / name, text)) == expected


def test_missing_file_is_input_error(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        detect_format(tmp_path / "absent.txt")
    with pytest.raises(InputError, match="no such file"):
        read(tmp_path / "absent.txt", CorpusFormat.TEXT)


def test_document_name():
    assert document_name("/x/austen-emma.txt.gz") == "austen-emma"
    assert document_name("notes") == "notes"
