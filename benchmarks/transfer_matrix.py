"""Does fine-tuning gain everywhere? Train on each source, test on every AS2 set we have.

Sources: WikiQA, SQuAD-AS2 and both together (``mix_sources``: in proportion to their
questions, or ``balanced``: about equally), each trained with
``finetune_as2`` on a bi-encoder from MiniLM with the bi-encoder recipe plus
``--set NAME=VALUE`` overrides; early stopping on the
source's dev (WikiQA dev-clean; SQuAD-AS2's first ``--squad-dev-questions`` dev questions,
which span its 7 articles). Targets: WikiQA test-clean, SelQA test and SQuAD-AS2 test,
each against zero-shot MiniLM and BM25 with paired 95% bootstrap intervals over questions.

Chosen on dev, never on a test split:
* ``wise``: the recipe's WiSE-FT mix (``wise_alpha``: the fine-tuned weights mixed with
  MiniLM's), which is the alpha this script's ``dev_choice`` gives on the runs of the WikiQA
  and SQuAD-AS2 sources: the largest of :data:`MIXING_GRID` at which every run's MAP on each
  dev set it did not train on (WikiQA dev for SQuAD-AS2, SQuAD-AS2 dev for WikiQA) is at
  least zero-shot MiniLM's. In-domain dev alone cannot see what fine-tuning costs elsewhere
  (it chose alpha 1.0 for every source). Runs are trained unmixed and mixed here, so every
  alpha's MAP on every dev set is printed; ``fine-tuned`` is the unmixed model.
* ``fused``: reciprocal rank fusion with BM25, BM25's weight from :data:`FUSION_WEIGHTS`,
  chosen on the source's dev.

Every run and every score vector is cached under ``--out`` (a killed job goes on where it
stopped). Intervals are Bonferroni-corrected over the matrix's cells (source x seed x
target). Prints one JSON object; ``matrix.json`` in ``--out`` holds it too.

    HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 nice -n 10 python benchmarks/transfer_matrix.py \
        --out runs/matrix --squad runs/squad-as2 --seeds 42 --threads 1
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
from speed_common import machine

import ctxsent
from ctxsent.evaluation.as2_metrics import per_question_as2_metrics
from ctxsent.evaluation.significance import paired_bootstrap
from ctxsent.models.pipeline import question_groups, reciprocal_rank_fusion
from ctxsent.models.staged import question_index
from ctxsent.tasks.as2_load import load_as2, mix_sources
from ctxsent.tasks.as2_records import As2Record, clean, first_questions
from ctxsent.training.as2_finetune import As2RankerSpec, As2TrainConfig, finetune_as2
from ctxsent.training.as2_presets import BI_ENCODER_RECIPE
from ctxsent.training.weight_averaging import copy_state, mix_weights

#: WiSE-FT mixes tried on dev, the fine-tuned model's share (1.0: unmixed).
MIXING_GRID = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
#: BM25's weight in the fusion (the fine-tuned ranker's is 1); 0 keeps the ranker alone.
FUSION_WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
SOURCES = {
    "wikiqa": ("wikiqa",),
    "squad": ("squad",),
    "both": ("wikiqa", "squad"),  # questions drawn in proportion: ~9 in 10 from SQuAD-AS2
    "balanced": ("wikiqa", "squad"),  # each set drawn about equally (balance_sources)
}
TARGETS = ("wikiqa", "selqa", "squad")
DEV_SETS = ("wikiqa", "squad")
METRICS = ("map", "mrr", "p@1")


def data_sets(root: str, squad: str, squad_dev_questions: int) -> dict[str, dict[str, list]]:
    """Each set's splits as the matrix uses them: train whole, dev and test clean."""
    specs = {"wikiqa": f"wikiqa:{root}/wikiqa", "selqa": f"selqa:{root}/selqa"}
    specs["squad"] = f"squad-as2:{squad}"
    sets: dict[str, dict[str, list]] = {}
    for name, spec in specs.items():
        sets[name] = {"dev": clean(load_as2(spec, "dev")), "test": clean(load_as2(spec, "test"))}
        if name != "selqa":
            sets[name]["train"] = clean(load_as2(spec, "train"))
    sets["squad"]["dev"] = first_questions(sets["squad"]["dev"], squad_dev_questions)
    return sets


