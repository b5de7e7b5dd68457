import pytest
import torch
import torch.nn.functional as F
from encoder_data import corpus_sentences, synthetic_documents, tokenize_corpus

from ctxsent.models.rnn_cnn import DecoderConfig, RnnCnnConfig, RnnCnnEncoder, build_decoder
from ctxsent.objectives.next_window import (
    NextWindowDataset,
    NextWindowObjective,
    collate_next_window,
)
from ctxsent.text.vocabulary import PAD_ID, Vocabulary


@pytest.fixture(scope="module")
def corpus():
    documents = synthetic_documents(6)
    vocabulary = Vocabulary.build(corpus_sentences(documents))
    return vocabulary, tokenize_corpus(documents, vocabulary)


def make_encoder(vocabulary, **settings) -> RnnCnnEncoder:
    return RnnCnnEncoder(RnnCnnConfig(len(vocabulary), 16, hidden_size=12, **settings), vocabulary)


@pytest.mark.parametrize(
    ("settings", "dim"),
    [({}, 48), ({"pooling": "max"}, 24), ({"encoder": "cnn", "pooling": "max"}, 48)],
)
def test_encoder_dims_and_padding_invariance(corpus, settings, dim):
    vocabulary, _ = corpus
    encoder = make_encoder(vocabulary, **settings).eval()
    ids, mask = encoder.batch_ids(["the cat sat on the mat .", "a dog"])
    z = encoder(ids, mask)
    assert z.shape == (2, dim) == (2, encoder.dim)
    alone_ids, alone_mask = encoder.batch_ids(["a dog"])
    assert torch.allclose(z[1], encoder(alone_ids, alone_mask)[0], atol=1e-6)


def test_window_and_next_sentence_targets(corpus):
    _, tokenized = corpus
    windows = NextWindowDataset(tokenized, "window", target_length=5)
    source, target = windows[0]
    start = tokenized.ends[0]
    assert target.tolist() == tokenized.tokens[start : start + 5].tolist()
    assert source.tolist() == tokenized.sentence(0).tolist()
    sentences = NextWindowDataset(tokenized, "sentence", target_length=50)
    assert sentences[0][1].tolist() == tokenized.sentence(1).tolist()
    assert len(windows) == len(tokenized) - 6  # last sentence of each document has no target
    last = windows.sentence_index(len(windows) - 1)
    assert tokenized.ends[last] + len(windows[len(windows) - 1][1]) <= len(tokenized.tokens)
    batch = collate_next_window([windows[i] for i in range(4)], target_length=40)
    assert batch["targets"].shape == (4, 40)
    assert (batch["targets"][:, -1] == PAD_ID).all()  # windows end with their document


def test_predict_all_words_loss_is_eq3_with_tied_softmax(corpus):
    vocabulary, tokenized = corpus
    objective = NextWindowObjective(make_encoder(vocabulary), DecoderConfig("cnn", (8, 12), 6))
    batch = collate_next_window(
        [NextWindowDataset(tokenized, target_length=6)[i] for i in (0, 1)], 6
    )
    batch["targets"][1, 4:] = PAD_ID
    z = objective.encoder(batch["input_ids"], batch["input_mask"])
    decoder = objective.decoder
    features = decoder.conv2(
        F.relu(decoder.conv1(F.relu(decoder.expand(z)).view(2, 6, 8).transpose(1, 2)))
    ).transpose(1, 2)
    log_probs = torch.log_softmax(features @ objective.encoder.embedding.weight.T, dim=-1)
    targets = batch["targets"]
    expected = (
        -sum(log_probs[b, n, targets[b, n]] for b in range(2) for n in range(6) if targets[b, n])
        / 2
    )
    assert torch.allclose(objective(batch)["loss"], expected, atol=1e-4)


def test_teacher_forcing_feeds_targets_and_is_causal(corpus):
    vocabulary, _ = corpus
    z = torch.randn(2, 10)
    embedding = torch.nn.Embedding(len(vocabulary), 16)
    targets = torch.randint(4, len(vocabulary), (2, 6))
    changed = targets.clone()
    changed[:, 3] = (targets[:, 3] + 1 - 4) % (len(vocabulary) - 4) + 4
    for kind in ("rnn-ar", "cnn-ar"):
        decoder = build_decoder(DecoderConfig(kind, (8, 12), 6, "teacher-forcing"), 10, 16)
        before, after = decoder(z, targets, embedding), decoder(z, changed, embedding)
        assert torch.equal(before[:, :4], after[:, :4])  # positions <= 3 never see word 3
        assert not torch.allclose(before[:, 4:], after[:, 4:])


def test_sampling_modes_ignore_the_targets(corpus):
    vocabulary, _ = corpus
    z = torch.randn(2, 10)
    embedding = torch.nn.Embedding(len(vocabulary), 16)
    targets = torch.randint(4, len(vocabulary), (2, 6))
    for kind in ("rnn-ar", "cnn-ar"):
        for mode in ("always-sampling", "uniform-sampling"):
            decoder = build_decoder(DecoderConfig(kind, (8, 12), 6, mode), 10, 16)
            other_targets = torch.randint(4, len(vocabulary), (2, 6))
            torch.manual_seed(1)
            first = decoder(z, targets, embedding)
            torch.manual_seed(1)
            second = decoder(z, other_targets, embedding)
            assert first.shape == (2, 6, len(vocabulary))
            assert torch.equal(first, second)


def test_always_sampling_matches_teacher_forcing_on_the_sampled_words(corpus):
    """The step loop must compute what the parallel path computes for the same inputs."""
    vocabulary, _ = corpus
    z, embedding = torch.randn(3, 10), torch.nn.Embedding(len(vocabulary), 16)
    for kind in ("rnn-ar", "cnn-ar"):
        sampler = build_decoder(DecoderConfig(kind, (8, 12), 5, "always-sampling"), 10, 16)
        torch.manual_seed(2)
        logits = sampler(z, torch.zeros(3, 5, dtype=torch.long), embedding)
        torch.manual_seed(2)
        words = [torch.multinomial(F.softmax(logits[:, t], -1), 1).squeeze(1) for t in range(4)]
        sampler.input_mode = "teacher-forcing"
        targets = torch.stack([*words, words[0]], dim=1)
        assert torch.allclose(sampler(z, targets, embedding), logits, atol=1e-5)


@pytest.mark.parametrize(
    ("kind", "mode"),
    [
        ("cnn", "teacher-forcing"),
        ("rnn-all", "teacher-forcing"),
        ("rnn-ar", "teacher-forcing"),
        ("cnn-ar", "always-sampling"),
    ],
)
def test_training_steps_reduce_the_loss(corpus, kind, mode):
    vocabulary, tokenized = corpus
    objective = NextWindowObjective(
        make_encoder(vocabulary), DecoderConfig(kind, (16, 16), 5, mode)
    )
    dataset = NextWindowDataset(tokenized, target_length=5)
    batch = collate_next_window([dataset[i] for i in range(8)], 5)
    optimizer = torch.optim.Adam(objective.parameters(), lr=1e-2)
    first = objective(batch)["loss"].item()
    for _ in range(30):
        optimizer.zero_grad()
        loss = objective(batch)["loss"]
        loss.backward()
        optimizer.step()
    assert objective(batch)["loss"].item() < 0.7 * first
    assert objective.encoder.embedding.weight.grad is not None  # softmax tied to E
