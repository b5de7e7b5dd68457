"""Pre-training the RNN-CNN and Mean-Max AAE sentence encoders with Lightning.

Settings and presets are in :mod:`~ctxsent.training.encoder_presets`. The data is a folder
from ``ctxsent pretrain-data encoder`` (:mod:`~ctxsent.objectives.pretrain_data`): its
vocabulary and, memory-mapped, the word ids of each document's sentences, from which
next-window (RNN-CNN) or sentence (AAE) examples are cut when a batch needs them.

Batches come from :class:`~ctxsent.training.sampling.StreamBatches` (length-grouped; a
step's batch depends only on the seed; each DDP rank reads its share), and dropout and
sampled decoder inputs are seeded by the step, so a run resumed from its checkpoint goes on
exactly as an uninterrupted one would. The run is ``max_steps`` steps, else ``epochs``
passes over the examples.

``OUT`` after a run (:class:`~ctxsent.training.runs.TrainingRun`): ``run.json`` (the config,
the data folder's identity, progress, best evaluation and metrics), ``model/`` (the ctxsent
model folder: encoder only, vocabulary expanded, no decoder), ``logs/`` (CSV losses) and,
while it runs or with ``keep_checkpoints``, ``checkpoints/last.ckpt`` (encoder + decoder +
optimiser; a rerun with the same ``OUT``, config and data resumes from it, ``max_minutes`` /
``max_steps`` may change and count the whole run).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import torch

from ctxsent.errors import InputError
from ctxsent.evaluation.specs import evaluator_from_spec
from ctxsent.models.bag_of_words import WordVectors
from ctxsent.models.mean_max_aae import MeanMaxAaeConfig, MeanMaxAaeEncoder
from ctxsent.models.rnn_cnn import DecoderConfig, RnnCnnConfig, RnnCnnEncoder
from ctxsent.models.word_embeddings import expand_embeddings, pretrained_embeddings
from ctxsent.models.word_level_encoder import WordLevelEncoder
from ctxsent.objectives.next_window import (
    NextWindowDataset,
    NextWindowObjective,
    collate_next_window,
)
from ctxsent.objectives.pretrain_data import (
    VOCABULARY_FILE,
    ArrowSentences,
    check_encoder_data,
    data_identity,
    load_pretrain_data,
)
from ctxsent.objectives.reconstruct import (
    ReconstructionObjective,
    SentenceDataset,
    collate_reconstruction,
)
from ctxsent.text.vocabulary import Vocabulary
from ctxsent.training.encoder_presets import GLOVE_PACKAGE, EncoderPretrainConfig
from ctxsent.training.engine import OptimizerSettings, pretraining_evaluation
from ctxsent.training.runs import TrainingRun
from ctxsent.training.sampling import stream_loader


def load_word_vectors(config: EncoderPretrainConfig) -> WordVectors | None:
    if config.word_vectors == "none":
        return None
    if config.word_vectors == GLOVE_PACKAGE:
        vectors = WordVectors.glove_6b_50d()
    else:
        vectors = WordVectors.load(config.word_vectors)
    if vectors.dim != config.embedding_dim:
        raise InputError(
            f"{vectors.dim}-d word vectors for embedding_dim={config.embedding_dim}: pass "
            f"{config.embedding_dim}-d vectors (the papers use GloVe 840B 300-d) or "
            f"--set embedding_dim={vectors.dim}",
            field="word_vectors",
        )
    return vectors


#: The encoder class each ``config.model`` trains.
ENCODERS: dict[str, type[WordLevelEncoder]] = {
    "rnn-cnn": RnnCnnEncoder,
    "mean-max-aae": MeanMaxAaeEncoder,
}


def build_objective(
    config: EncoderPretrainConfig, vocabulary: Vocabulary, vectors: WordVectors | None
) -> torch.nn.Module:
    """The encoder (embeddings from ``vectors`` when given) wrapped in its paper's objective."""
    encoder_class(config)  # a known model
    if config.model == "rnn-cnn":
        encoder: WordLevelEncoder = RnnCnnEncoder(
            RnnCnnConfig(
                len(vocabulary),
                config.embedding_dim,
                config.encoder,
                config.hidden_size,
                pooling=config.pooling,
                max_length=config.max_length,
            ),
            vocabulary,
        )
    else:
        encoder = MeanMaxAaeEncoder(
            MeanMaxAaeConfig(
                len(vocabulary),
                config.embedding_dim,
                config.architecture,
                config.hidden_size,
                config.ffn_size,
                config.heads,
                config.dropout,
                config.pooling,
                config.max_length,
            ),
            vocabulary,
        )
    if vectors is not None:
        matrix, _ = pretrained_embeddings(vocabulary, vectors, config.seed)
        with torch.no_grad():
            encoder.embedding.weight.copy_(torch.from_numpy(matrix))
    if config.model == "rnn-cnn":
        decoder = DecoderConfig(
            config.decoder, tuple(config.decoder_dims), config.target_length, config.input_mode
        )
        return NextWindowObjective(encoder, decoder)
    return ReconstructionObjective(encoder)


