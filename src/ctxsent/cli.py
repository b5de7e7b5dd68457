"""The ``ctxsent`` command line: one typer app for every stage.

Heavy libraries (torch, transformers, datasets) are imported inside the
commands so that ``ctxsent --help`` stays instant. Any :class:`CtxsentError` or
:class:`OSError` (a full disk, a folder one may not write) is printed as one line on
stderr with exit code 2; option values outside their range are usage errors (exit 2).
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Annotated, Literal

import typer
from typer.core import TyperGroup

from ctxsent import __version__
from ctxsent.cli_options import DevicesOption, OverwriteOption, SeedOption, positive
from ctxsent.corpus.cli import app as corpus_app
from ctxsent.errors import CtxsentError, InputError
from ctxsent.evaluation.senteval_cli import senteval
from ctxsent.export import export_command
from ctxsent.serving.cli import serve
from ctxsent.tasks.cli import app as data_app
from ctxsent.training import cross_thought_cli, ssp_cli
from ctxsent.training.encoder_cli import pretrain_data_encoder, pretrain_encoder
from ctxsent.training.settings import (
    MIN_INPUT_LENGTH,
    Accelerator,
    Arch,
    Loss,
    Precision,
    Strategy,
)


def error_line(err: CtxsentError | OSError) -> str:
    """``err`` as one line; an OS error names its path first, as toolkit errors do."""
    text = str(err)
    if isinstance(err, OSError) and err.filename is not None:
        paths = " -> ".join(str(p) for p in (err.filename, err.filename2) if p is not None)
        text = f"{paths}: {err.strerror or err}"
    return " ".join(text.split())


class OneLineErrors(TyperGroup):
    """The top-level group: toolkit and OS errors end as one line on stderr, exit code 2."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise  # click's main quietly ends a command whose reader left (ctxsent ... | head)
        except (CtxsentError, OSError) as err:
            typer.secho(f"error: {error_line(err)}", err=True, fg="red")
            raise typer.Exit(2) from None


app = typer.Typer(
    cls=OneLineErrors,
    no_args_is_help=True,
    help=__doc__.split("\n")[0],
    pretty_exceptions_enable=False,
)
finetune_app = typer.Typer(no_args_is_help=True, help="Fine-tune rankers on labelled data.")
eval_app = typer.Typer(no_args_is_help=True, help="Evaluate rankers and sentence encoders.")
cascade_app = typer.Typer(no_args_is_help=True, help="Cascade Transformer tools.")
pretrain_app = typer.Typer(no_args_is_help=True, help="Pre-train sentence encoders on a corpus.")
pretrain_data_app = typer.Typer(no_args_is_help=True, help="Build pre-training examples.")
app.add_typer(corpus_app, name="corpus")
app.add_typer(data_app, name="data", help="Build derived datasets (e.g. SQuAD -> AS2).")
app.add_typer(finetune_app, name="finetune")
app.add_typer(eval_app, name="eval")
app.add_typer(cascade_app, name="cascade")
app.add_typer(pretrain_app, name="pretrain")
app.add_typer(pretrain_data_app, name="pretrain-data")
eval_app.command("senteval")(senteval)
eval_app.command("ssp")(ssp_cli.eval_ssp)
pretrain_app.command("cross-thought")(cross_thought_cli.pretrain_command)
pretrain_app.command("encoder")(pretrain_encoder)
pretrain_app.command("ssp")(ssp_cli.pretrain_ssp)
pretrain_data_app.command("ssp")(ssp_cli.pretrain_data_ssp)
pretrain_data_app.command("cross-thought")(cross_thought_cli.pretrain_data_command)
pretrain_data_app.command("encoder")(pretrain_data_encoder)
finetune_app.command("cross-thought")(cross_thought_cli.finetune_command)
eval_app.command("retrieval")(cross_thought_cli.retrieval_command)
app.command("serve")(serve)
app.command("export")(export_command)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"ctxsent {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version."
        ),
    ] = False,
) -> None:
    """Options of ``ctxsent`` itself (before the command)."""


EXAMPLES = Path(__file__).parent / "examples"
ModelOption = Annotated[
    str,
    typer.Option(
        help="a saved ranker folder, bm25, bi-encoder[:BACKBONE], st:PATH or ce:PATH "
        "(sentence-transformers); see ctxsent.resolver"
    ),
]

