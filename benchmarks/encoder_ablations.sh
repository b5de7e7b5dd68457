#!/usr/bin/env bash
# Encoder presets (RNN-CNN and Mean-Max AAE ablations) at equal steps and seeds on one
# data folder, each scored with SentEval-style probes; then
# `python benchmarks/encoder_ablation_table.py OUT` makes the table and the paired tests.
#   benchmarks/encoder_ablations.sh PRESET [PRESET ...]
#   OUT      folder for the runs            (default runs/encoder-ablations)
#   CORPUS   corpus folder for the data     (default runs/corpus-wiki)
#   STEPS    optimiser steps of every run   (default 1000)
#   SEEDS    seeds, space-separated         (default "0 1")
#   SETTING  probe setting, quick | literature (default quick)
# Rerun to resume: a finished run or score is skipped, a stopped run resumes from its
# checkpoint. Two invocations with disjoint presets can run side by side (one core each).
set -euo pipefail
OUT=${OUT:-runs/encoder-ablations}
STEPS=${STEPS:-1000}
SETTING=${SETTING:-quick}
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
data=$OUT/data
mkdir -p "$OUT"
# One vocabulary and sentence slice for every preset (the -cpu presets share these settings).
flock "$OUT/.data.lock" -c "[ -f $data/pretrain_data.json ] || ctxsent pretrain-data encoder \
  --preset rnn-cnn-small-cpu --corpus ${CORPUS:-runs/corpus-wiki} --out $data --num-proc 1"
for preset in "$@"; do
  for seed in ${SEEDS:-0 1}; do
    run=$OUT/$preset-seed$seed
    if ! grep -q '"finished"' "$run/run.json" 2>/dev/null; then
      ctxsent pretrain encoder "$preset" --data "$data" --out "$run" --max-steps "$STEPS" \
        --set seed="$seed" --set max_minutes=none > "$run.train.json" 2> "$run.train.log"
    fi
    if [ ! -s "$run.$SETTING.json" ]; then
      ctxsent eval senteval --model "$run/model" --tasks all --setting "$SETTING" --threads 1 \
        > "$run.$SETTING.json.part" 2> "$run.$SETTING.log"
      mv "$run.$SETTING.json.part" "$run.$SETTING.json"
    fi
  done
done
