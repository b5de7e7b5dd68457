import gzip
import json
import re

import pytest
from corpus_files import corpus_cli
from typer.testing import CliRunner

from ctxsent.corpus import CorpusFilter, build_corpus, load_corpus
from ctxsent.corpus.readers import CorpusFormat, detect_format, read_documents
from ctxsent.corpus.titles import normalize_title, titles_from_selqa


@pytest.mark.integration
def test_wikitext2_valid(shared_data, tmp_path):
    path = shared_data / "wikitext-2-raw" / "wiki.valid.raw"
    if not path.is_file():
        pytest.skip(f"{path} not found (set CTXSENT_SHARED_DATA)")
    assert detect_format(path) == CorpusFormat.WIKITEXT
    docs = list(read_documents(path))
    # data/README.md: 60 articles and 1,841 paragraphs before filtering
    assert len(docs) == 60 and docs[0].title == "Homarus gammarus"
    assert sum(len(doc.paragraphs) for doc in docs) == 1841
    assert not any("@-@" in p for doc in docs for p in doc.paragraphs)

    # the built-in exclusions would drop WikiText-2 valid's own 16 overlapping articles
    keep_all = CorpusFilter(exclude_titles=frozenset())
    summary = build_corpus([path], tmp_path / "corpus", corpus_filter=keep_all)
    assert summary["read"]["documents"] == 60 and summary["read"]["paragraphs"] == 1841
    assert 0 < summary["paragraphs"] < 1841
    corpus = load_corpus(tmp_path / "corpus")
    assert len(corpus) == summary["documents"]
    assert all(len(s) >= 20 for doc in corpus for p in doc.paragraphs for s in p)


@pytest.mark.integration
def test_selqa_test_articles_in_the_wikipedia_files_are_excluded_by_default(shared_data, tmp_path):
    """Only the ``<doc>`` blocks of SelQA test articles (and two others) are built."""
    selqa = {
        normalize_title(t)
        for t in titles_from_selqa(shared_data / "selqa/ass/selqa-ass-test.json.gz")
    }
    found, others, blocks = [], 0, []
    for name in ("featured-articles", "good-articles-sample"):
        path = shared_data / f"wikipedia-en-2019/{name}.wikiextractor.txt.gz"
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            keep = False
            for line in lines:
                if line.startswith("<doc "):
                    title = re.search(r'title="(.*)">', line).group(1)
                    in_selqa = normalize_title(title) in selqa
                    keep = in_selqa or others < 2
                    found += [title] if in_selqa else []
                    others += int(keep and not in_selqa)
                if keep:
                    blocks.append(line)
    assert len(found) == 20  # data/README.md: 20 of SelQA's test articles are in these files
    source = tmp_path / "wiki_00"
    source.write_text("".join(blocks), encoding="utf-8")
    args = ["corpus", "build", str(source), "--out", str(tmp_path / "corpus")]
    result = CliRunner().invoke(corpus_cli(), args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["excluded_titles"] == sorted(found)
    assert summary["read"]["documents"] == 22 and summary["documents"] == 2
