"""Continuous pre-training with MLM + SSP (SSP paper, section 6 and appendix C).

The backbone (MiniLM-L6 by default) is wrapped as a contextual
:class:`~ctxsent.models.cross_encoder.CrossEncoderRanker` (three segment ids,
one-logit head) and trained on the tokenised examples of
:mod:`ctxsent.objectives.ssp_data`: the loss is ``mlm_weight * MLM +
ssp_weight * SSP`` (both 1.0, appendix C), with the SSP binary cross-entropy
on the ranker's logit and the MLM loss projecting only the masked positions
(:mod:`ctxsent.objectives.masking`) of the same masked input, as BERT does for
NSP. AdamW, triangular learning rate (linear warm-up then linear decay), max
length 128, gradients clipped at 1.0.

Decisions where the paper is silent or does not apply:

* The MLM head (dense + GELU + LayerNorm, decoder tied to the word
  embeddings) is new: all-MiniLM-L6-v2 ships no MLM head. It is dropped at
  the end; only the ranker is saved.
* The saved model is a contextual cross-encoder folder (``OUT/model``), so
  ``ctxsent finetune as2 --init OUT/model --contextual`` starts from it with
  no conversion, keeping the SSP head as the initial AS2 head (SSP's "same
  paragraph" logit plays the role of "answers the question").
* The peak learning rate is lost in our copy of the paper; presets use 1e-4
  (paper scale) and 5e-5 (CPU).
* Masking is drawn in the training step from a generator seeded by ``(seed, step)``,
  batches depend only on the seed and the step
  (:class:`~ctxsent.training.sampling.StreamBatches`, length-grouped, each DDP rank its
  share), and dropout is seeded by the step too; checkpoints are taken every
  ``checkpoint_every`` steps, so a run resumed from ``OUT/checkpoints/last.ckpt``
  continues with the exact batches and masks an uninterrupted run would have used (up
  to ``checkpoint_every`` steps after the last checkpoint are redone). Draws and loss
  means are the global batch's (:mod:`~ctxsent.objectives.global_batch`): DDP ranks
  train as one process would.
* At the end, the SSP head is scored on ``heldout_examples`` examples that no
  step drew (:mod:`ctxsent.training.ssp_heldout`), into ``pretrain.json``:
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

import json
from dataclasses import asdict
from pathlib import Path

import lightning as L
import torch
import torch.nn.functional as F
from lightning.fabric.utilities.rank_zero import rank_zero_only
from torch import nn
from torch.utils.data import DataLoader

from ctxsent.errors import InputError
from ctxsent.io import atomic_write, check_output
from ctxsent.models.backbones import resolve_backbone
from ctxsent.models.cascade import CascadeRanker
from ctxsent.models.cross_encoder import CrossEncoderRanker
from ctxsent.models.transformer_ranker import RankerConfig
from ctxsent.objectives.electra import ElectraObjective, new_discriminator
from ctxsent.objectives.global_batch import global_mean, share_of
from ctxsent.objectives.masking import mask_tokens, maskable_positions, masked_lm_loss
from ctxsent.objectives.ssp_data import TOKENIZER_DIR, example_lengths, load_ssp_dataset, ssp_batch
from ctxsent.training.engine import build_trainer, fit
from ctxsent.training.optim import decay_groups, triangular_schedule
from ctxsent.training.runs import finish_run, start_run
from ctxsent.training.sampling import FollowTrainer, StreamBatches
from ctxsent.training.ssp_heldout import ssp_heldout_metrics, unseen_indices
from ctxsent.training.ssp_presets import ELECTRA_SCRATCH, SspPretrainConfig


class MlmHead(nn.Module):
    """BERT-style MLM head; the decoder shares the backbone's word embeddings."""

    def __init__(self, embeddings: nn.Embedding, eps: float = 1e-12) -> None:
        super().__init__()
        width = embeddings.weight.shape[1]
        self.dense = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width, eps=eps)
        self.embeddings = embeddings
        self.bias = nn.Parameter(torch.zeros(embeddings.weight.shape[0]))

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return F.linear(self.norm(F.gelu(self.dense(hidden))), self.embeddings.weight, self.bias)