AlphaOption = Annotated[
    str | None,
    typer.Option(help="cascade drop rate, or one per non-final exit: 0.3 or 0.3,0.3,0.2,0.1"),
]


ColumnsOption = Annotated[
    str | None,
    typer.Option(
        help="your file's column names: question=Query,candidate=Passage,label=Relevant "
        "(fields: question candidate label question_id previous next document_id "
        "document_title)"
    ),
]


def apply_alpha(ranker, alpha: str | None) -> None:
    """Set a staged ranker's drop rates from ``--alpha`` (an error for other rankers)."""
    if alpha is None:
        return
    from ctxsent.models.staged import resolve_alphas
    from ctxsent.protocols import StagedRanker

    if not isinstance(ranker, StagedRanker):
        raise InputError("--alpha applies to cascade and sequential models only", field="alpha")
    rates = parse_numbers(alpha, float, "alpha")
    ranker.alphas = resolve_alphas(rates[0] if len(rates) == 1 else rates, ranker.num_stages)


def parse_numbers(text: str, kind: type, option: str) -> list:
    """``"0.3,0.2"`` -> ``[0.3, 0.2]`` (``kind`` per part), or an error naming ``--option``."""
    try:
        return [kind(part) for part in text.split(",")]
    except ValueError:
        raise InputError(f"expected comma-separated numbers, got {text!r}", field=option) from None


def evaluation_records(data: str, split: str, clean_questions: bool, columns: str | None = None):
    """Records of ``split`` of a folder or dataset spec (a file is one split), cleaned if asked;
    ``columns`` is ``--columns``."""
    from ctxsent.tasks.as2_files import parse_columns
    from ctxsent.tasks.as2_load import load_as2, takes_split
    from ctxsent.tasks.as2_records import clean

    columns = parse_columns(columns) if columns else None
    records = load_as2(data, split if takes_split(data) else None, columns)
    records = clean(records) if clean_questions else records
    if not records:
        raise InputError(f"split {split!r} of {data} has no questions to evaluate", field="split")
    return records


@app.command()
def rank(
    question: Annotated[list[str], typer.Option(help="a question (repeat for several)")],
    document: Annotated[Path, typer.Option(help="text file whose sentences are the candidates")],
    model: ModelOption = "bi-encoder",
    top_k: Annotated[int, typer.Option(min=1, help="answers to show per question")] = 3,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON instead of text")] = False,
    alpha: AlphaOption = None,
) -> None:
    """Answer questions over a document: split it into sentences, score each, show the best."""
    from ctxsent.errors import check_unicode
    from ctxsent.io import read_lines
    from ctxsent.resolver import load_ranker

    for q in question:
        check_unicode(q, "question")
    text = "\n".join(line for _, line in read_lines(document))
    ranker = load_ranker(model)
    apply_alpha(ranker, alpha)
    results = {q: ranker.rank_document(q, text, top_k=top_k) for q in question}
    if as_json:
        payload = [
            {"question": q, "answers": [vars(answer) for answer in answers]}
            for q, answers in results.items()
        ]
        typer.echo(json.dumps(payload, indent=2))
        return
    for q, answers in results.items():
        typer.secho(f"\nQ: {q}", bold=True)
        for place, answer in enumerate(answers, start=1):
            typer.echo(f"  {place}. [{answer.score:+.3f}] {answer.candidate}")
            if ranker.contextual and (answer.previous or answer.next):
                typer.secho(f"       context: {answer.previous} | {answer.next}", dim=True)


@app.command()
def demo(
    model: Annotated[
        str, typer.Option(help="bm25 | bi-encoder[:BACKBONE] | a saved ctxsent ranker folder")
    ] = "bi-encoder",
) -> None:
    """Rank the sentences of a sample document for a few questions, on built-in defaults.

    The default ranker is the zero-shot MiniLM bi-encoder: it needs no training and,
    at CPU fine-tuning budgets, beat our fine-tuned cross-encoders (BENCHMARKS.md).
    """
    questions = [
        line for line in (EXAMPLES / "questions.txt").read_text().splitlines() if line.strip()
    ]
    typer.secho(f"model: {model}   document: {EXAMPLES / 'lighthouse.txt'}", dim=True)
    rank(questions, EXAMPLES / "lighthouse.txt", model=model, top_k=2, as_json=False, alpha=None)


