import json

import pytest
from corpus_files import write

from ctxsent.corpus.readers import CorpusFormat, read_documents
from ctxsent.corpus.shards import count_lines, plan_shards


def wikiextractor(n: int) -> str:
    return "".join(
        f'<doc id="{i}" title="T{i}">\nT{i}\n\nText {i}.\nMore {i}.\n</doc>\n' for i in range(n)
    )


def wikitext(n: int) -> str:
    articles = "".join(
        f" = T{i} = \n \n Text {i} . \n \n = = H = = \n \n More {i} . \n \n" for i in range(n)
    )
    return "Untitled lead .\nSecond lead line .\n \n" + articles


def jsonl(n: int) -> str:
    return "".join(json.dumps({"id": i, "text": f"Text {i}."}) + "\n" for i in range(n))


@pytest.mark.parametrize(
    ("fmt", "make"),
    [
        (CorpusFormat.WIKIEXTRACTOR, wikiextractor),
        (CorpusFormat.WIKITEXT, wikitext),
        (CorpusFormat.JSONL, jsonl),
    ],
)
@pytest.mark.parametrize("num_proc", [2, 3, 7])
def test_shards_partition_the_documents_in_order(tmp_path, fmt, make, num_proc):
    path = write(tmp_path / "corpus.gz", make(25))
    shards = plan_shards([(path, fmt)], num_proc=num_proc)
    assert len(shards) > num_proc
    assert [s.first_line for s in shards[1:]] == [s.end_line for s in shards[:-1]]
    sharded = [doc for shard in shards for doc in shard.documents()]
    assert sharded == list(read_documents(path, fmt))


def test_unsharded_formats_are_one_shard_each(tmp_path):
    text = write(tmp_path / "book.txt", "A.\n\nB.\n")
    wiki = write(tmp_path / "wiki_00", wikiextractor(8))
    shards = plan_shards(
        [(text, CorpusFormat.TEXT), (wiki, CorpusFormat.WIKIEXTRACTOR)], num_proc=2
    )
    assert [(s.path, s.first_line, s.end_line) for s in shards[:2]] == [
        (str(text), 1, None),
        (str(wiki), 1, 7),
    ]
    assert [s.index for s in shards] == list(range(1 + 8))  # 48 lines in 8 ranges of 6
    assert plan_shards([(wiki, CorpusFormat.WIKIEXTRACTOR)], num_proc=1)[0].end_line is None


@pytest.mark.parametrize(
    ("text", "lines"), [("", 0), ("a\nb\n", 2), ("a\nb", 2), ("a\r\n\r\nb\r\n", 3)]
)
def test_count_lines(tmp_path, text, lines):
    assert count_lines(write(tmp_path / "f.gz", text)) == lines
    assert count_lines(write(tmp_path / "f", text)) == lines