class SspPretrainModule(L.LightningModule):
    """MLM + SSP on a contextual cross-encoder; saves the ranker to ``OUT/model``.

    With ``electra``, the ranker's model is an ELECTRA discriminator and the
    loss is generator MLM + RTD + SSP (see :mod:`ctxsent.objectives.electra`).
    """

    def __init__(
        self,
        ranker: CrossEncoderRanker | CascadeRanker,
        config: SspPretrainConfig,
        out_dir: Path,
        electra: ElectraObjective | None = None,
    ):
        super().__init__()
        self.ranker = ranker
        self.electra = electra
        self.mlm_head = MlmHead(ranker.model.get_input_embeddings()) if electra is None else None
        self.config = config
        self.out_dir = out_dir
        tokenizer = ranker.tokenizer
        self.special_ids = [tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id]
        self.mask_id = tokenizer.mask_token_id
        self.vocab_size = ranker.model.get_input_embeddings().weight.shape[0]

    def losses(self, batch: dict, generator: torch.Generator | None = None) -> dict:
        """``loss``, its parts (``mlm``, ``ssp``, ELECTRA's ``rtd``) and the SSP ``accuracy``.

        Draws and means are those of the step's global batch
        (:mod:`~ctxsent.objectives.global_batch`), so DDP ranks train as one process.
        """
        features, labels = batch["features"], batch["labels"]
        ids, attention = features["input_ids"], features["attention_mask"]
        share = share_of(ids.shape, ids.device)
        maskable = maskable_positions(ids, attention, self.special_ids)
        masked, mlm_labels = mask_tokens(
            ids,
            maskable,
            self.mask_id,
            self.vocab_size,
            self.config.mlm_probability,
            generator,
            share,
        )
        if self.electra is None:
            parts, logits = self._masked_lm(features, masked, mlm_labels)
        else:
            parts, logits = self.electra(
                self.ranker.model, features, masked, mlm_labels, generator, share
            )
        ssp = F.binary_cross_entropy_with_logits(logits, labels, reduction="sum")
        parts["ssp"] = global_mean(ssp, len(labels))
        config = self.config
        weights = {"mlm": config.mlm_weight, "rtd": config.rtd_weight, "ssp": config.ssp_weight}
        return {
            "loss": sum(weights[name] * part for name, part in parts.items()),
            **{name: part.detach() for name, part in parts.items()},
            "accuracy": ((logits > 0) == (labels > 0.5)).float().mean(),
        }

    def _masked_lm(self, features: dict, masked: torch.Tensor, mlm_labels: torch.Tensor):
        """BERT-style: ``({"mlm": ...}, ssp_logits)`` from one pass over the masked input."""
        inputs = {
            "input_ids": masked,
            "token_type_ids": features["token_type_ids"],
            "attention_mask": features["attention_mask"],
        }
        if isinstance(self.ranker, CascadeRanker):  # readout "mean"
            hidden = self.ranker.model(**inputs).last_hidden_state
            logits = self.ranker.exit_logits(-1, hidden, features["attention_mask"])
        else:
            out = self.ranker.model(**inputs, output_hidden_states=True)
            hidden, logits = out.hidden_states[-1], out.logits[:, 0]
        return {"mlm": masked_lm_loss(hidden, mlm_labels, self.mlm_head)}, logits.float()

    def training_step(self, batch, batch_idx):
        step_seed = self.config.seed * 1_000_003 + self.global_step
        torch.manual_seed(step_seed + 7_919 * self.global_rank)  # dropout: the same after a resume
        generator = torch.Generator(device=self.device)
        generator.manual_seed(step_seed)
        result = self.losses(batch, generator)
        size = len(batch["labels"])
        self.log("loss", result["loss"], prog_bar=True, batch_size=size)
        self.log_dict(
            {k: v for k, v in result.items() if k != "loss"}, prog_bar=True, batch_size=size
        )
        return result["loss"]

    def save_model(self) -> None:
        if self.trainer.is_global_zero:
            self.ranker.save_pretrained(self.out_dir / "model")

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        self.save_model()  # OUT/model always matches the newest checkpoint

    def configure_optimizers(self):
        # tied or shared parameters (MLM decoders, ELECTRA's embeddings) are listed once
        heads = {f"ranker.{name}" for name in self.ranker.head_parameter_names()}
        lr = self.config.learning_rate
        optimizer = torch.optim.AdamW(
            decay_groups(
                self.named_parameters(),
                self.config.weight_decay,
                heads,
                lr * self.config.head_lr_scale,
            ),
            lr=lr,
        )
        schedule = triangular_schedule(optimizer, self.config.warmup_steps, self.config.max_steps)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": schedule, "interval": "step"}}


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
    replacing ``OUT/model`` (:mod:`~ctxsent.training.runs`).
    Returns the summary written to ``OUT/pretrain.json``.
    """
    from transformers import AutoTokenizer

    config = config or SspPretrainConfig()
    data, out_dir = Path(data), Path(out_dir)
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
    model = {"kind": ranker.kind, **asdict(ranker.config)} if ranker is not None else None
    kind = ranker.kind if ranker is not None else _new_ranker_kind(config)
    check_output(out_dir / "model", kind, overwrite)
    if rank_zero_only.rank == 0:
        data_identity = {"examples": summary["examples"], **summary["config"]}
        settings = {"train": asdict(config), "model": model, "data": data_identity}
        start_run(out_dir, settings, state=("checkpoints", "model"), overwrite=overwrite)
    tokenizer = AutoTokenizer.from_pretrained(data / TOKENIZER_DIR)
    L.seed_everything(config.seed, verbose=False)  # new weights depend on the seed only
    if ranker is None:
        ranker = _new_ranker(config, tokenizer)
    ranker.with_context(True)
    _check_tokenizer(tokenizer, ranker.tokenizer, data)
    electra = None
    if config.electra is not None:
        electra = ElectraObjective(ranker.model, config.electra.generator_fraction)
    out_dir.mkdir(parents=True, exist_ok=True)

    lengths = example_lengths(dataset)
    batches = StreamBatches(
        len(dataset), config.batch_size, config.seed, config.max_steps, lengths=lengths
    )
    pad_id = ranker.tokenizer.pad_token_id

    loader = DataLoader(
        range(len(dataset)),
        batch_sampler=batches,
        collate_fn=lambda indices: ssp_batch(dataset, indices, pad_id),
    )
    module = SspPretrainModule(ranker, config, out_dir, electra)
    trainer = build_trainer(
        out_dir,
        config,
        max_steps=config.max_steps,
        gradient_clip_val=config.max_grad_norm,
        checkpoint_every=config.checkpoint_every,
        callbacks=[FollowTrainer(batches), *(callbacks or ())],
        log_every_n_steps=min(50, config.checkpoint_every),
    )
    ranker.train()
    fit(trainer, module, out_dir, loader)
    module.save_model()
    heldout = unseen_indices(
        lengths, config.batch_size, config.seed, trainer.global_step, config.heldout_examples
    )
    result = {
        "steps": trainer.global_step,
        "final": {k: float(v) for k, v in trainer.callback_metrics.items()},
        "heldout": ssp_heldout_metrics(ranker, dataset, heldout) if heldout else None,
        "data": str(data),
        "data_summary": {k: summary[k] for k in ("examples", "positives", "by_objective")},
        "config": asdict(config),
    }
    with atomic_write(out_dir / "pretrain.json") as handle:
        json.dump(result, handle, indent=2)
    finish_run(out_dir, result)
    return result
