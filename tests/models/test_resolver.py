"""ctxsent.load: one spec grammar for every model, and capability checks by protocol."""

from __future__ import annotations

import numpy as np
import pytest

import ctxsent
from ctxsent.errors import InputError, ModelFolderError
from ctxsent.models.baseline_rankers import BM25Ranker
from ctxsent.models.bi_encoder import BiEncoderRanker
from ctxsent.models.cross_encoder import CrossEncoderRanker
from ctxsent.models.st_adapters import CrossEncoderAdapter, SentenceTransformerAdapter
from ctxsent.protocols import Encoder, Ranker
from ctxsent.resolver import load_encoder, load_ranker, load_retrieval_model, zero_shot_backbone
from synthetic import make_records


def test_built_in_names_and_prefixes_name_their_models(tiny_bert, tmp_path):
    folder = CrossEncoderRanker.from_backbone(str(tiny_bert), max_length=32).save_pretrained(
        tmp_path / "ce"
    )
    assert isinstance(ctxsent.load("bm25"), BM25Ranker)
    assert isinstance(ctxsent.load(folder), CrossEncoderRanker)
    assert isinstance(ctxsent.load(str(folder)), CrossEncoderRanker)
    bi_encoder = ctxsent.load(f"bi-encoder:{tiny_bert}")
    assert isinstance(bi_encoder, BiEncoderRanker)
    assert isinstance(bi_encoder, Ranker) and isinstance(bi_encoder, Encoder)
    assert isinstance(ctxsent.load(f"st:{tiny_bert}"), SentenceTransformerAdapter)
    assert isinstance(ctxsent.load(f"ce:{tiny_bert}"), CrossEncoderAdapter)


def test_a_sentence_transformer_ranks_by_the_cosine_of_its_own_embeddings(tiny_bert):
    model = ctxsent.load(f"st:{tiny_bert}")
    records = make_records(questions=2, candidates=4)
    scores = model.predict(records)
    own = model.model.encode
    for record, score in zip(records, scores, strict=True):
        q, c = own([record.question, record.candidate], normalize_embeddings=True)
        assert score == pytest.approx(float(q @ c), abs=1e-5)
    embedded = model.encode(["a lamp"], normalize=False)
    assert np.allclose(embedded, own(["a lamp"]), atol=1e-6)


def test_a_cross_encoder_scores_each_pair_with_its_own_predict(tiny_bert):
    model = ctxsent.load(f"ce:{tiny_bert}")
    records = make_records(questions=2, candidates=3)
    expected = model.model.predict([(r.question, r.candidate) for r in records])
    assert np.allclose(model.predict(records, batch_size=2), expected, atol=1e-6)


def test_what_a_model_cannot_do_is_refused_naming_it(tiny_bert, tiny_vectors):
    with pytest.raises(InputError, match="a BM25Ranker cannot embed sentences"):
        load_encoder("bm25")
    with pytest.raises(InputError, match="a CrossEncoderAdapter cannot embed"):
        load_encoder(f"ce:{tiny_bert}")
    with pytest.raises(InputError, match="a BagOfWordsEncoder cannot rank answers"):
        load_ranker(f"bow:{tiny_vectors}")


def test_a_spec_naming_nothing_lists_the_grammar(tiny_bert, tmp_path):
    with pytest.raises(ModelFolderError, match="not a folder, nor a model name .*bm25"):
        ctxsent.load("bm2")
    with pytest.raises(ModelFolderError, match="pass bi-encoder:PATH"):
        ctxsent.load(tiny_bert)  # a Hugging Face folder, not a ctxsent one
    with pytest.raises(ModelFolderError, match="not a ctxsent model folder"):
        ctxsent.load(tmp_path)


@pytest.fixture
def tiny_vectors(tmp_path):
    path = tmp_path / "vectors.txt"
    path.write_text("lamp 1 0\ntower 0 1\n", encoding="utf-8")
    return path


def test_paragraph_ranking_specs_name_an_encoder_and_whether_to_rank_by_cosine(tiny_bert):
    from ctxsent.models.bi_encoder import BiEncoder

    assert isinstance(load_retrieval_model("bm25")[0], BM25Ranker)
    assert load_retrieval_model("bm25")[1] is False
    zero_shot = f"bi-encoder:{tiny_bert}"
    for spec, cosine in ((zero_shot, False), (f"cosine:{zero_shot}", True)):
        model, by_cosine = load_retrieval_model(spec)  # the ranker's own encoder
        assert type(model) is BiEncoder and by_cosine is cosine
    with pytest.raises(InputError, match="a CrossEncoderAdapter cannot embed passages"):
        load_retrieval_model(f"ce:{tiny_bert}")
    assert zero_shot_backbone("bi-encoder") == "all-MiniLM-L6-v2"
    assert (
        zero_shot_backbone("bi-encoder:x/y") == "x/y" and zero_shot_backbone("minilm") == "minilm"
    )
