#!/usr/bin/env bash
# Train the models of the Cascade paper's Table 3 at our scale: the cascade
# (exits 2..6 of MiniLM-L6) and the monolithic models truncated to 2..6 layers
# (each also a stage of the Sequential Ranker). Same data, steps, batch,
# learning rate and seed for every model.
#   benchmarks/cascade_train.sh [NAME...]   (default: cascade mono-6 mono-2 mono-3 mono-4 mono-5)
#     cascade   exits after layers 2..6, one sampled per mini-batch
#     mono-K    first K layers, [CLS] cross-encoder head
#     pooled-K  first K layers, one exit: the cascade's mean-pooled FFN read-out
#   DATA   AS2 training set spec (default wikiqa:../shared/data/wikiqa)
#   OUT    folder for the runs   (default runs/table3)
#   STEPS  optimisation steps    (default 200)
#   LR     learning rate         (default 3e-5)
#   LOSS   pointwise | listwise  (default pointwise)
#   HEAD_LR_SCALE  learning-rate multiplier of the exit classifiers of cascade and
#                  pooled-K (default 50, chosen on WikiQA dev-clean MAP among 1, 20, 50, 100)
#   MONO_HEAD_LR_SCALE  the same for the [CLS] head of mono-K (default 1)
#   EXTRA  more finetune options, e.g. "--dev-questions 30" for large dev sets
# A finished model is skipped and a stopped one resumes when rerun. Two invocations with
# disjoint names can run side by side (one core each).
set -euo pipefail
DATA=${DATA:-wikiqa:../shared/data/wikiqa}
OUT=${OUT:-runs/table3}
STEPS=${STEPS:-200}
HEADS=(--head-lr-scale "${HEAD_LR_SCALE:-50}")
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(cascade mono-6 mono-2 mono-3 mono-4 mono-5)
for name in "${names[@]}"; do
  grep -q '"finished"' "$OUT/$name/run.json" 2>/dev/null && continue  # done: skip, else resume
  case $name in
    cascade) kind=(--arch cascade "${HEADS[@]}") ;;
    mono-*) kind=(--layers "${name#mono-}" --head-lr-scale "${MONO_HEAD_LR_SCALE:-1}") ;;
    pooled-*) kind=(--arch cascade --layers "${name#pooled-}" --exits "${name#pooled-}" "${HEADS[@]}") ;;
    *) echo "unknown model name: $name" >&2; exit 2 ;;
  esac
  # shellcheck disable=SC2086  # EXTRA is a list of options
  ctxsent finetune as2 --data "$DATA" --pairwise --max-steps "$STEPS" --epochs 1 --batch-size 32 \
    --lr "${LR:-3e-5}" --loss "${LOSS:-pointwise}" --eval-every $((STEPS / 2)) --max-length 128 \
    --seed 42 "${kind[@]}" ${EXTRA:-} --out "$OUT/$name"
done
