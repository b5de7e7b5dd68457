#!/usr/bin/env bash
# Cross-Thought Table 2 from scratch: Cross-Thought-1/3/5-64, MLM-1-64 and MLM-1-512 of one
# small shape (benchmarks/cross_thought_scratch_backbone.py), random init, the same corpus
# tokens and steps; then unsupervised SQuAD dev paragraph ranking (attention and cosine).
#   benchmarks/cross_thought_scratch.sh [PRESET ...]   (default: the five above, -cpu)
#   OUT      folder for the runs       (default runs/ct-scratch)
#   CORPUS   corpus folder             (default runs/corpus-wiki)
#   STEPS    optimiser steps           (default 800)
#   LR       peak learning rate        (default 5e-4, the paper's)
#   WARMUP   warm-up steps             (default STEPS / 10)
#   QUESTIONS  seeded SQuAD dev questions ranked (default 2000)
# Rerun to resume. Each preset keeps its -cpu shape per step: 4 samples x 16 sequences of 64
# tokens, or 4 x 2 of 512 (4,096 tokens either way).
set -euo pipefail
OUT=${OUT:-runs/ct-scratch}
CORPUS=${CORPUS:-runs/corpus-wiki}
STEPS=${STEPS:-800}
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
presets=("$@")
[ ${#presets[@]} -gt 0 ] || presets=(mlm-1-64-cpu cross-thought-1-64-cpu cross-thought-3-64-cpu
  cross-thought-5-64-cpu mlm-1-512-cpu)
backbone=$OUT/backbone
[ -f "$backbone/config.json" ] ||
  python benchmarks/cross_thought_scratch_backbone.py --corpus "$CORPUS" --out "$backbone"
for preset in "${presets[@]}"; do
  length=${preset%-cpu}
  length=${length##*-}
  data=$OUT/data-$length
  [ -f "$data/pretrain_data.json" ] ||
    ctxsent pretrain-data cross-thought --preset "$preset" --backbone "$backbone" \
      --corpus "$CORPUS" --out "$data" --max-sequences $((STEPS * 4096 / length)) --num-proc 1
  run=$OUT/$preset
  if ! grep -q '"finished"' "$run/run.json" 2>/dev/null; then
    ctxsent pretrain cross-thought --preset "$preset" --data "$data" --out "$run" \
      --backbone "$backbone" --init random --max-steps "$STEPS" \
      --set learning_rate="${LR:-5e-4}" --set warmup_steps="${WARMUP:-$((STEPS / 10))}" \
      > "$run.train.json" 2> "$run.train.log"
  fi
  scorers=("cosine:$run/model")
  case $preset in cross-thought-*) scorers+=("$run/model") ;; esac
  if [ ! -s "$run.ranking.json" ]; then
    python benchmarks/cross_thought_retrieval.py "${scorers[@]}" \
      --questions "${QUESTIONS:-2000}" > "$run.ranking.json.part" 2> "$run.ranking.log"
    mv "$run.ranking.json.part" "$run.ranking.json"
  fi
done
