"""AS2 fine-tuning settings: the run's config (:class:`As2TrainConfig`), ranker
(:class:`As2RankerSpec`) and data (:class:`As2Data`), and the recipes, registered in
:mod:`ctxsent.presets` (family ``as2``): each preset is a run's config, and its ``model``
the architecture it trains (``arch``, ``contextual``). Kept apart from
:mod:`ctxsent.training.as2_finetune` (Lightning, torch) so that listing presets loads neither.

``ctxsent finetune as2`` starts from :data:`DEFAULT_AS2_PRESET`, or from ``as2-ARCH`` when an
architecture is named (``--arch``, or the kind of a saved ``--init`` model), or from
``--preset``; the options given on the command line replace the preset's values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

from ctxsent.errors import InputError, check_choice, check_range
from ctxsent.models.backbones import resolve_backbone
from ctxsent.presets import DEFAULT_BACKBONE, Preset, register
from ctxsent.tasks.as2_records import As2Record, clean, first_questions
from ctxsent.training.settings import (
    ARCHS,
    LOSSES,
    MIN_INPUT_LENGTH,
    Arch,
    Loss,
    RunSettings,
    check_settings,
    setting,
)

#: The preset of ``ctxsent finetune as2`` when neither ``--preset`` nor ``--arch`` is given:
#: the recipe with the best test MAP on every set of the transfer matrix (BENCHMARKS.md).
DEFAULT_AS2_PRESET = "as2-bi-encoder"


@dataclass
class As2TrainConfig(RunSettings):
    learning_rate: float = setting(2e-5, "learning rate", flags=("--lr",), positive=True)
    batch_size: int = setting(
        32, "global batch in pairs (listwise: whole questions, about this many pairs)", min=1
    )
    epochs: int = setting(3, "passes over the training data", min=1)
    max_steps: int | None = setting(None, "stop after this many steps", min=1)
    warmup_ratio: float = setting(0.1, "share of the steps spent warming up", min=0, max=1)
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    eval_every: int = setting(200, "steps between dev evaluations", min=1)
    patience: int = setting(5, "evaluations without dev-MAP gain", min=1)
    eval_batch_size: int = 128
    # The cascade's 3-layer exit classifiers each get only 1/E of the updates (Cascade
    # 4.3.1), which at CPU budgets leaves them far behind a monolithic model's head. The
    # paper is silent on head learning rates; 1.0 trains everything alike.
    head_lr_scale: float = setting(
        1.0, "learning-rate multiplier for the new scoring head(s)", positive=True
    )
    max_negatives_per_question: int | None = setting(
        None, "negatives kept per question (subsample large sets)", flags=("--max-negatives",),
        min=1,
    )  # fmt: skip
    loss: Loss = setting(
        "pointwise", "pointwise (cross-entropy per pair, the papers' recipe) | listwise (softmax "
        "over each question's candidates, listwise_loss; batches of whole questions); "
        "bi-encoder: listwise",
    )  # fmt: skip
    questions_per_batch: int | None = setting(
        None, "listwise: questions per batch (default: about --batch-size pairs)", min=1
    )
    # A cosine lies in [-1, 1], too flat for a softmax or a sigmoid; 0.05 is the Eq. 10
    # recipe's (cross_thought.COSINE_TEMPERATURE) and SimCSE's. Cross-encoder logits are
    # unbounded already and are used as they are.
    temperature: float = setting(0.05, "bi-encoder: logits are cosine / T (0.05)", positive=True)
    in_batch_negatives: bool = setting(
        False, "listwise bi-encoder: the other questions' candidates in a batch (on its own "
        "process under DDP) are extra negatives",
    )  # fmt: skip
    hard_negatives: bool = setting(
        False, "bi-encoder: keep each question's --max-negatives negatives that the model "
        "scores highest before training (its zero-shot start), not random ones",
    )  # fmt: skip
    # WiSE-FT (Wortsman et al. 2022, Eq. 1; training/weight_averaging.py).
    wise_alpha: float = setting(
        1.0, "WiSE-FT: save (1 - A) * start + A * best, the best dev step's weights mixed "
        "with the ones training started from (1: the best step as it is)", max=1, positive=True,
    )  # fmt: skip
    # Knowledge distillation (Hinton et al. 2015) from another ranker's scores; the papers
    # do not use it. At CPU scale the fine-tuned bi-encoder outranks every cross-encoder
    # (BENCHMARKS.md), which makes it the teacher to try for them.
    distill_from: str | None = setting(
        None, "a ranker (any --model name) whose scores on the training candidates are soft "
        "targets: the listwise loss is mixed with the KL divergence from softmax(teacher "
        "score / --distill-temperature) over each question's candidates",
    )  # fmt: skip
    distill_weight: float = setting(
        0.5, "share of the distillation term in the loss (1: the teacher alone)", max=1,
        positive=True,
    )  # fmt: skip
    distill_temperature: float = setting(
        0.05, "teacher scores are divided by this before the softmax (0.05: a bi-encoder's "
        "cosines, as it was trained; 1: a cross-encoder's logits)", positive=True,
    )  # fmt: skip
    seed: int = setting(42, "random seed", min=0)
    #: more epochs or steps go on from the checkpoint
    limits: ClassVar[tuple[str, ...]] = ("epochs", "max_steps", "patience")

    def __post_init__(self) -> None:
        check_range(self, "eval_batch_size", 1)
        check_range(self, "weight_decay max_grad_norm", 0)
        check_choice(self, "loss", LOSSES)
        super().__post_init__()
        if self.questions_per_batch is not None and self.loss != "listwise":
            raise InputError("applies to the listwise loss only", field="questions_per_batch")
        if self.hard_negatives and self.max_negatives_per_question is None:
            raise InputError(
                "hard negatives are the top max_negatives_per_question of each question",
                field="hard_negatives",
            )
        if self.distill_from is not None and self.loss != "listwise":
            raise InputError(
                "distillation matches each question's softmax: use loss 'listwise'",
                field="distill_from",
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


@dataclass
class As2RankerSpec:
    """The ranker :func:`~ctxsent.training.as2_finetune.finetune_as2` builds once the seed
    is set.

    ``init`` is a backbone (HF folder or id) for a new ranker of architecture ``arch``
    (default ``"cross-encoder"``): a cross-encoder or a cascade (exit layers ``exits``) on
    the first ``layers`` encoder layers, or a bi-encoder (never contextual); or ``init`` is
    a saved ctxsent ranker folder to continue training (TANDA's adapt step), whose kind
    ``arch``, if given, must name. ``fresh_head`` re-draws a saved ranker's scoring head
    (:meth:`~ctxsent.models.transformer_ranker.TransformerRanker.reset_head`), keeping its
    encoder: the control that tells a pre-trained head's share from the encoder's (e.g. an
    SSP checkpoint, whose SSP head is otherwise the initial AS2 head).
    """

    init: str = DEFAULT_BACKBONE
    contextual: bool = setting(
        False, "add previous+next as a 3rd segment", flags=("--contextual/--pairwise",)
    )
    max_length: int = setting(
        256, "tokens per input, all segments included (256)", min=MIN_INPUT_LENGTH
    )
    arch: Arch | None = setting(
        None, "cross-encoder | cascade (Cascade Transformer: an exit classifier per stage) | "
        "bi-encoder (cosine of mean-pooled embeddings; the Eq. 10 recipe: --loss listwise "
        "--lr 5e-5 --questions-per-batch 8 --max-negatives 15 --max-steps 300 --eval-every 20 "
        "--patience 2). Default: bi-encoder (--contextual, --exits or --layers: a "
        "cross-encoder or cascade), or the --init model's kind",
    )  # fmt: skip
    exits: Sequence[int] = ()
    layers: int | None = setting(
        None, "keep only the first N encoder layers (truncated monolithic model)", min=1
    )
    fresh_head: bool = setting(
        False, "re-draw the --init ranker's scoring head, keep its encoder (a control: how "
        "much a pre-trained head, e.g. SSP's, adds)",
    )  # fmt: skip

    def __post_init__(self) -> None:
        from ctxsent.saving import is_model_folder

        check_settings(self)
        if self.arch is not None:
            check_choice(self, "arch", ARCHS)
        saved = is_model_folder(self.init)
        if not saved:
            resolve_backbone(self.init)  # a backbone that cannot load fails before the data
        if self.exits and self.kind != "cascade":
            raise InputError("--exits applies to --arch cascade models only", field="exits")
        if saved and (self.layers is not None or self.exits):
            raise InputError(
                "--layers and --exits shape a new model, not a saved one", path=self.init
            )
        if self.fresh_head and not saved:
            raise InputError("--fresh-head applies to a saved ranker (--init FOLDER)", field="init")
        if saved and self.arch not in (None, self.kind):
            raise InputError(f"the --init model is a {self.kind}, not a {self.arch}", field="arch")
        if self.kind == "bi-encoder":
            from ctxsent.models.bi_encoder import NOT_CONTEXTUAL

            if self.contextual:
                raise InputError(NOT_CONTEXTUAL, field="contextual")
            if self.layers is not None:
                raise InputError("applies to cross-encoders and cascades", field="layers")
            if self.fresh_head:
                raise InputError("a bi-encoder has no scoring head to re-draw", field="fresh_head")

    @property
    def kind(self) -> str:
        """The model kind :meth:`build` returns."""
        from ctxsent.saving import is_model_folder, read_manifest

        if is_model_folder(self.init):
            return read_manifest(self.init)["kind"]
        return self.arch or "cross-encoder"

    def build(self):
        """The ranker; its new parameters are drawn from torch's global RNG."""
        from ctxsent.models.bi_encoder import BiEncoderRanker
        from ctxsent.models.cascade import CascadeRanker
        from ctxsent.models.cross_encoder import CrossEncoderRanker
        from ctxsent.models.registry import load_model_folder
        from ctxsent.saving import is_model_folder

        if is_model_folder(self.init):
            ranker = load_model_folder(self.init).with_context(self.contextual)
            ranker.max_length = self.max_length
            if self.fresh_head:
                ranker.reset_head()
            return ranker
        if self.kind == BiEncoderRanker.kind:
            return BiEncoderRanker.from_backbone(self.init, self.max_length)
        if self.kind == CascadeRanker.kind:
            return CascadeRanker.from_backbone(
                self.init, self.contextual, self.max_length, self.exits, self.layers
            )
        return CrossEncoderRanker.from_backbone(
            self.init, self.contextual, self.max_length, self.layers
        )


@dataclass
class As2Data:
    """Where a fine-tuning run's records come from: named sets (``sources``, each
    ``NAME:PATH``; several are mixed, :func:`~ctxsent.tasks.as2_load.load_as2_sources`) or
    the user's files (``train_file``, ``dev_file``, optional ``test_file``, with ``columns``
    and ``mine_negatives``, :func:`~ctxsent.tasks.as2_files.read_fine_tuning_files`), one of
    the two."""

    sources: Sequence[str] = setting(
        (), "NAME:PATH, e.g. wikiqa:DIR, squad-as2:DIR, hf:NAME; repeat it to train on "
        "several sets at once (batches mix their questions; dev: all their dev splits)",
        flags=("--data",),
    )  # fmt: skip
    train_file: str | None = setting(
        None, "your own data instead of --data: a .tsv/.csv/.jsonl/.parquet file or a "
        "dataset, hf:NAME or hf-disk:PATH (@SPLIT picks a split); needs --dev",
        flags=("--train",),
    )  # fmt: skip
    dev_file: str | None = setting(
        None, "your dev file (as --train): early stopping", flags=("--dev",)
    )
    test_file: str | None = setting(
        None, "your test file, scored by the best model", flags=("--test",)
    )
    columns: str | None = setting(
        None, "your file's column names: question=Query,candidate=Passage,label=Relevant "
        "(fields: question candidate label question_id previous next document_id "
        "document_title)",
    )  # fmt: skip
    mine_negatives: str | None = setting(
        None, "bm25 | bi-encoder[:BACKBONE]: add each question's hard negatives to your "
        "files, each from its own candidates (for question-answer pairs)",
    )  # fmt: skip
    negatives: int = setting(5, "negatives mined per question", min=1)
    dev_data: str | None = setting(None, "select on another set's dev split (TANDA: the target)")
    train_split: str = setting("train", "training split of a --data folder")
    dev_split: str = setting("dev", "dev split of a --data folder")
    train_clean: bool = setting(
        True, "train on questions with both labels (WikiQA: 857 of 2,118 / 8,651 pairs; the "
        "Cascade paper's Table 1 counts the 873 with a correct answer)",
    )  # fmt: skip
    dev_clean: bool = setting(True, "select on the clean dev set")
    dev_questions: int | None = setting(
        None, "evaluate on the first N dev questions only (large sets)", min=1
    )
    balance_sources: bool = setting(
        False, "several --data: train on each about equally, not by question count"
    )

    def __post_init__(self) -> None:
        own = bool(self.train_file or self.dev_file or self.test_file or self.mine_negatives)
        if bool(self.sources) == own or own and not (self.train_file and self.dev_file):
            raise InputError(
                "expected --data SPEC or --train FILE --dev FILE [--test FILE] "
                "[--mine-negatives], one of the two",
                field="data",
            )

    def load(self, seed: int) -> tuple[list[As2Record], list[As2Record], list[As2Record]]:
        """The train, dev and test records (``seed``: the mined negatives' sampling)."""
        from ctxsent.resolver import candidate_scores
        from ctxsent.tasks.as2_files import parse_columns, read_fine_tuning_files
        from ctxsent.tasks.as2_load import load_as2_sources

        columns = parse_columns(self.columns) if self.columns else None
        if self.sources:
            train = load_as2_sources(self.sources, self.train_split, columns, self.balance_sources)
            dev_sources = [self.dev_data] if self.dev_data else self.sources
            dev, test = load_as2_sources(dev_sources, self.dev_split, columns), []
        else:
            mine = candidate_scores(self.mine_negatives) if self.mine_negatives else None
            train, dev, test = read_fine_tuning_files(
                self.train_file, self.dev_file, self.test_file, columns, mine, self.negatives,
                seed,
            )  # fmt: skip
        train = clean(train) if self.train_clean else train
        dev = clean(dev) if self.dev_clean else dev
        if self.dev_questions is not None:
            dev = first_questions(dev, self.dev_questions)
        return train, dev, test

    @property
    def names(self) -> dict:
        """Split -> where its records come from (the model card's datasets)."""
        sources = list(self.sources) or None
        return {
            "train": sources or self.train_file,
            "dev": [self.dev_data] if self.dev_data else sources or self.dev_file,
            "test": self.test_file,
        }


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
#: The saved model is WiSE-FT's mix at alpha 0.7 (``wise_alpha``): the largest that kept
#: every WikiQA- and SQuAD-AS2-trained run's MAP on the other set's dev at least zero-shot
#: MiniLM's (``benchmarks/transfer_matrix.py``'s ``dev_choice``; a model fine-tuned on WikiQA
#: alone lost 0.08 MAP on SQuAD-AS2).
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
    wise_alpha=0.7,
)


