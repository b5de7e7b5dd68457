"""Pre-training memory does not grow with the corpus: one training step on a data folder.

For each objective (Cross-Thought ``cross-thought-1-64-cpu``, MLM ``mlm-1-64-cpu``, RNN-CNN
``rnn-cnn-small-cpu``, Mean-Max AAE ``mean-max-aae-cpu``; the encoders with
``max_sentences=none``, since their CPU presets stop at 200k sentences), the data is built
(``ctxsent pretrain-data``) from the whole corpus and from its first half of documents, and
ONE training step (``ctxsent pretrain ... --max-steps 1``: model load, data open, batch
sampling, step, checkpoint, model save) runs in a fresh process whose peak resident set
(``getrusage`` ``ru_maxrss``) is recorded when training starts (model built, data opened,
batches planned: what could grow with the corpus) and at the end. Memory-mapped data is read
only where a batch needs it, so whole/half should be ~1.0 while the data doubles; the end
peak also moves with the drawn batch's longest sentence (the decoders' logits are batch x
length x vocabulary), which differs between the two corpora. Cross-Thought and MLM share
a data folder (same sequence length and tokenizer), as do the two encoders (same
vocabulary settings). The builds of the whole corpus also run with ``num_proc`` 1 and 2
(examples/s: sequences for Cross-Thought, sentences over both passes for the encoders).

    nice -n 10 env OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 .venv/bin/python \\
        benchmarks/pretrain_data_memory.py --corpus runs/corpus-wiki --out runs/pretrain-data-memory

Prints one JSON object. Runs resume: a data folder or step that exists is not redone.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

OBJECTIVES = {  # objective -> (data kind, preset)
    "cross-thought": ("cross-thought", "cross-thought-1-64-cpu"),
    "mlm": ("cross-thought", "mlm-1-64-cpu"),
    "rnn-cnn": ("encoder", "rnn-cnn-small-cpu"),
    "mean-max-aae": ("encoder", "mean-max-aae-cpu"),
}
DATA_PRESET = {"cross-thought": "cross-thought-1-64-cpu", "encoder": "rnn-cnn-small-cpu"}
ENCODER_SETTINGS = ["--set", "max_sentences=none"]


def half_corpus(corpus: Path, out: Path) -> Path:
    """The first half of ``corpus``'s documents as a corpus folder."""
    from ctxsent.corpus.storage import SUMMARY_FILE, load_corpus

    if not out.exists():
        loaded = load_corpus(corpus)
        staged = out.with_name(out.name + ".tmp")
        shutil.rmtree(staged, ignore_errors=True)
        loaded.dataset.select(range(len(loaded) // 2)).save_to_disk(str(staged))
        summary = {**loaded.summary, "documents": len(loaded) // 2, "half_of": str(corpus)}
        (staged / SUMMARY_FILE).write_text(json.dumps(summary))
        staged.rename(out)
    return out


def ctxsent(*args: str) -> str:
    command = [sys.executable, "-m", "ctxsent.cli", *args]
    print("+", " ".join(command), file=sys.stderr, flush=True)
    return subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True).stdout


def build(kind: str, corpus: Path, out: Path, num_proc: int) -> dict:
    if not out.exists():
        extra = ENCODER_SETTINGS if kind == "encoder" else []
        ctxsent("pretrain-data", kind, "--preset", DATA_PRESET[kind], "--corpus", str(corpus),
                "--out", str(out), "--num-proc", str(num_proc), *extra)  # fmt: skip
    return json.loads((out / "pretrain_data.json").read_text())


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def train_step(objective: str, data: Path, out: Path) -> dict:
    """One step in a fresh process (this script's ``--child`` mode); its peak RSS."""
    report = out / "memory.json"
    if not report.exists():
        command = [sys.executable, __file__, "--child", objective, str(data), str(out)]
        print("+", " ".join(command), file=sys.stderr, flush=True)
        subprocess.run(command, check=True)
    return json.loads(report.read_text())


def child(objective: str, data: Path, out: Path) -> None:
    import lightning as L
    import torch

    torch.set_num_threads(1)
    kind, preset = OBJECTIVES[objective]
    marks = {}
    fit = L.Trainer.fit

    def measured_fit(self, *args, **kwargs):  # model built, data opened, batches planned
        marks["peak_rss_before_fit_mb"] = round(_peak_mb(), 1)
        return fit(self, *args, **kwargs)

    L.Trainer.fit = measured_fit
    started = time.perf_counter()
    from ctxsent.presets import get_preset

    if kind == "cross-thought":
        from ctxsent.training.cross_thought_train import pretrain_cross_thought

        config = replace(get_preset(preset).config, max_steps=1, accelerator="cpu")
        pretrain_cross_thought(data, out, config, overwrite=True)
    else:
        from ctxsent.training.encoder_pretrain import pretrain_encoder

        config = replace(get_preset(preset, "encoder").config, max_sentences=None, max_steps=1)
        pretrain_encoder(data, out, config, overwrite=True)
    seconds = round(time.perf_counter() - started, 1)
    result = {**marks, "peak_rss_mb": round(_peak_mb(), 1), "seconds": seconds}
    (out / "memory.json").write_text(json.dumps(result))


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=Path("runs/corpus-wiki"))
    parser.add_argument("--out", type=Path, default=Path("runs/pretrain-data-memory"))
    parser.add_argument("--objectives", nargs="+", default=list(OBJECTIVES))
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        objective, data, out = args.child
        child(objective, Path(data), Path(out))
        return
    args.out.mkdir(parents=True, exist_ok=True)
    corpora = {"whole": args.corpus, "half": half_corpus(args.corpus, args.out / "corpus-half")}
    kinds = sorted({OBJECTIVES[o][0] for o in args.objectives})
    report: dict = {
        "machine": f"{platform.node()} {os.cpu_count()} CPUs, {platform.processor()}",
        "date": time.strftime("%Y-%m-%d"),
        "build_throughput": {},
        "data": {},
        "train_step": {},
    }
    for kind in kinds:  # num_proc 1 and 2 on the whole corpus; the second one is kept
        throughput = {}
        for num_proc in (1, 2):
            folder = args.out / f"{kind}-whole-np{num_proc}"
            summary = build(kind, corpora["whole"], folder, num_proc)
            throughput[f"num_proc_{num_proc}"] = summary["build"]
        report["build_throughput"][kind] = throughput
        half = build(kind, corpora["half"], args.out / f"{kind}-half", 2)
        whole = json.loads((args.out / f"{kind}-whole-np2" / "pretrain_data.json").read_text())
        count = "sequences" if kind == "cross-thought" else "sentences"
        report["data"][kind] = {
            size: {
                "documents_read": summary["documents_read"],
                count: summary[count],
                "tokens": summary["tokens"],
                "folder_mb": round(folder_bytes(folder) / 2**20, 1),
            }
            for size, summary, folder in (
                ("whole", whole, args.out / f"{kind}-whole-np2"),
                ("half", half, args.out / f"{kind}-half"),
            )
        }
    for objective in args.objectives:
        kind, preset = OBJECTIVES[objective]
        steps = {
            size: train_step(objective, args.out / folder, args.out / f"run-{objective}-{size}")
            for size, folder in (("whole", f"{kind}-whole-np2"), ("half", f"{kind}-half"))
        }
        for key in ("peak_rss_before_fit_mb", "peak_rss_mb"):
            steps[f"whole_over_half_{key}"] = round(steps["whole"][key] / steps["half"][key], 3)
        report["train_step"][objective] = {"preset": preset, **steps}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
