"""Continuous pre-training with MLM + SSP (SSP paper, section 6 and appendix C).

The backbone (MiniLM-L6 by default) is wrapped as a contextual
:class:`~ctxsent.models.cross_encoder.CrossEncoderRanker` (three segment ids,
one-logit head) and trained on the tokenised examples of
:mod:`ctxsent.objectives.ssp_data` with :class:`~ctxsent.objectives.ssp_objective.SspObjective`
(``mlm_weight * MLM + ssp_weight * SSP``, both 1.0, appendix C) on the training engine
(:mod:`~ctxsent.training.engine`): AdamW, triangular learning rate (linear warm-up then
linear decay), max length 128, gradients clipped at 1.0.

Decisions where the paper is silent or does not apply:

* The saved model is a contextual cross-encoder folder (``OUT/model``), so
  ``ctxsent finetune as2 --init OUT/model --contextual`` starts from it with
  no conversion, keeping the SSP head as the initial AS2 head (SSP's "same
  paragraph" logit plays the role of "answers the question"). It is written with every
  checkpoint or, with an evaluator (``eval``: ``heldout`` or ``as2:DATA``), whenever the
  evaluator's primary metric improves.
* The peak learning rate is lost in our copy of the paper; presets use 1e-4
  (paper scale) and 5e-5 (CPU).
* Batches depend only on the seed and the step
  (:class:`~ctxsent.training.sampling.StreamBatches`, length-grouped, each DDP rank its
  share); masks and dropout are seeded by the step; checkpoints are taken every
  ``checkpoint_every`` steps, so a run resumed from ``OUT/checkpoints/last.ckpt``
  continues with the exact batches and masks an uninterrupted run would have used (up
  to ``checkpoint_every`` steps after the last checkpoint are redone).
* At the end, the SSP head is scored on ``heldout_examples`` examples that no
  step drew (:mod:`ctxsent.evaluation.ssp_heldout`), into ``OUT/run.json``'s metrics:
  with 4 negatives per positive the training log cannot tell a head that
  learned from one that answers "no" throughout.

ELECTRA variant (presets ``ssp-*-electra*``; appendix C): a discriminator and
a generator built from scratch with the data folder's tokenizer (train one
with ``ctxsent pretrain-data ssp --train-tokenizer N``), loss ``mlm_weight *
generator MLM + rtd_weight * replaced-token detection + ssp_weight * SSP``
(1, 50, 1), SSP on the discriminator's [CLS] (:mod:`ctxsent.objectives.electra`).
The saved ``OUT/model`` is the discriminator with its SSP head, as a
contextual cross-encoder like the BERT-style variant; generator and RTD head
are dropped. Peak learning rates are ELECTRA's own from-scratch values
(5e-4 Small, 2e-4 Base).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from lightning.pytorch.callbacks import Callback

from ctxsent.errors import InputError
from ctxsent.evaluation.specs import evaluator_from_spec
from ctxsent.evaluation.ssp_heldout import SspHeldoutEvaluator, ssp_heldout_metrics, unseen_indices
from ctxsent.models.backbones import resolve_backbone
from ctxsent.models.cascade import CascadeRanker
from ctxsent.models.cross_encoder import CrossEncoderRanker
from ctxsent.models.transformer_ranker import RankerConfig
from ctxsent.objectives.electra import ElectraObjective, new_discriminator
from ctxsent.objectives.ssp_data import TOKENIZER_DIR, example_lengths, load_ssp_dataset, ssp_batch
from ctxsent.objectives.ssp_objective import SspObjective
from ctxsent.training.engine import OptimizerSettings, pretraining_evaluation
from ctxsent.training.runs import TrainingRun
from ctxsent.training.sampling import stream_loader
from ctxsent.training.ssp_presets import ELECTRA_SCRATCH, SspPretrainConfig


class SaveModel(Callback):
    """Calls ``save`` (the model to ``OUT/model``) with every checkpoint, so the two match."""

    def __init__(self, save: Callable[[], None]) -> None:
        self.save = save

    def on_save_checkpoint(self, trainer, pl_module, checkpoint: dict) -> None:
        if trainer.is_global_zero:
            self.save()


def ssp_objective(
    ranker: CrossEncoderRanker | CascadeRanker,
    config: SspPretrainConfig,
    electra: ElectraObjective | None = None,
) -> SspObjective:
    """The run's objective, weighted as ``config`` says."""
    weights = {"mlm": config.mlm_weight, "rtd": config.rtd_weight, "ssp": config.ssp_weight}
    return SspObjective(ranker, weights, config.mlm_probability, electra)


def optimizer_settings(
    ranker: CrossEncoderRanker | CascadeRanker, config: SspPretrainConfig
) -> OptimizerSettings:
    """AdamW with weight decay, the triangular schedule, the SSP head at ``head_lr_scale``."""
    return OptimizerSettings(
        config.learning_rate,
        config.weight_decay,
        warmup_steps=config.warmup_steps,
        total_steps=config.max_steps,
        heads=frozenset(f"model.{name}" for name in ranker.head_parameter_names()),
        head_lr_scale=config.head_lr_scale,
    )


