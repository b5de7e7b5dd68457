import json

import pytest
from corpus_files import corpus_cli, write
from typer.testing import CliRunner

from ctxsent.corpus import CorpusFilter, Document, build_corpus, load_corpus
from ctxsent.corpus.readers import CorpusFormat
from ctxsent.corpus.shards import plan_shards
from ctxsent.errors import InputError

SENTENCE = "Sentence {k} of document {i} is long enough to be kept."


def wikiextractor_text(n_docs: int, first_id: int = 0) -> str:
    parts = []
    for i in range(first_id, first_id + n_docs):
        parts.append(f'<doc id="{i}" url="u" title="Title {i}">\nTitle {i}\n')
        for p in range(3):
            parts.append(" ".join(SENTENCE.format(k=f"{p}.{k}", i=i) for k in range(2)) + "\n")
            if p == 1:
                parts.append("\n")
        parts.append("</doc>\n")
    return "".join(parts)


@pytest.fixture
def inputs(tmp_path):
    folder = tmp_path / "inputs"
    folder.mkdir()
    paragraphs = [
        " ".join(SENTENCE.format(k=f"{p}.{k}", i="j") for k in range(2)) for p in range(4)
    ]
    record = {"id": "j1", "title": "J", "text": "\n\n".join(paragraphs)}
    return [
        write(folder / "wiki_00.gz", wikiextractor_text(30)),
        write(folder / "docs.jsonl", json.dumps(record) + "\n"),
        write(folder / "wiki_01", wikiextractor_text(11, first_id=100)),
    ]


def rows(path):
    return [json.dumps(row, sort_keys=True) for row in load_corpus(path).dataset]


def test_build_and_load_round_trip(tmp_path, inputs):
    summary = build_corpus(
        inputs, tmp_path / "corpus", corpus_filter=CorpusFilter(exclude_titles={"title 3"})
    )
    corpus = load_corpus(tmp_path / "corpus")
    docs = list(corpus)
    assert len(corpus) == len(docs) == 30 - 1 + 1 + 11
    assert [d.id for d in docs[:3]] == ["0", "1", "2"] and docs[29].id == "j1"
    assert docs[0] == Document(
        id="0",
        title="Title 0",
        paragraphs=[[SENTENCE.format(k=f"{p}.{k}", i=0) for k in range(2)] for p in range(3)],
    )
    assert corpus.summary == summary
    assert summary["inputs"][1] == {"path": str(inputs[1]), "format": "jsonl"}
    assert (summary["documents"], summary["paragraphs"], summary["sentences"]) == (
        41,
        40 * 3 + 4,
        40 * 6 + 8,
    )
    assert summary["tokens"] == sum(len(s.split()) for d in docs for p in d.paragraphs for s in p)
    assert summary["read"]["documents"] == 42
    assert summary["dropped"]["documents_excluded_by_title"] == 1
    assert summary["excluded_titles"] == ["Title 3"]


def test_output_is_identical_for_any_num_proc(tmp_path, inputs):
    files = [(path, CorpusFormat.WIKIEXTRACTOR) for path in (inputs[0], inputs[2])]
    shards = plan_shards(files, num_proc=2)
    assert len(shards) > 2 and shards[0].end_line == shards[1].first_line
    one = build_corpus(inputs, tmp_path / "one", num_proc=1)
    two = build_corpus(inputs, tmp_path / "two", num_proc=2)
    assert one == two
    assert rows(tmp_path / "one") == rows(tmp_path / "two")


@pytest.mark.parametrize("num_proc", [1, 2])
def test_failure_leaves_no_output(tmp_path, inputs, num_proc):
    bad = write(tmp_path / "inputs" / "wiki_02", wikiextractor_text(5) + "stray line\n")
    out = tmp_path / "out" / "corpus"
    with pytest.raises(InputError) as caught:
        build_corpus([*inputs, bad], out, num_proc=num_proc)
    assert (caught.value.path, caught.value.line) == (str(bad), 5 * 7 + 1)
    assert list((tmp_path / "out").iterdir()) == []


def test_existing_output_is_protected(tmp_path, inputs):
    out = tmp_path / "corpus"
    build_corpus(inputs[1:2], out)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="not a ctxsent corpus output; pass --overwrite"):
        build_corpus(inputs[1:2], tmp_path / "mine")
    build_corpus(inputs[:1], out)  # replaces its own kind of output
    assert len(load_corpus(out)) == 30
    with pytest.raises(InputError, match="not a corpus folder"):
        build_corpus(inputs, tmp_path / "inputs", overwrite=True)


def test_empty_result_is_explained(tmp_path, inputs):
    with pytest.raises(InputError, match="no document left: 30 read, 0 excluded by title, 30 too"):
        build_corpus(
            inputs[:1], tmp_path / "corpus", corpus_filter=CorpusFilter(min_document_chars=10**6)
        )
    assert not (tmp_path / "corpus").exists()


def test_load_corpus_rejects_other_folders(tmp_path):
    with pytest.raises(InputError, match="not a corpus folder"):
        load_corpus(tmp_path)


def test_missing_input_fails_before_work(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        build_corpus([tmp_path / "absent.txt"], tmp_path / "corpus")
    assert not (tmp_path / "corpus").exists()


def test_cli_build_with_exclusions_is_the_library_call(tmp_path, inputs):
    titles = write(tmp_path / "titles.txt", "Title 1\n")
    wikitext = write(tmp_path / "wiki.test.raw", " \n = Title 2 = \n \n Text . \n")
    args = ["corpus", "build", *map(str, inputs), "--out", str(tmp_path / "cli")]
    args += ["--exclude-titles", str(titles), "--exclude-from", f"wikitext:{wikitext}"]
    args += ["--min-sentence-chars", "0", "--num-proc", "1"]
    result = CliRunner().invoke(corpus_cli(), args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary == build_corpus(
        inputs,
        tmp_path / "python",
        corpus_filter=CorpusFilter(min_sentence_chars=0),
        exclude_from=[f"titles:{titles}", f"wikitext:{wikitext}"],
    )
    assert summary["excluded_titles"] == ["Title 1", "Title 2"]
    assert summary["filters"]["min_sentence_chars"] == 0
    assert rows(tmp_path / "cli") == rows(tmp_path / "python") and len(rows(tmp_path / "cli")) == 40


def test_cli_bad_input_raises_input_error(tmp_path):
    bad = write(tmp_path / "docs.jsonl", "{oops\n")
    result = CliRunner().invoke(
        corpus_cli(), ["corpus", "build", str(bad), "--out", str(tmp_path / "c")]
    )
    assert isinstance(result.exception, InputError)
    assert str(result.exception).startswith(f"{bad}:1: not valid JSON")
