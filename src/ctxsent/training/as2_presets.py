"""AS2 fine-tuning settings (:class:`As2TrainConfig`) and recipes, registered in
:mod:`ctxsent.presets` (family ``as2``): each preset is a run's config, and its ``model``
the architecture it trains (``arch``, ``contextual``). Kept apart from
:mod:`ctxsent.training.as2_finetune` (Lightning, torch) so that listing presets loads neither.

``ctxsent finetune as2`` starts from :data:`DEFAULT_AS2_PRESET`, or from ``as2-ARCH`` when an
architecture is named (``--arch``, or the kind of a saved ``--init`` model), or from
``--preset``; the options given on the command line replace the preset's values.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from ctxsent.errors import InputError, check_choice, check_range
from ctxsent.presets import Preset, register
from ctxsent.training.settings import LOSSES, RunSettings

#: The preset of ``ctxsent finetune as2`` when neither ``--preset`` nor ``--arch`` is given:
#: the recipe with the best test MAP on every set of the transfer matrix (BENCHMARKS.md).
DEFAULT_AS2_PRESET = "as2-bi-encoder"


@dataclass
class As2TrainConfig(RunSettings):
    learning_rate: float = 2e-5
    batch_size: int = 32
    epochs: int = 3
    max_steps: int | None = None
    warmup_ratio: float = 0.1
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    eval_every: int = 200
    patience: int = 5
    eval_batch_size: int = 128
    #: Learning-rate multiplier for the freshly initialised scoring heads
    #: (``ranker.head_parameter_names``): the cascade's 3-layer exit classifiers
    #: each get only 1/E of the updates (Cascade 4.3.1), which at CPU budgets
    #: leaves them far behind a monolithic model's head. The paper is silent on
    #: head learning rates; 1.0 trains everything alike.
    head_lr_scale: float = 1.0
    max_negatives_per_question: int | None = None
    #: "pointwise" (binary cross-entropy per candidate, the papers' recipe) or "listwise"
    #: (:func:`listwise_loss`; batches of whole questions, about ``batch_size`` pairs each).
    loss: str = "pointwise"
    #: Listwise: questions per batch (each with all its kept candidates); None: as many as
    #: make about ``batch_size`` pairs.
    questions_per_batch: int | None = None
    #: Bi-encoders only: logits are ``cosine / temperature`` (a cosine lies in [-1, 1], too
    #: flat for a softmax or a sigmoid). 0.05 is the Eq. 10 recipe's
    #: (:data:`~ctxsent.models.cross_thought.COSINE_TEMPERATURE`) and SimCSE's; cross-encoder
    #: logits are unbounded already and are used as they are.
    temperature: float = 0.05
    #: Listwise bi-encoders only: each question's softmax also covers the candidates of the
    #: other questions in its batch (on its own process under DDP), as extra negatives.
    in_batch_negatives: bool = False
    #: Bi-encoders with ``max_negatives_per_question``: keep each question's negatives that
    #: the model scores highest before training (its zero-shot start), not random ones.
    hard_negatives: bool = False
    #: WiSE-FT (Wortsman et al. 2022, Eq. 1; :mod:`~ctxsent.training.weight_averaging`): the
    #: saved model is ``(1 - wise_alpha) * start + wise_alpha * best``, the best dev step's
    #: weights mixed with the ones training started from; 1.0 saves the best step as it is.
    wise_alpha: float = 1.0
    seed: int = 42
    #: more epochs or steps go on from the checkpoint
    limits: ClassVar[tuple[str, ...]] = ("epochs", "max_steps", "patience")

    def __post_init__(self) -> None:
        check_range(self, "learning_rate head_lr_scale temperature", 0, above=True)
        check_range(self, "batch_size epochs max_steps eval_every patience eval_batch_size", 1)
        check_range(self, "max_negatives_per_question questions_per_batch", 1)
        check_range(self, "warmup_ratio", 0, 1)
        check_range(self, "wise_alpha", 0, 1, above=True)
        check_range(self, "weight_decay max_grad_norm seed", 0)
        check_choice(self, "loss", LOSSES)
        super().__post_init__()
        if self.questions_per_batch is not None and self.loss != "listwise":
            raise InputError("applies to the listwise loss only", field="questions_per_batch")
        if self.hard_negatives and self.max_negatives_per_question is None:
            raise InputError(
                "hard negatives are the top max_negatives_per_question of each question",
                field="hard_negatives",
            )
        if self.in_batch_negatives and self.loss != "listwise":
            raise InputError(
                "in-batch negatives extend the listwise loss: use loss 'listwise'",
                field="in_batch_negatives",
            )

    def with_changes(self, **changes) -> As2TrainConfig:
        """This config with ``changes``: batches sized in pairs (``batch_size`` changed, or a
        loss other than listwise) drop a ``questions_per_batch`` that ``changes`` does not set."""
        config = replace(self, **{k: v for k, v in changes.items() if k != "questions_per_batch"})
        if "questions_per_batch" in changes:
            return replace(config, questions_per_batch=changes["questions_per_batch"])
        if "batch_size" in changes or config.loss != "listwise":
            return replace(config, questions_per_batch=None)
        return config


#: The pointwise recipe of the SSP and Cascade papers' fine-tuning (appendix D).
_POINTWISE = As2TrainConfig(epochs=2)
#: Cross-Thought's Eq. 10 fine-tune of MiniLM (``finetune_answer_selection``; BENCHMARKS.md,
#: "The best CPU-trained model") for a bi-encoder: 8 questions per step, each with its
#: positives and up to 15 negatives, a softmax over its candidates' ``cosine / 0.05``; AdamW
#: lr 5e-5 without weight decay, 10% warm-up then linear decay, clipping 1.0; a 300-step
#: schedule (``epochs`` only bounds it), dev MAP every 20 steps, stopping after 2
#: evaluations without a better one: dev peaked at step 100 of 300 for every seed
#: (BENCHMARKS.md), so a run usually stops near step 140 with the model the 300-step run
#: would have kept. Differences from that loop: the negatives are sampled once per run, not
#: per step (WikiQA: only questions with over 15 negatives differ); a question with several
#: positives maximises their summed probability rather than averaging ``-log p`` over them;
#: the embedding is MiniLM's mean pooling, not the ``[CLS]`` state (a special token without
#: ``[SEP]``); dev MAP is not measured at step 0; texts are cut at 256 tokens, not 565.
BI_ENCODER_RECIPE = replace(
    _POINTWISE,
    loss="listwise",
    learning_rate=5e-5,
    questions_per_batch=8,
    max_negatives_per_question=15,
    max_steps=300,
    epochs=1000,
    eval_every=20,
    patience=2,
)


def _register() -> None:
    for name, model, config, what in [
        ("as2-bi-encoder", {"arch": "bi-encoder"}, BI_ENCODER_RECIPE,
         "the default: bi-encoder, Cross-Thought's Eq. 10 listwise softmax over cosine / 0.05, "
         "early stopping; trained on WikiQA: WikiQA test-clean MAP 0.846 +- 0.011 (3 seeds, "
         "378 CPU s); on WikiQA + SQuAD-AS2 balanced: SelQA 0.893 (1 seed)"),
        ("as2-cross-encoder", {"arch": "cross-encoder"}, _POINTWISE,
         "cross-encoder on (question, candidate), pointwise, the papers' fine-tuning: WikiQA "
         "MAP 0.679 +- 0.005 (3 seeds; 0.755 with a SQuAD-AS2 TANDA step)"),
        ("as2-contextual", {"arch": "cross-encoder", "contextual": True}, _POINTWISE,
         "contextual cross-encoder (previous + next sentence as a third segment), pointwise: "
         "WikiQA MAP 0.653 +- 0.005 (3 seeds)"),
        ("as2-cascade", {"arch": "cascade"}, _POINTWISE,
         "Cascade Transformer: an exit classifier per stage, pointwise; tune its drop rates "
         "with 'ctxsent cascade tune'"),
    ]:  # fmt: skip
        register(Preset(name, "as2", what, config, model))


_register()
