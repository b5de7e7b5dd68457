import json
from dataclasses import replace

import numpy as np
import pytest
import safetensors.torch
import torch
from encoder_data import corpus_sentences, synthetic_documents, write_word_vectors

import ctxsent
from ctxsent.errors import InputError, ModelFolderError
from ctxsent.models.bag_of_words import WordVectors
from ctxsent.presets import get_preset
from ctxsent.text.vocabulary import Vocabulary
from ctxsent.training.encoder_pretrain import build_objective, export_encoder

TINY = {
    "embedding_dim": 16,
    "hidden_size": 16,
    "ffn_size": 32,
    "heads": 2,
    "decoder_dims": (8, 16),
    "expand_vocabulary": 20,
}
SENTENCES = ["the cat sat on the mat .", "a zzz bird", "fish"]


@pytest.fixture(scope="module")
def vectors(tmp_path_factory):
    return WordVectors.load(write_word_vectors(tmp_path_factory.mktemp("v") / "v.txt", dim=16))


@pytest.mark.parametrize("preset", ["rnn-cnn-small-cpu", "mean-max-aae-cpu", "mean-max-rae-cpu"])
def test_save_load_encode_round_trip_without_decoder(tmp_path, vectors, preset):
    config = replace(get_preset(preset).config, **TINY)
    vocabulary = Vocabulary.build(corpus_sentences(synthetic_documents(3)))
    objective = build_objective(config, vocabulary, vectors).eval()
    export_encoder(objective.encoder, vectors, config, tmp_path / "encoder")
    loaded = ctxsent.load(tmp_path / "encoder")
    assert type(loaded) is type(objective.encoder)
    assert np.allclose(loaded.encode(SENTENCES), objective.encoder.encode(SENTENCES), atol=1e-6)
    weights = safetensors.torch.load_file(tmp_path / "encoder" / "model.safetensors")
    assert weights and not any(name.startswith("decoder") for name in weights)
    assert set(weights) == set(objective.encoder.state_dict())
    expanded = loaded.vocabulary
    assert len(expanded) == len(vocabulary) + 20 and "novel3" in expanded.index
    vector = loaded.encode(["novel3"])[0]
    assert not np.allclose(vector, loaded.encode(["zzzunknown"])[0])  # expanded word is not <unk>


def test_rnn_cnn_expansion_maps_pretrained_vectors_linearly(tmp_path, vectors):
    config = replace(get_preset("rnn-cnn-small-cpu").config, **TINY)
    vocabulary = Vocabulary.build(corpus_sentences(synthetic_documents(3)))
    objective = build_objective(config, vocabulary, vectors)
    with torch.no_grad():  # as if training had learned E(w) = 2 v(w) + 1
        objective.encoder.embedding.weight.mul_(2.0).add_(1.0)
    export_encoder(objective.encoder, vectors, config, tmp_path / "encoder")
    loaded = ctxsent.load(tmp_path / "encoder")
    learned = objective.encoder.embedding.weight.detach().numpy()
    saved = loaded.embedding.weight.detach().numpy()
    assert np.array_equal(saved[: len(vocabulary)], learned)
    new = loaded.vocabulary.index["novel3"]
    assert np.allclose(saved[new], 2 * vectors.vectors[vectors.index["novel3"]] + 1, atol=1e-4)


def test_bad_folders_and_inputs(tmp_path, vectors):
    config = replace(get_preset("mean-max-aae-cpu").config, **TINY)
    vocabulary = Vocabulary.build(corpus_sentences(synthetic_documents(2)))
    encoder = build_objective(config, vocabulary, vectors).encoder
    folder = tmp_path / "encoder"
    encoder.save_pretrained(folder)
    with pytest.raises(InputError, match="text 1 is empty"):
        encoder.encode(["fine", "  "])
    manifest = json.loads((folder / "ctxsent.json").read_text())
    manifest["config"]["hidden_size"] = 24
    (folder / "ctxsent.json").write_text(json.dumps(manifest))
    with pytest.raises(ModelFolderError, match="cannot load the weights"):
        ctxsent.load(folder)
    manifest["config"]["colour"] = "red"
    (folder / "ctxsent.json").write_text(json.dumps(manifest))
    with pytest.raises(ModelFolderError, match="unknown config fields"):
        ctxsent.load(folder)
    (folder / "vocab.txt").unlink()
    with pytest.raises(ModelFolderError):
        ctxsent.load(folder)
    with pytest.raises(ModelFolderError, match="no ctxsent.json"):
        ctxsent.load(tmp_path)
