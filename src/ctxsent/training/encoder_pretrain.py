"""Pre-training the RNN-CNN and Mean-Max AAE sentence encoders with Lightning.

Settings and presets are in :mod:`~ctxsent.training.encoder_presets`.

``OUT`` after a run: ``vocab.txt`` (training vocabulary), ``run.json`` (the config and
whether the run finished, :mod:`~ctxsent.training.runs`), ``checkpoints/last.ckpt``
(encoder + decoder + optimiser; a rerun with the same ``OUT`` and config resumes from it,
``max_minutes`` / ``max_steps`` may change and count the whole run; a run
resumed from the end-of-run checkpoint starts a new epoch, i.e. a new batch order),
``logs/`` (CSV losses), ``encoder/`` (the ctxsent model folder: encoder only, vocabulary
expanded, no decoder) and ``train.json`` (steps, loss, speed).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import asdict
from functools import partial
from pathlib import Path

import lightning as L
import torch
from torch.utils.data import DataLoader

from ctxsent.corpus.document import Document
from ctxsent.errors import InputError
from ctxsent.io import atomic_write, check_output
from ctxsent.models.bag_of_words import WordVectors
from ctxsent.models.mean_max_aae import MeanMaxAaeConfig, MeanMaxAaeEncoder
from ctxsent.models.precision import lightning_precision
from ctxsent.models.rnn_cnn import DecoderConfig, RnnCnnConfig, RnnCnnEncoder
from ctxsent.models.word_embeddings import expand_embeddings, pretrained_embeddings
from ctxsent.models.word_level_encoder import WordLevelEncoder
from ctxsent.objectives.next_window import (
    NextWindowDataset,
    NextWindowObjective,
    collate_next_window,
)
from ctxsent.objectives.reconstruct import (
    ReconstructionObjective,
    SentenceDataset,
    collate_reconstruction,
)
from ctxsent.text.vocabulary import Vocabulary, corpus_sentences, tokenize_corpus
from ctxsent.training.checkpoints import newest_checkpoint
from ctxsent.training.encoder_presets import GLOVE_PACKAGE, PretrainConfig
from ctxsent.training.progress import StderrProgressBar
from ctxsent.training.runs import finish_run, start_run
from ctxsent.training.sampling import LengthGroupedBatches, batches_done_this_epoch

LIMITS = ("max_steps", "max_minutes")  # may change when a run is resumed


class EncoderPretrainModule(L.LightningModule):
    """Runs an objective (encoder + decoder + loss) with Adam."""

    def __init__(self, objective: torch.nn.Module, config: PretrainConfig, batches) -> None:
        super().__init__()
        self.objective, self.config, self.batches = objective, config, batches

    def on_train_epoch_start(self) -> None:
        self.batches.set_epoch(self.current_epoch)  # same batches after a resume

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        self.batches.skip = batches_done_this_epoch(checkpoint)  # a mid-epoch checkpoint

    def training_step(self, batch, batch_idx):
        loss = self.objective(batch)
        self.log("train_loss", loss, prog_bar=True, batch_size=len(batch["input_ids"]))
        return loss

    def configure_optimizers(self):
        parameters = [p for p in self.objective.parameters() if p.requires_grad]
        return torch.optim.Adam(parameters, lr=self.config.learning_rate)


def load_word_vectors(config: PretrainConfig) -> WordVectors | None:
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
    config: PretrainConfig, vocabulary: Vocabulary, vectors: WordVectors | None
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
    encoder: WordLevelEncoder, vectors: WordVectors | None, config: PretrainConfig, folder: Path
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


def encoder_class(config: PretrainConfig) -> type[WordLevelEncoder]:
    """The encoder class ``config.model`` trains (:data:`ENCODERS`)."""
    if config.model not in ENCODERS:
        known = ", ".join(ENCODERS)
        raise InputError(f"unknown model {config.model!r} (known: {known})", field="model")
    return ENCODERS[config.model]


def pretrain_encoder(
    documents: Iterable[Document],
    out_dir: str | Path,
    config: PretrainConfig,
    overwrite: bool = False,
) -> dict:
    """Train per ``config`` on ``documents``; write ``OUT`` (see the module docstring).

    ``overwrite`` starts again a run that ``OUT`` holds with other settings.
    """
    out = Path(out_dir)
    check_output(out / "encoder", encoder_class(config).kind, overwrite)
    start_run(
        out, asdict(config), state=("checkpoints", "vocab.txt", "encoder"), may_change=LIMITS,
        overwrite=overwrite,
    )  # fmt: skip
    L.seed_everything(config.seed, verbose=False)
    vectors = load_word_vectors(config)
    documents = list(documents) if not hasattr(documents, "__len__") else documents
    vocabulary_path = out / "vocab.txt"
    if vocabulary_path.is_file():
        vocabulary = Vocabulary.load(vocabulary_path)
    else:
        vocabulary = Vocabulary.build(
            corpus_sentences(documents, config.max_sentences), config.vocab_size
        )
        vocabulary.save(vocabulary_path)
    corpus = tokenize_corpus(documents, vocabulary, config.max_sentences)
    objective = build_objective(config, vocabulary, vectors)
    if config.model == "rnn-cnn":
        dataset = NextWindowDataset(corpus, config.target, config.target_length, config.max_length)
        collate = partial(collate_next_window, target_length=config.target_length)
    else:
        dataset = SentenceDataset(corpus, config.max_length)
        collate = collate_reconstruction
    if len(dataset) == 0:
        raise InputError("the corpus has no training example (documents of one sentence?)")
    batches = LengthGroupedBatches(dataset.input_lengths(), config.batch_size, config.seed)
    loader = DataLoader(dataset, batch_sampler=batches, collate_fn=collate)
    module = EncoderPretrainModule(objective, config, batches)
    device_type = "cuda" if config.accelerator != "cpu" and torch.cuda.is_available() else "cpu"
    checkpoints = newest_checkpoint(
        out / "checkpoints", every_n_train_steps=config.checkpoint_every
    )
    trainer = L.Trainer(
        default_root_dir=out,
        accelerator=config.accelerator,
        devices=1,
        max_epochs=config.epochs,
        max_steps=config.max_steps or -1,
        max_time={"minutes": config.max_minutes} if config.max_minutes else None,
        precision=lightning_precision(config.precision, device_type),
        gradient_clip_val=config.max_grad_norm,
        callbacks=[checkpoints, StderrProgressBar(refresh_rate=20)],
        logger=L.pytorch.loggers.CSVLogger(out, name="logs"),
        enable_model_summary=False,
        use_distributed_sampler=False,
    )
    last = out / "checkpoints" / "last.ckpt"
    resumed = last.exists()
    started = time.perf_counter()
    trainer.fit(module, loader, ckpt_path=str(last) if resumed else None)
    seconds = time.perf_counter() - started
    trainer.save_checkpoint(last)
    saved_words = export_encoder(objective.encoder, vectors, config, out / "encoder")
    steps = trainer.global_step
    loss = trainer.callback_metrics.get("train_loss")
    summary = {
        "steps": steps,
        "examples": len(dataset),
        "sentences_seen": steps * config.batch_size,
        "train_loss": None if loss is None else float(loss),
        "fit_seconds": round(seconds, 1),
        "resumed": resumed,
        "vocabulary": len(vocabulary),
        "saved_vocabulary": saved_words,
        "encoder_dim": objective.encoder.dim,
        "config": json.loads(json.dumps(asdict(config))),
    }
    with atomic_write(out / "train.json") as handle:
        json.dump(summary, handle, indent=2)
    finish_run(out, summary, model="encoder")
    return summary