def export_encoder(
    encoder: WordLevelEncoder,
    vectors: WordVectors | None,
    config: EncoderPretrainConfig,
    folder: Path,
) -> int:
    """Save the encoder alone, its vocabulary expanded; returns the saved vocabulary size."""
    vocabulary = encoder.vocabulary
    embeddings = encoder.embedding.weight.detach().cpu().numpy()
    if vectors is not None and config.expand_vocabulary > 0:
        mode = "linear-map" if config.model == "rnn-cnn" else "copy"
        vocabulary, embeddings = expand_embeddings(
            vocabulary, embeddings, vectors, mode, config.expand_vocabulary
        )
    encoder.with_vocabulary(vocabulary, embeddings).save_pretrained(folder)
    return len(vocabulary)


def encoder_class(config: EncoderPretrainConfig) -> type[WordLevelEncoder]:
    """The encoder class ``config.model`` trains (:data:`ENCODERS`)."""
    if config.model not in ENCODERS:
        known = ", ".join(ENCODERS)
        raise InputError(f"unknown model {config.model!r} (known: {known})", field="model")
    return ENCODERS[config.model]


def pretrain_encoder(
    data: str | Path, out_dir: str | Path, config: EncoderPretrainConfig, overwrite: bool = False
) -> dict:
    """Train per ``config`` on the data folder ``data``; write ``OUT`` (module docstring) and
    return the run's record.

    ``data`` must have been built with the run's ``vocab_size`` and ``max_sentences``.
    ``overwrite`` starts again a run that ``OUT`` holds with other settings.
    """
    data = Path(data)
    run = TrainingRun(out_dir, config, encoder_class(config).kind, overwrite=overwrite)
    rows, data_summary = load_pretrain_data(data, "encoder")
    check_encoder_data(data_summary, data, config.vocab_size, config.max_sentences)
    run.settings["data"] = data_identity(data_summary)
    evaluator = config.eval and evaluator_from_spec(config.eval, ("senteval", "squad")) or None
    vectors = load_word_vectors(config)
    vocabulary = Vocabulary.load(data / VOCABULARY_FILE)
    with run.started(lambda: build_objective(config, vocabulary, vectors)) as objective:
        corpus = ArrowSentences(rows)
        if config.model == "rnn-cnn":
            dataset = NextWindowDataset(
                corpus, config.target, config.target_length, config.max_length
            )
            collate = partial(collate_next_window, target_length=config.target_length)
        else:
            dataset = SentenceDataset(corpus, config.max_length)
            collate = collate_reconstruction
        if len(dataset) == 0:
            raise InputError("has no training example (documents of one sentence?)", path=data)
        total = config.max_steps or config.epochs * (
            len(dataset) // min(config.batch_size, len(dataset))
        )
        lengths = dataset.input_lengths()
        loader = stream_loader(dataset, config, total, "sentences", collate, lengths)

        def save() -> int:
            return export_encoder(objective.encoder, vectors, config, run.model_dir)

        on_best = run.keep_best(save)
        evaluation = pretraining_evaluation(config, evaluator, objective.encoder, on_best)
        trained = run.train(
            objective,
            loader,
            OptimizerSettings(config.learning_rate, schedule="constant"),  # Adam
            max_steps=total,
            max_minutes=config.max_minutes,
            max_grad_norm=config.max_grad_norm,
            checkpoint_every=config.checkpoint_every,
            evaluation=evaluation,
        )
        saved_words = None
        if trained.is_global_zero and evaluation is None:  # else OUT/model is the best's
            saved_words = save()
        described = {
            "folder": str(data),
            "examples": len(dataset),
            "vocabulary": len(vocabulary),
            "saved_vocabulary": saved_words,
        }
        return run.finish(trained, data=described)
