from ctxsent.corpus.document import RawDocument
from ctxsent.corpus.filters import CorpusFilter, process_document
from ctxsent.corpus.stats import CorpusStats

LONG = "This sentence is long enough to keep."  # 37 chars
SHORT = "Too short."  # 10 chars


def run(paragraphs, title="T", **config):
    stats = CorpusStats()
    doc = process_document(RawDocument("1", title, paragraphs), CorpusFilter(**config), stats)
    return doc, stats


def test_filters_apply_to_sentences_then_paragraphs_then_documents():
    doc, stats = run(
        [
            f"{LONG} {SHORT} {LONG}",  # keeps 2 long sentences (74 chars)
            f"{LONG} {SHORT}",  # 37 chars left after the sentence filter: dropped
            SHORT,  # nothing left: dropped
        ],
        min_document_chars=50,
    )
    assert doc is not None and doc.paragraphs == [[LONG, LONG]]
    assert (stats.sentences_read, stats.sentences_dropped, stats.sentences) == (6, 3, 2)
    assert (stats.paragraphs_read, stats.paragraphs_dropped, stats.paragraphs) == (3, 2, 1)
    assert (stats.documents_read, stats.documents) == (1, 1)
    assert stats.tokens == 2 * len(LONG.split())
    assert stats.tokens_read == 3 * len(LONG.split()) + 3 * len(SHORT.split())


def test_document_filter_counts_remaining_characters_only():
    doc, stats = run([f"{LONG} {LONG}", f"{SHORT} {SHORT} {SHORT}"], min_document_chars=75)
    assert doc is None
    assert (stats.documents_dropped, stats.documents, stats.paragraphs, stats.sentences) == (
        1,
        0,
        0,
        0,
    )
    doc, _ = run([f"{LONG} {LONG}"], min_document_chars=74)
    assert doc is not None


def test_zero_thresholds_keep_everything():
    doc, stats = run([SHORT], min_sentence_chars=0, min_paragraph_chars=0, min_document_chars=0)
    assert doc.paragraphs == [[SHORT]]
    assert stats.sentences_dropped == stats.paragraphs_dropped == 0


def test_excluded_title_is_dropped_before_splitting():
    doc, stats = run(
        [LONG * 10], title="Super_Bowl_50", exclude_titles=frozenset({"super bowl 50"})
    )
    assert doc is None
    assert (stats.documents_read, stats.documents_excluded, stats.paragraphs_read) == (1, 1, 0)
    assert stats.excluded_titles == ["Super_Bowl_50"]


def test_filter_stores_titles_normalised():
    corpus_filter = CorpusFilter(exclude_titles=frozenset({"Ise @-@ class battleship"}))
    assert corpus_filter.exclude_titles == {"ise-class battleship"}
    assert corpus_filter.excludes("Ise-class_battleship")
    assert not CorpusFilter().excludes("Anything")