def _check_tokenizer(data_tokenizer, model_tokenizer, data: Path) -> None:
    if data_tokenizer.get_vocab() != model_tokenizer.get_vocab():
        raise InputError(
            "was tokenised with another vocabulary than the backbone's; rebuild it with "
            "'ctxsent pretrain-data ssp --tokenizer BACKBONE'",
            path=data,
        )


def _new_ranker_kind(config: SspPretrainConfig) -> str:
    return CascadeRanker.kind if config.readout == "mean" else CrossEncoderRanker.kind


def _new_ranker(config: SspPretrainConfig, tokenizer) -> CrossEncoderRanker | CascadeRanker:
    if config.readout == "mean":
        from transformers import AutoConfig

        depth = AutoConfig.from_pretrained(resolve_backbone(config.backbone)).num_hidden_layers
        return CascadeRanker.from_backbone(config.backbone, True, config.max_length, exits=[depth])
    if config.electra is None:
        return CrossEncoderRanker.from_backbone(config.backbone, True, config.max_length)
    model = new_discriminator(config.electra, tokenizer)
    return CrossEncoderRanker(
        model, tokenizer, RankerConfig(ELECTRA_SCRATCH, True, config.max_length)
    )


def pretrain_ssp(
    data: str | Path,
    out_dir: str | Path,
    config: SspPretrainConfig | None = None,
    ranker: CrossEncoderRanker | CascadeRanker | None = None,
    callbacks: list | None = None,
    overwrite: bool = False,
) -> dict:
    """Pre-train on the SSP dataset folder ``data``; the model goes to ``OUT/model``.

    Resumes from ``OUT/checkpoints/last.ckpt`` when it exists. ``ranker``
    replaces the backbone named in ``config`` (tests pass tiny models); with
    ``config.electra`` the model is a new ELECTRA discriminator that uses the
    data folder's tokenizer. ``callbacks`` are extra Lightning callbacks. A rerun with the
    same ``OUT`` resumes only with the same config and data; ``overwrite`` starts it again,
    replacing ``OUT/model`` (:class:`~ctxsent.training.runs.TrainingRun`).
    Returns the run's record (``OUT/run.json``), the held-out SSP scores in its metrics.
    """
    from transformers import AutoTokenizer

    config = config or SspPretrainConfig()
    data = Path(data)
    model = {"kind": ranker.kind, **asdict(ranker.config)} if ranker is not None else None
    kind = ranker.kind if ranker is not None else _new_ranker_kind(config)
    run = TrainingRun(out_dir, config, kind, model=model, overwrite=overwrite)
    dataset, summary = load_ssp_dataset(data)
    if config.objective is not None and summary["config"]["objective"] != config.objective:
        raise InputError(
            f"holds {summary['config']['objective']!r} examples, the preset wants "
            f"{config.objective!r}",
            path=data,
        )
    if summary["config"]["max_length"] > config.max_length:
        raise InputError(
            f"examples are up to {summary['config']['max_length']} tokens, more than "
            f"max_length {config.max_length}",
            path=data,
        )
    lengths = example_lengths(dataset)

    def heldout_after(steps: int) -> list[int]:
        return unseen_indices(
            lengths, config.batch_size, config.seed, steps, config.heldout_examples,
            config.accumulate,
        )  # fmt: skip

    if config.eval == "heldout":
        indices = heldout_after(config.max_steps)
        evaluator = SspHeldoutEvaluator(dataset, indices)
    else:
        evaluator = config.eval and evaluator_from_spec(config.eval, ("heldout", "as2")) or None
    run.settings["data"] = {"examples": summary["examples"], **summary["config"]}
    tokenizer = AutoTokenizer.from_pretrained(data / TOKENIZER_DIR)
    build = (lambda: _new_ranker(config, tokenizer)) if ranker is None else lambda: ranker
    with run.started(build) as ranker:
        ranker.with_context(True)
        _check_tokenizer(tokenizer, ranker.tokenizer, data)
        electra = None
        if config.electra is not None:
            electra = ElectraObjective(ranker.model, config.electra.generator_fraction)
        pad_id = ranker.tokenizer.pad_token_id
        loader = stream_loader(
            range(len(dataset)), config, config.max_steps, "examples",
            lambda indices: ssp_batch(dataset, indices, pad_id), lengths,
        )  # fmt: skip

        def save() -> None:
            ranker.save_pretrained(run.model_dir)

        evaluation = pretraining_evaluation(config, evaluator, ranker, run.keep_best(save))
        trained = run.train(
            ssp_objective(ranker, config, electra),
            loader,
            optimizer_settings(ranker, config),
            max_steps=config.max_steps,
            max_grad_norm=config.max_grad_norm,
            checkpoint_every=config.checkpoint_every,
            evaluation=evaluation,
            callbacks=[*([] if evaluation else [SaveModel(save)]), *(callbacks or ())],
            log_every_n_steps=min(50, config.checkpoint_every),
        )
        if config.eval == "heldout" and trained.steps == config.max_steps:
            heldout = indices  # the same examples: no second pass over the batch stream
        else:
            heldout = heldout_after(trained.steps)
        scores = ssp_heldout_metrics(ranker, dataset, heldout) if heldout else None
        described = {"folder": str(data)} | {
            k: summary[k] for k in ("examples", "positives", "by_objective")
        }
        return run.finish(trained, {"heldout": scores}, described)
