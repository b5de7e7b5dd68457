import pytest
import torch
from encoder_data import corpus_sentences, synthetic_documents, tokenize_corpus

from ctxsent.models.mean_max_aae import MeanMaxAaeConfig, MeanMaxAaeEncoder
from ctxsent.objectives.reconstruct import (
    ReconstructionObjective,
    SentenceDataset,
    collate_reconstruction,
)
from ctxsent.text.vocabulary import BOS_ID, EOS_ID, Vocabulary


@pytest.fixture(scope="module")
def corpus():
    documents = synthetic_documents(4)
    vocabulary = Vocabulary.build(corpus_sentences(documents))
    return vocabulary, tokenize_corpus(documents, vocabulary)


def make_encoder(vocabulary, embedding_dim: int = 16, **settings) -> MeanMaxAaeEncoder:
    config = MeanMaxAaeConfig(
        len(vocabulary), embedding_dim, hidden_size=32, ffn_size=48, heads=4, **settings
    )
    return MeanMaxAaeEncoder(config, vocabulary)


@pytest.mark.parametrize("architecture", ["attention", "lstm"])
@pytest.mark.parametrize(("pooling", "views"), [("mean-max", 2), ("mean", 1), ("max", 1)])
def test_encoder_views_and_padding_invariance(corpus, architecture, pooling, views):
    vocabulary, _ = corpus
    encoder = make_encoder(vocabulary, architecture=architecture, pooling=pooling).eval()
    ids, mask = encoder.batch_ids(["the big cat sat on the red mat .", "a bird"])
    assert ids[1, 2].item() == EOS_ID  # "</s>" ends every input
    assert encoder.views(ids, mask).shape == (2, views, 32)
    assert encoder(ids, mask).shape == (2, encoder.dim) == (2, 32 * views)
    alone = encoder(*encoder.batch_ids(["a bird"]))
    assert torch.allclose(encoder(ids, mask)[1], alone[0], atol=1e-5)


def test_attention_encoder_has_no_residual_on_attention(corpus):
    """Eqs. 8-11: the attention output is not added to the input (equal widths here, so
    that a residual would fit)."""
    vocabulary, _ = corpus
    encoder = make_encoder(vocabulary, embedding_dim=32, dropout=0.0).eval()
    ids, mask = encoder.batch_ids(["the cat"])
    with torch.no_grad():
        encoder.attention.output.weight.zero_()
        encoder.attention.output.bias.zero_()
        encoder.ffn[2].weight.zero_()
        encoder.ffn[2].bias.fill_(1.0)
    hidden = encoder.hidden_states(ids, mask)
    assert torch.allclose(hidden, torch.zeros_like(hidden), atol=1e-5)  # LN(0 + 1) = 0


@pytest.mark.parametrize("architecture", ["attention", "lstm"])
def test_decoder_is_causal_and_attends_to_the_views(corpus, architecture):
    vocabulary, tokenized = corpus
    objective = ReconstructionObjective(make_encoder(vocabulary, architecture=architecture)).eval()
    batch = collate_reconstruction([SentenceDataset(tokenized)[i] for i in range(3)])
    assert (batch["decoder_inputs"][:, 0] == BOS_ID).all()
    views = objective.encoder.views(batch["input_ids"], batch["input_mask"])
    inputs = batch["decoder_inputs"]
    changed = inputs.clone()
    changed[:, 2] = 4 + (inputs[:, 2] - 3) % (len(vocabulary) - 4)
    embedding = objective.encoder.embedding
    before, after = (
        objective.decoder(views, inputs, embedding),
        objective.decoder(views, changed, embedding),
    )
    assert torch.equal(before[:, :2], after[:, :2])
    assert not torch.allclose(before[:, 2:], after[:, 2:])
    other_views = objective.decoder(views.flip(0), inputs, embedding)
    assert not torch.allclose(before, other_views)


@pytest.mark.parametrize("architecture", ["attention", "lstm"])
def test_reconstruction_trains_and_keeps_embeddings_frozen(corpus, architecture):
    vocabulary, tokenized = corpus
    objective = ReconstructionObjective(
        make_encoder(vocabulary, architecture=architecture, dropout=0.0)
    )
    frozen = objective.encoder.embedding.weight.clone()
    batch = collate_reconstruction([SentenceDataset(tokenized)[i] for i in range(8)])
    optimizer = torch.optim.Adam([p for p in objective.parameters() if p.requires_grad], lr=3e-3)
    first = objective(batch)["loss"].item()
    for _ in range(25):
        optimizer.zero_grad()
        objective(batch)["loss"].backward()
        optimizer.step()
    assert objective(batch)["loss"].item() < 0.6 * first
    assert torch.equal(objective.encoder.embedding.weight, frozen)


def test_self_attention_outputs_are_layer_normalised(corpus):
    """Each attention sub-layer ends in layer norm (the authors' released model), so the
    scale of the self-attention output reaches neither the views nor the logits."""
    vocabulary, tokenized = corpus
    objective = ReconstructionObjective(make_encoder(vocabulary, dropout=0.0)).eval()
    batch = collate_reconstruction([SentenceDataset(tokenized)[i] for i in range(3)])
    encoder, decoder = objective.encoder, objective.decoder

    def outputs():
        views = encoder.views(batch["input_ids"], batch["input_mask"])
        return views, decoder(views, batch["decoder_inputs"], encoder.embedding)

    with torch.no_grad():
        views, logits = outputs()
        for attention in (encoder.attention, decoder.self_attention):
            attention.output.weight.mul_(10.0)
            attention.output.bias.mul_(10.0)
        scaled_views, scaled_logits = outputs()
    assert torch.allclose(scaled_views, views, atol=1e-4)
    assert torch.allclose(scaled_logits, logits, atol=1e-4)