@finetune_app.command("as2")
def finetune_as2_command(
    ctx: typer.Context,
    out: Annotated[Path, typer.Option(help="run folder; the best model goes to OUT/model")],
    data: Annotated[
        str | None, typer.Option(help="NAME:PATH, e.g. wikiqa:DIR, squad-as2:DIR, hf:NAME")
    ] = None,
    train_file: Annotated[
        str | None,
        typer.Option(
            "--train",
            help="your own data instead of --data: a .tsv/.csv/.jsonl/.parquet file or a "
            "dataset, hf:NAME or hf-disk:PATH (@SPLIT picks a split); needs --dev",
        ),
    ] = None,
    dev_file: Annotated[
        str | None, typer.Option("--dev", help="your dev file (as --train): early stopping")
    ] = None,
    test_file: Annotated[
        str | None, typer.Option("--test", help="your test file, scored by the best model")
    ] = None,
    columns: ColumnsOption = None,
    mine_negatives: Annotated[
        str | None,
        typer.Option(
            help="bm25 | bi-encoder[:BACKBONE]: add each question's hard negatives to your "
            "files, each from its own candidates (for question-answer pairs)"
        ),
    ] = None,
    negatives: Annotated[int, typer.Option(min=1, help="negatives mined per question")] = 5,
    init: Annotated[
        str, typer.Option(help="backbone (HF folder/id) or a ctxsent ranker to continue (TANDA)")
    ] = "all-MiniLM-L6-v2",
    contextual: Annotated[
        bool, typer.Option("--contextual/--pairwise", help="add previous+next as a 3rd segment")
    ] = False,
    dev_data: Annotated[
        str | None, typer.Option(help="select on another set's dev split (TANDA: the target)")
    ] = None,
    arch: Annotated[
        Arch | None,
        typer.Option(
            help="cross-encoder | cascade (Cascade Transformer: an exit classifier per stage) | "
            "bi-encoder (cosine of mean-pooled embeddings; its defaults are the Eq. 10 recipe: "
            "--loss listwise --lr 5e-5 --questions-per-batch 8 --max-negatives 15 "
            "--max-steps 300 --eval-every 100). Default: cross-encoder, or the --init "
            "model's kind"
        ),
    ] = None,
    cascade: Annotated[bool, typer.Option(hidden=True, help="replaced by --arch cascade")] = False,
    layers: Annotated[
        int | None,
        typer.Option(
            min=1, help="keep only the first N encoder layers (truncated monolithic model)"
        ),
    ] = None,
    exits: Annotated[
        str | None,
        typer.Option(
            help="--arch cascade exit layers, e.g. 2,3,4,5,6 (default: the paper's 1/3, 1/2, 2/3, "
            "5/6, 1 of the depth); one exit at the last layer is a monolithic model with "
            "the cascade's mean-pooled classifier"
        ),
    ] = None,
    train_split: str = "train",
    dev_split: str = "dev",
    train_clean: Annotated[
        bool,
        typer.Option(
            help="train on questions with both labels (WikiQA: 857 of 2,118 / 8,651 pairs; the "
            "Cascade paper's Table 1 counts the 873 with a correct answer)"
        ),
    ] = True,
    dev_clean: Annotated[bool, typer.Option(help="select on the clean dev set")] = True,
    dev_questions: Annotated[
        int | None,
        typer.Option(min=1, help="evaluate on the first N dev questions only (large sets)"),
    ] = None,
    epochs: Annotated[int, typer.Option(min=1)] = 2,
    max_steps: Annotated[int | None, typer.Option(min=1, help="stop after this many steps")] = None,
    batch_size: Annotated[int, typer.Option(min=1)] = 32,
    lr: Annotated[float, typer.Option(callback=positive, help="learning rate (> 0)")] = 2e-5,
    head_lr_scale: Annotated[
        float,
        typer.Option(
            callback=positive, help="learning-rate multiplier for the new scoring head(s)"
        ),
    ] = 1.0,
    warmup_ratio: Annotated[float, typer.Option(min=0, max=1)] = 0.1,
    eval_every: Annotated[int, typer.Option(min=1, help="steps between dev evaluations")] = 200,
    patience: Annotated[int, typer.Option(min=1, help="evaluations without dev-MAP gain")] = 5,
    max_negatives: Annotated[
        int | None,
        typer.Option(min=1, help="negatives kept per question (subsample large sets)"),
    ] = None,
    loss: Annotated[
        Loss,
        typer.Option(
            help="pointwise (cross-entropy per pair) | listwise (softmax over each "
            "question's candidates; batches of whole questions); bi-encoder: listwise"
        ),
    ] = "pointwise",
    questions_per_batch: Annotated[
        int | None,
        typer.Option(
            min=1, help="listwise: questions per batch (default: about --batch-size pairs)"
        ),
    ] = None,
    temperature: Annotated[
        float | None,
        typer.Option(callback=positive, help="bi-encoder: logits are cosine / T (0.05)"),
    ] = None,
    in_batch_negatives: Annotated[
        bool,
        typer.Option(
            help="listwise bi-encoder: the other questions' candidates in a batch are extra "
            "negatives"
        ),
    ] = False,
    max_length: Annotated[int, typer.Option(min=MIN_INPUT_LENGTH)] = 256,
    precision: Precision = "auto",
    accelerator: Accelerator = "auto",
    devices: DevicesOption = "auto",
    strategy: Annotated[Strategy, typer.Option(help="Lightning strategy")] = "auto",
    num_nodes: Annotated[int, typer.Option(min=1, help="machines (torchrun / SLURM)")] = 1,
    seed: SeedOption = 42,
    overwrite: OverwriteOption = False,
) -> None:
    """Fine-tune an AS2 ranker (cross-encoder, cascade, bi-encoder); early stopping on dev
    MAP; resumable.

    Data: --data SPEC, or your own files: --train FILE --dev FILE [--test FILE].
    """
    from ctxsent.evaluation.as2_metrics import as2_metrics
    from ctxsent.io import check_output
    from ctxsent.resolver import load_ranker
    from ctxsent.tasks.as2_files import parse_columns, read_fine_tuning_files
    from ctxsent.tasks.as2_load import load_as2
    from ctxsent.tasks.as2_records import clean, first_questions
    from ctxsent.training.as2_finetune import (
        ARCH_DEFAULTS,
        As2RankerSpec,
        As2TrainConfig,
        finetune_as2,
    )

    if cascade:
        if arch not in (None, "cascade"):
            raise InputError("--cascade (now --arch cascade) contradicts --arch", field="arch")
        warnings.warn("--cascade is replaced by --arch cascade", FutureWarning, stacklevel=1)
        arch = "cascade"
    exit_layers = parse_numbers(exits, int, "exits") if exits else ()
    spec = As2RankerSpec(init, contextual, max_length, arch, exit_layers, layers)
    settings = dict(
        learning_rate=lr,
        head_lr_scale=head_lr_scale,
        batch_size=batch_size,
        epochs=epochs,
        max_steps=max_steps,
        warmup_ratio=warmup_ratio,
        eval_every=eval_every,
        patience=patience,
        max_negatives_per_question=max_negatives,
        loss=loss,
        questions_per_batch=questions_per_batch,
        in_batch_negatives=in_batch_negatives,
        precision=precision,
        accelerator=accelerator,
        devices=devices,
        strategy=strategy,
        num_nodes=num_nodes,
        seed=seed,
    )
    if temperature is not None:
        settings["temperature"] = temperature
    if spec.kind != "bi-encoder" and (temperature is not None or in_batch_negatives):
        option = "--temperature" if temperature is not None else "--in-batch-negatives"
        raise InputError(f"{option} applies to --arch bi-encoder only", field="arch")
    # the architecture's defaults (ARCH_DEFAULTS) for what the command line leaves out
    # (typer ships its own click: a parameter's source is compared by name)
    sources = {name: ctx.get_parameter_source(name) for name in ctx.params}
    given = {name for name, source in sources.items() if source.name == "COMMANDLINE"}
    option_names = {"learning_rate": "lr", "max_negatives_per_question": "max_negatives"}
    for name, value in ARCH_DEFAULTS.get(spec.kind, {}).items():
        if option_names.get(name, name) not in given:
            settings[name] = value
    if settings["loss"] != "listwise" or "batch_size" in given:  # batches sized in pairs
        settings["questions_per_batch"] = questions_per_batch
    config = As2TrainConfig(**settings)
    own_files = bool(train_file or dev_file or test_file or mine_negatives)
    if (data is not None) == own_files or own_files and not (train_file and dev_file):
        raise InputError(
            "expected --data SPEC or --train FILE --dev FILE [--test FILE] [--mine-negatives], "
            "one of the two",
            field="data",
        )
    check_output(out / "model", spec.kind, overwrite)  # before the data loads
    column_names = parse_columns(columns) if columns else None
    if data is None:
        train, dev, test = read_fine_tuning_files(
            train_file, dev_file, test_file, column_names, mine_negatives, negatives, seed
        )
    else:
        train = load_as2(data, train_split, column_names)
        dev = load_as2(dev_data or data, dev_split, column_names)
        test = []
    train = clean(train) if train_clean else train
    dev = clean(dev) if dev_clean else dev
    if dev_questions is not None:
        dev = first_questions(dev, dev_questions)
    best = finetune_as2(spec, train, dev, out, config, overwrite)
    if test:
        test = clean(test)
        scores = load_ranker(str(out / "model")).predict(test, batch_size=config.eval_batch_size)
        best["test"] = as2_metrics([r.question_id for r in test], [r.label for r in test], scores)
    typer.echo(json.dumps({"model": str(out / "model"), **best}, indent=2))


