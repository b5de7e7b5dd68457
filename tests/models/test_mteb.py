"""ctxsent encoders take what MTEB 2 passes to ``encode``: a DataLoader of batches and keyword
arguments (``EncoderProtocol.encode``); one small STS evaluation runs offline end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import pearsonr, spearmanr
from torch.utils.data import DataLoader

import ctxsent
from ctxsent.errors import InputError
from ctxsent.models.bi_encoder import BiEncoderRanker
from ctxsent.protocols import as_texts

# Ten pairs, their texts of different lengths (so length sorting reorders them within the
# batches), their gold scores distinct (no ties in the Spearman correlation).
SENTENCE1 = [
    "the keeper lit the lamp at dusk.",
    "ships pass the rocky island.",
    "a storm broke over the harbour in the night and the boats stayed in.",
    "fog.",
    "the lighthouse stands on a rock far out at sea.",
    "gulls circled.",
    "the tide came in quickly over the sand.",
    "she read the old logbook by candlelight.",
    "waves.",
    "the fishermen mended their nets on the quay before dawn.",
]
SENTENCE2 = [
    "at dusk the keeper lit the lamp.",
    "a train left the station.",
    "the boats stayed in the harbour during the storm.",
    "thick fog covered the coast for three days and nobody sailed.",
    "far out at sea a lighthouse stands on a rock.",
    "the birds flew in circles above the cliffs.",
    "he sold bread in the market.",
    "the logbook was read by candlelight.",
    "the sea was calm.",
    "nets.",
]
GOLD = [5.0, 0.5, 4.0, 2.5, 4.5, 3.0, 0.0, 3.5, 1.5, 2.0]
MTEB_KWARGS = {
    "task_metadata": None,
    "hf_split": "test",
    "hf_subset": "default",
    "prompt_type": None,
    "show_progress_bar": False,
}


@pytest.fixture(scope="module")
def ranker(tiny_bert) -> BiEncoderRanker:
    return BiEncoderRanker.from_backbone(str(tiny_bert), max_length=16).eval()


def batches(texts: list[str], batch_size: int) -> DataLoader:
    """The DataLoader MTEB 2 builds from texts: batches ``{"text": [...]}``."""
    return DataLoader([{"text": t} for t in texts], batch_size=batch_size)


def test_encode_takes_mteb_batches_and_keyword_arguments(ranker):
    texts = SENTENCE1 + SENTENCE2
    expected = ranker.encode(texts, batch_size=4)
    embedded = ranker.encode(batches(texts, 3), batch_size=4, **MTEB_KWARGS)
    assert np.array_equal(embedded, expected)  # same texts, same chunks: bit for bit
    # MTEB's own progress flag and float32 precision are accepted; the embeddings stay
    raw = ranker.encode(texts, 4, normalize=False, precision="float32", task_name="STS")
    assert np.array_equal(raw, ranker.encode(texts, 4, normalize=False))


def test_the_sentence_transformers_adapter_takes_them_too(tiny_bert):
    pytest.importorskip("sentence_transformers")
    model = ctxsent.load(f"st:{tiny_bert}")
    texts = SENTENCE1 + SENTENCE2
    embedded = model.encode(batches(texts, 3), batch_size=4, **MTEB_KWARGS)
    assert np.array_equal(embedded, model.encode(texts, batch_size=4))


def test_as_texts_keeps_order_across_batches_and_ignores_other_keys():
    loader = [{"text": ["a", "b"], "id": ["1", "2"]}, {"text": ["c"], "id": ["3"]}]
    assert as_texts(loader) == ["a", "b", "c"]
    assert as_texts(("x", "y")) == ["x", "y"] and as_texts([]) == []


@pytest.mark.parametrize(
    ("texts", "message"),
    [
        ([{"text": ["a"]}, {"id": ["2"]}], "field 'texts': batch 1 has no 'text' key (keys: 'id')"),
        (["a", 3], "field 'texts': item 1 is not a string: int"),
        ([{"text": ["a", None]}], "field 'texts': batch 0: 'text' is not a list of strings"),
        ([{"text": 7}], "field 'texts': batch 0: 'text' is not a list of strings"),
        ("one text", "field 'texts': expected a list of strings, got a single string"),
    ],
)
def test_bad_input_gets_one_line_naming_it(ranker, texts, message):
    with pytest.raises(InputError) as error:
        ranker.encode(texts)
    assert str(error.value) == message


def test_unknown_options_are_refused_not_ignored(ranker):
    with pytest.raises(TypeError, match="unexpected keyword arguments: prompt"):
        ranker.encode(["a"], prompt="query: ")
    with pytest.raises(InputError, match="field 'precision': embeddings are float32; got 'int8'"):
        ranker.encode(["a"], precision="int8")


@pytest.fixture(scope="module")
def mteb(tmp_path_factory):
    """mteb, imported with its result cache (made at import) in a temporary folder."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MTEB_CACHE", str(tmp_path_factory.mktemp("mteb-cache")))
        yield pytest.importorskip("mteb")