#: A preset's ``exits`` meaning one exit on the backbone's last layer (``--layers`` if
#: given): a monolithic model with the cascade's read-out, whatever the backbone's depth.
LAST_LAYER = "last"
#: The cross-encoder that learns on a CPU budget (BENCHMARKS.md, "Cross-encoders and
#: TANDA"): the cascade's read-out (a 3-layer FFN over the mean of the last layer's token
#: states, Cascade section 4.3) on one exit instead of [CLS], which MiniLM was not trained
#: to use (pointwise [CLS]: WikiQA 0.679); the head at 20x the learning rate (the cascade's
#: dev choice); the bi-encoder recipe's listwise batches (8 questions, up to 15 negatives
#: each, lr 5e-5) without its WiSE-FT mix; texts cut at 128 tokens; 5 epochs at most, dev
#: MAP every 25 steps, stopping after 4 evaluations without a better one.
LISTWISE_CROSS_ENCODER = replace(
    BI_ENCODER_RECIPE,
    wise_alpha=1.0,
    head_lr_scale=20.0,
    epochs=5,
    max_steps=500,
    eval_every=25,
    patience=4,
)
LISTWISE_CROSS_ENCODER_MODEL = {"arch": "cascade", "exits": LAST_LAYER, "max_length": 128}


def _register() -> None:
    for name, model, config, what in [
        ("as2-bi-encoder", {"arch": "bi-encoder"}, BI_ENCODER_RECIPE,
         "the default: bi-encoder, Cross-Thought's Eq. 10 listwise softmax over cosine / 0.05, "
         "early stopping, WiSE-FT mix 0.7; trained on WikiQA (3 seeds, 378 CPU s): WikiQA "
         "test-clean MAP 0.828 +- 0.006, SelQA 0.880 +- 0.003, SQuAD-AS2 0.711 +- 0.003 "
         "(zero-shot 0.715 / 0.840 / 0.714)"),
        ("as2-cross-encoder", {"arch": "cross-encoder"}, _POINTWISE,
         "cross-encoder on (question, candidate), pointwise, the papers' fine-tuning: WikiQA "
         "MAP 0.679 +- 0.005 (3 seeds; 0.755 with a SQuAD-AS2 TANDA step)"),
        ("as2-cross-encoder-listwise", LISTWISE_CROSS_ENCODER_MODEL, LISTWISE_CROSS_ENCODER,
         "the strongest cross-encoder: mean-pooled read-out, listwise, early stopping; WikiQA "
         "test-clean MAP 0.787 +- 0.017 (3 seeds, 2,012-3,973 s; seed 42: 0.817 with "
         "--distill-from the fine-tuned bi-encoder, 0.801 with a SQuAD-AS2 TANDA step), below "
         "the bi-encoder"),
        ("as2-contextual", {"arch": "cross-encoder", "contextual": True}, _POINTWISE,
         "contextual cross-encoder (previous + next sentence as a third segment), pointwise: "
         "WikiQA MAP 0.653 +- 0.005 (3 seeds)"),
        ("as2-cascade", {"arch": "cascade"}, _POINTWISE,
         "Cascade Transformer: an exit classifier per stage, pointwise; tune its drop rates "
         "with 'ctxsent cascade tune'"),
    ]:  # fmt: skip
        register(Preset(name, "as2", what, config, model))


_register()