@eval_app.command("as2")
def eval_as2(
    model: ModelOption,
    data: Annotated[
        str, typer.Option(help="NAME:PATH, e.g. wikiqa:DIR, selqa:DIR; or FILE.csv, hf:NAME...")
    ],
    split: Annotated[str, typer.Option(help="split of a folder (ignored for a file)")] = "test",
    columns: ColumnsOption = None,
    clean_questions: Annotated[
        bool, typer.Option("--clean/--all", help="drop questions without both labels")
    ] = True,
    batch_size: Annotated[int, typer.Option(min=1)] = 64,
    alpha: AlphaOption = None,
    against: Annotated[
        str | None,
        typer.Option(
            help="a second model scored on the same questions: its metrics and MODEL minus it, "
            "with 95% paired-bootstrap intervals over questions"
        ),
    ] = None,
) -> None:
    """Score an AS2 split and print MAP, MRR, P@1, nDCG@10, Hits@k as one JSON object."""
    from ctxsent.evaluation.as2_metrics import per_question_as2_metrics
    from ctxsent.evaluation.significance import paired_bootstrap
    from ctxsent.protocols import StagedRanker
    from ctxsent.resolver import load_ranker

    records = evaluation_records(data, split, clean_questions, columns)
    ids, labels = [r.question_id for r in records], [r.label for r in records]
    ranker = load_ranker(model)
    second = load_ranker(against) if against else None  # a bad folder fails before scoring
    apply_alpha(ranker, alpha)
    start = time.perf_counter()
    scores = ranker.predict(records, batch_size=batch_size, show_progress=sys.stderr.isatty())
    seconds = time.perf_counter() - start
    per_question = per_question_as2_metrics(ids, labels, scores)
    report = {
        "model": model,
        "data": data,
        "split": split,
        "clean": clean_questions,
        "ties": "pessimistic",
        **per_question.summary(),
        "seconds": round(seconds, 2),
        "pairs_per_second": round(len(records) / seconds, 1),
    }
    cost = ranker.last_cost if isinstance(ranker, StagedRanker) else None
    if cost is not None:
        report["alphas"] = ranker.alphas
        report["relative_cost"] = round(cost.relative, 4)
        report["candidates_per_exit"] = cost.candidates_per_exit
    if second is not None:
        other = per_question_as2_metrics(
            ids, labels, second.predict(records, batch_size=batch_size)
        )
        report["against"] = {
            "model": against,
            **other.mean(),
            "difference": {
                name: paired_bootstrap(per_question.values[name], other.values[name]).as_dict()
                for name in ("map", "mrr", "p@1", "ndcg@10")
            },
        }
    typer.echo(json.dumps(report, indent=2))