def test_mteb_encoder_refuses_a_non_encoder(mteb):
    with pytest.raises(TypeError, match="mteb_encoder takes an encoder"):
        ctxsent.mteb_encoder(object())


def test_mteb_evaluate_scores_our_embeddings(mteb, ranker, tmp_path):
    from datasets import Dataset, DatasetDict
    from mteb.abstasks.sts import AbsTaskSTS

    class TinySTS(AbsTaskSTS):
        """Ten in-memory pairs scored 0..5: nothing to download."""

        min_score, max_score = 0, 5
        metadata = mteb.TaskMetadata(
            name="CtxsentTinySTS",
            description="Ten synthetic sentence pairs for a ctxsent test.",
            reference=None,
            dataset={"path": "NA", "revision": "NA"},
            type="STS",
            category="t2t",
            modalities=["text"],
            eval_splits=["test"],
            eval_langs=["eng-Latn"],
            main_score="cosine_spearman",
            date=("2024-01-01", "2024-01-01"),
            dialect=[],
            domains=[],
            task_subtypes=[],
            license="cc-by-4.0",
            annotations_creators="derived",
            sample_creation="created",
            bibtex_citation="",
        )

        def load_data(self, num_proc=None, **kwargs) -> None:
            pairs = {"sentence1": SENTENCE1, "sentence2": SENTENCE2, "score": GOLD}
            self.dataset = DatasetDict({"test": Dataset.from_dict(pairs)})
            self.data_loaded = True

    calls: list[tuple[type, set[str]]] = []

    class Recorder:
        """The ranker's encode, noting what MTEB hands to it."""

        def encode(self, texts, **kwargs):
            calls.append((type(texts), set(kwargs)))
            return ranker.encode(texts, **kwargs)

    adapter = ctxsent.mteb_encoder(Recorder(), name="ctxsent/tiny")
    result = mteb.evaluate(
        adapter,
        TinySTS(),
        cache=None,
        co2_tracker=False,
        encode_kwargs={"batch_size": 3, "show_progress_bar": False},
        prediction_folder=tmp_path,
        show_progress_bar=False,
    )
    # MTEB really handed over DataLoaders with its keyword arguments
    expected_kwargs = {"task_metadata", "hf_split", "hf_subset", "prompt_type", "batch_size"}
    assert len(calls) == 2
    assert all(kind is DataLoader and expected_kwargs <= kw for kind, kw in calls)
    # the per-pair cosines it scored are those of our embeddings, in order
    e1, e2 = ranker.encode(SENTENCE1, 3), ranker.encode(SENTENCE2, 3)
    cosines = (e1 * e2).sum(axis=1)  # normalised embeddings
    predictions = json.loads((tmp_path / "CtxsentTinySTS_predictions.json").read_text())
    np.testing.assert_allclose(predictions["default"]["test"]["cosine_scores"], cosines, atol=1e-6)
    # and the correlations it reports are those of these cosines with the gold scores
    (task_result,) = result.task_results
    (scores,) = task_result.scores["test"]
    assert scores["cosine_spearman"] == pytest.approx(spearmanr(GOLD, cosines)[0], abs=1e-9)
    assert scores["cosine_pearson"] == pytest.approx(pearsonr(GOLD, cosines)[0], abs=1e-6)
    assert scores["main_score"] == scores["cosine_spearman"]
