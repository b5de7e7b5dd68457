import pytest

from ctxsent.corpus import build_corpus, load_corpus
from ctxsent.corpus.readers import CorpusFormat, detect_format, read_documents


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

    summary = build_corpus([path], tmp_path / "corpus")
    assert summary["read"]["documents"] == 60 and summary["read"]["paragraphs"] == 1841
    assert 0 < summary["paragraphs"] < 1841
    corpus = load_corpus(tmp_path / "corpus")
    assert len(corpus) == summary["documents"]
    assert all(len(s) >= 20 for doc in corpus for p in doc.paragraphs for s in p)