@cascade_app.command("tune")
def cascade_tune(
    model: Annotated[Path, typer.Option(help="a saved cascade folder")],
    data: Annotated[str, typer.Option(help="NAME:PATH of the tuning set, e.g. wikiqa:DIR")],
    budget: Annotated[
        float, typer.Option(callback=positive, help="max relative cost (1.0 = monolithic)")
    ],
    split: str = "dev",
    questions: Annotated[
        int | None,
        typer.Option(min=1, help="tune on N questions drawn at random (seed 0) from a large split"),
    ] = None,
    metric: Literal["map", "mrr", "p@1", "ndcg@10"] = "map",
    search: Literal["grid", "greedy", "both"] = "both",
    plot: Annotated[Path | None, typer.Option(help="write accuracy vs cost as a PNG")] = None,
    save: Annotated[bool, typer.Option(help="store the chosen rates in the model")] = True,
    batch_size: Annotated[int, typer.Option(min=1)] = 64,
) -> None:
    """Choose per-exit drop rates: most accurate on dev within a cost budget."""
    from ctxsent.evaluation.cascade_tuning import (
        best_within_budget,
        greedy_search,
        grid_search,
        plot_settings,
        pyplot,
    )
    from ctxsent.io import check_writable
    from ctxsent.models.cascade import CascadeRanker
    from ctxsent.saving import load
    from ctxsent.tasks.as2_records import sample_questions

    if save:
        check_writable(model, folder=True)
    if plot is not None:
        check_writable(plot, folder=False)
        pyplot()  # a missing optional dependency stops the run before any work
    ranker = load(model)
    if not isinstance(ranker, CascadeRanker):
        raise InputError("not a cascade model", path=model)
    records = evaluation_records(data, split, clean_questions=True)
    if questions is not None:
        records = sample_questions(records, questions)
    logits = ranker.predict_exits(records, batch_size=batch_size)
    ids, labels = [r.question_id for r in records], [r.label for r in records]
    depth, exits = ranker.model.config.num_hidden_layers, ranker.config.exits
    settings = []
    if search in ("grid", "both"):
        settings += grid_search(logits, ids, labels, exits, depth)
    if search in ("greedy", "both"):
        settings += greedy_search(logits, ids, labels, exits, depth, budget, metric)
    chosen = best_within_budget(settings, budget, metric)
    if chosen is None:
        raise InputError(f"no setting tried costs <= {budget}", field="budget")
    if save:
        ranker.config.alphas = list(chosen.alphas)
        ranker.save_pretrained(model)
    if plot is not None:
        plot_settings(settings, chosen, metric, plot)
    report = {
        "alphas": list(chosen.alphas),
        "relative_cost": round(chosen.relative_cost, 4),
        "dev": chosen.metrics,
        "questions": len(set(ids)),
        "settings_tried": len(settings),
        "saved": save,
    }
    typer.echo(json.dumps(report, indent=2))