def source_split(sets: dict, source: str, split: str) -> list[As2Record]:
    balance = source == "balanced" and split == "train"
    return mix_sources([sets[name][split] for name in SOURCES[source]], balance)


class ScoreCache:
    """Scores of (model, set, split), computed once and kept as ``.npy`` under ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)

    def __call__(self, key: str, ranker, records: list[As2Record]) -> np.ndarray:
        path = self.folder / f"{key}.npy"
        if path.exists():
            return np.load(path)
        scores = np.asarray(ranker.predict(records, batch_size=64), dtype=np.float64)
        np.save(path, scores)
        return scores


def metrics_of(records: list[As2Record], scores: np.ndarray):
    return per_question_as2_metrics(
        [r.question_id for r in records], [r.label for r in records], scores
    )


def dev_map(records: list[As2Record], scores: np.ndarray) -> float:
    return float(metrics_of(records, scores).values["map"].mean())


def fuse(records: list[As2Record], ranker: np.ndarray, bm25: np.ndarray, weight: float):
    """Weighted reciprocal rank fusion per question: ``1/(k + rank) + w/(k + rank_bm25)``."""
    groups = question_groups(question_index([r.question_id for r in records]))
    return reciprocal_rank_fusion([ranker, bm25], groups, weights=[1.0, weight])


def compare(
    records, scores: dict[str, np.ndarray], level: float, baselines=("zero-shot", "bm25")
) -> dict:
    """Each model's MAP/MRR/P@1 and its paired difference from each baseline, with its
    ``level`` bootstrap interval."""
    per = {name: metrics_of(records, s) for name, s in scores.items()}
    table = {}
    for name, values in per.items():
        row = {m: round(float(values.values[m].mean()), 4) for m in METRICS}
        for base in baselines:
            if name != base and base in per:
                row[f"vs_{base}"] = {
                    m: paired_bootstrap(
                        values.values[m], per[base].values[m], level=level
                    ).as_dict()
                    for m in ("map", "p@1")
                }
        table[name] = row
    return table


def train(source: str, seed: int, sets: dict, out: Path, recipe: dict) -> dict:
    """The source's fine-tune (skipped when its run finished before), its result JSON."""
    run = out / f"{source}-{seed}"
    result_file = run / "result.json"
    if result_file.exists():
        return json.loads(result_file.read_text())
    config = As2TrainConfig(**{**recipe, "seed": seed, "wise_alpha": 1.0})  # mixed in main
    started = time.process_time()
    best = finetune_as2(
        As2RankerSpec(arch="bi-encoder"),
        source_split(sets, source, "train"),
        source_split(sets, source, "dev"),
        run,
        config,
        overwrite=True,
    )
    best["train_cpu_s"] = round(time.process_time() - started, 1)
    result_file.write_text(json.dumps(best, indent=2))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--root", default="../shared/data")
    parser.add_argument("--squad", required=True, help="'ctxsent data squad-as2' out folder")
    parser.add_argument("--squad-dev-questions", type=int, default=300)
    parser.add_argument("--sources", nargs="+", default=list(SOURCES), choices=list(SOURCES))
    parser.add_argument("--seeds", nargs="+", type=int, default=[42])
    parser.add_argument("--set", nargs="*", default=[], help="NAME=VALUE recipe overrides")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    recipe = asdict(BI_ENCODER_RECIPE)
    for item in args.set:
        name, _, value = item.partition("=")
        recipe[name] = json.loads(value)
    sets = data_sets(args.root, args.squad, args.squad_dev_questions)
    cache = ScoreCache(args.out / "scores")
    zero_shot, bm25 = ctxsent.load("bi-encoder"), ctxsent.load("bm25")
    start = copy_state(zero_shot)
    # Bonferroni over the matrix's cells (source x target), each a claim against a baseline
    level = 1 - 0.05 / (len(args.sources) * len(args.seeds) * len(TARGETS))
    report: dict = {
        "machine": machine(args.threads),
        "recipe": recipe,
        "interval_level": round(level, 4),
        "runs": {},
    }
    runs = [(source, seed) for source in args.sources for seed in args.seeds]
    zero_dev = {d: dev_map(sets[d]["dev"], cache(f"zero-shot-dev-{d}", zero_shot, sets[d]["dev"]))
                for d in DEV_SETS}  # fmt: skip
    curves, unmixed_dev = {}, {}
    for source, seed in runs:  # train, then every mix's MAP on each dev set
        report["runs"][f"{source}-{seed}"] = {"train": train(source, seed, sets, args.out, recipe)}
        tuned = ctxsent.load(str(args.out / f"{source}-{seed}" / "model"))
        tuned_state = copy_state(tuned)
        curves[source, seed] = curve = {d: {} for d in DEV_SETS}
        for d, alpha in ((d, a) for d in DEV_SETS for a in MIXING_GRID):
            tuned.load_state_dict(tuned_state)
            mix_weights(tuned, start, alpha)
            scores = cache(f"{source}-{seed}-wise{alpha}-dev-{d}", tuned, sets[d]["dev"])
            curve[d][alpha] = dev_map(sets[d]["dev"], scores)
            if alpha == 1.0 and d in SOURCES[source]:  # the source's dev: its sets' in order
                unmixed_dev.setdefault((source, seed), []).append(scores)
    unseen = [(c, d) for (source, _), c in curves.items() for d in c if d not in SOURCES[source]]
    kept = [a for a in MIXING_GRID if all(c[d][a] >= zero_dev[d] for c, d in unseen)]
    alpha = recipe["wise_alpha"]
    report["wise"] = {
        "alpha": alpha,
        "dev_choice": max(kept, default=MIXING_GRID[0]) if unseen else None,
        "zero_shot_dev_map": {d: round(m, 4) for d, m in zero_dev.items()},
        "dev_map": {
            f"{source}-{seed}": {
                d: {str(a): round(m, 4) for a, m in c.items()} for d, c in curve.items()
            }
            for (source, seed), curve in curves.items()
        },
    }
    for source, seed in runs:
        key = f"{source}-{seed}"
        dev = source_split(sets, source, "dev")
        tuned = ctxsent.load(str(args.out / key / "model"))
        wise = mix_weights(ctxsent.load(str(args.out / key / "model")), start, alpha)
        dev_tuned, dev_bm25 = np.concatenate(unmixed_dev[source, seed]), bm25.predict(dev)
        fusion_maps = {w: dev_map(dev, fuse(dev, dev_tuned, dev_bm25, w)) for w in FUSION_WEIGHTS}
        weight = max(sorted(fusion_maps), key=fusion_maps.get)  # ties: the smaller weight
        targets = {}
        for target in TARGETS:
            records = sets[target]["test"]
            scores = {
                "zero-shot": cache(f"zero-shot-{target}", zero_shot, records),
                "bm25": cache(f"bm25-{target}", bm25, records),
                "fine-tuned": cache(f"{key}-{target}", tuned, records),
            }
            scores["wise"] = (
                scores["fine-tuned"]
                if alpha == 1.0
                else cache(f"{key}-wise{alpha}-{target}", wise, records)
            )
            scores["fused"] = fuse(records, scores["fine-tuned"], scores["bm25"], weight)
            targets[target] = compare(records, scores, level)
        report["runs"][key] |= {
            "fusion_weight": weight,
            "fusion_dev_map": {str(w): round(m, 4) for w, m in fusion_maps.items()},
            "test": targets,
        }
        (args.out / "matrix.json").write_text(json.dumps(report, indent=2))
    if len(args.seeds) > 1:
        report["over_seeds"] = over_seeds(report["runs"], args.sources, args.seeds)
    print(json.dumps(report, indent=2))


def over_seeds(runs: dict, sources: list[str], seeds: list[int]) -> dict:
    """Per source, target and model: MAP and P@1 as mean and standard deviation over seeds."""
    summary: dict = {}
    for source in sources:
        tests = [runs[f"{source}-{seed}"]["test"] for seed in seeds]
        summary[source] = {
            target: {
                model: {
                    m: {
                        "mean": round(float(np.mean([t[target][model][m] for t in tests])), 4),
                        "sd": round(float(np.std([t[target][model][m] for t in tests], ddof=1)), 4),
                    }
                    for m in ("map", "p@1")
                }
                for model in ("fine-tuned", "wise", "fused")
            }
            for target in TARGETS
        }
    return summary


if __name__ == "__main__":
    main()
