"""The table and paired tests of `benchmarks/encoder_ablations.sh` runs.

Reads ``OUT/PRESET-seedS.SETTING.json`` (``ctxsent eval senteval`` reports) and prints JSON:
per preset the mean over seeds of every probe (accuracy in %, correlations as Pearson r x
100) and of the 8-task macro accuracy (Mean-Max AAE Table 2), with each seed's macro; per
``--compare A:B`` the difference A - B of each probe, averaged over the seeds both have,
and two checks of its direction: the macro difference seed by seed (runs of one seed share
the data order and initial draws, so they pair), and an exact sign-flip permutation test
over the probes (are the per-probe differences centred on zero?), two-sided.

    python benchmarks/encoder_ablation_table.py runs/encoder-ablations \\
        --compare mean-max-aae-cpu:mean-aae-cpu mean-max-aae-cpu:mean-max-rae-cpu
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
from pathlib import Path

import numpy as np

ACCURACY = ("MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC", "SICK-E")
CORRELATION = ("SICK-R", "STSB", "STS12")
PROBES = ACCURACY + CORRELATION


def probe_scores(report: dict) -> dict[str, float]:
    """Each probe's headline number: accuracy in %, Pearson r x 100."""
    tasks = report["tasks"]
    scores = {task: tasks[task]["acc"] for task in ACCURACY if task in tasks}
    scores |= {task: 100 * tasks[task]["pearson"] for task in CORRELATION if task in tasks}
    return scores


def read_runs(folder: Path, setting: str) -> dict[str, dict[int, dict[str, float]]]:
    """``{preset: {seed: {probe: score}}}`` of every finished report in ``folder``."""
    runs: dict[str, dict[int, dict[str, float]]] = {}
    for path in sorted(folder.glob(f"*-seed*.{setting}.json")):
        match = re.fullmatch(rf"(.+)-seed(\d+)\.{setting}\.json", path.name)
        if match:
            report = json.loads(path.read_text())
            runs.setdefault(match[1], {})[int(match[2])] = probe_scores(report)
    return runs


def macro(scores: dict[str, float]) -> float:
    return float(np.mean([scores[task] for task in ACCURACY]))


def sign_flip_p(differences: np.ndarray) -> float:
    """Exact two-sided p of the mean under random signs (2^n sign patterns)."""
    observed = abs(differences.mean())
    signs = np.array(list(itertools.product((1, -1), repeat=len(differences))))
    return float(np.mean(np.abs((signs * differences).mean(1)) >= observed - 1e-12))


def compare(a: dict[int, dict], b: dict[int, dict]) -> dict:
    seeds = sorted(a.keys() & b.keys())
    if not seeds:
        return {"seeds": []}
    per_probe = np.array([[a[s][t] - b[s][t] for t in PROBES] for s in seeds]).mean(0)
    return {
        "seeds": seeds,
        "probe_differences": dict(zip(PROBES, np.round(per_probe, 2).tolist(), strict=True)),
        "mean_probe_difference": round(float(per_probe.mean()), 2),
        "probes_ahead": int((per_probe > 0).sum()),
        "probes_behind": int((per_probe < 0).sum()),
        "sign_flip_p": round(sign_flip_p(per_probe), 4),
        "macro_difference_per_seed": [round(macro(a[s]) - macro(b[s]), 2) for s in seeds],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--setting", default="quick")
    parser.add_argument("--compare", nargs="*", default=[], metavar="A:B")
    args = parser.parse_args()
    runs = read_runs(args.folder, args.setting)
    table = {}
    for preset, seeds in runs.items():
        complete = {s: scores for s, scores in seeds.items() if set(PROBES) <= scores.keys()}
        table[preset] = {
            "seeds": sorted(complete),
            "probes": {
                t: round(float(np.mean([v[t] for v in complete.values()])), 2) for t in PROBES
            },
            "macro_8": round(float(np.mean([macro(v) for v in complete.values()])), 2),
            "macro_8_per_seed": [round(macro(complete[s]), 2) for s in sorted(complete)],
        }
    comparisons = {}
    for pair in args.compare:
        a, _, b = pair.partition(":")
        if a not in runs or b not in runs:
            parser.error(f"--compare {pair}: no reports for {a if a not in runs else b}")
        comparisons[pair] = compare(runs[a], runs[b])
    print(json.dumps({"setting": args.setting, "presets": table, "compare": comparisons}, indent=2))


if __name__ == "__main__":
    main()