@cascade_app.command("sequential")
def cascade_sequential(
    stage: Annotated[
        list[Path], typer.Option(help="a saved ranker per stage, shallowest first (repeat)")
    ],
    out: Annotated[Path, typer.Option(help="folder for the Sequential Ranker")],
    alpha: AlphaOption = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Chain independently trained rankers into the Sequential Ranker baseline (paper 4.2)."""
    from ctxsent.io import check_output
    from ctxsent.models.sequential import SequentialRanker
    from ctxsent.saving import load

    check_output(out, SequentialRanker.kind, overwrite)  # before the stages load
    ranker = SequentialRanker([load(folder) for folder in stage])
    apply_alpha(ranker, alpha)
    ranker.save_pretrained(out, overwrite)
    report = {"model": str(out), "depths": ranker.depths, "alphas": ranker.alphas}
    typer.echo(json.dumps(report, indent=2))


def main() -> None:
    """Entry point: usage errors print the usage, toolkit errors one line; both exit 2.

    Warnings print as one line each (``warning: ...``), not with the code that raised them.
    When stderr is not a terminal (a log file, CI), Hugging Face libraries draw no progress
    bars ("Loading weights"), here and in the processes this one starts.
    """
    warnings.formatwarning = lambda message, *_, **__: f"warning: {message}\n"
    if not sys.stderr.isatty():
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    app()  # standalone: click prints usage errors itself and exits


if __name__ == "__main__":
    main()
