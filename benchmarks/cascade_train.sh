#!/usr/bin/env bash
# Train the models of the Cascade paper's Table 3 at our scale, one after another:
# the cascade (exits 2..6 of MiniLM-L6) and the monolithic models truncated to
# 2..6 layers (each also a stage of the Sequential Ranker). Same data, steps,
# batch, learning rate and seed for every model.
#   DATA   AS2 training set spec    (default squad-as2:runs/squad-as2-small)
#   OUT    folder for the runs      (default runs/table3)
#   STEPS  optimisation steps       (default 200)
set -euo pipefail
DATA=${DATA:-squad-as2:runs/squad-as2-small}
OUT=${OUT:-runs/table3}
STEPS=${STEPS:-200}
common=(--data "$DATA" --pairwise --max-steps "$STEPS" --epochs 1 --batch-size 32 --lr 5e-5
        --eval-every $((STEPS / 2)) --dev-questions 30 --max-length 128 --seed 42)
ctxsent finetune as2 "${common[@]}" --cascade --out "$OUT/cascade"
for layers in 6 2 3 4 5; do
  ctxsent finetune as2 "${common[@]}" --layers "$layers" --out "$OUT/mono-$layers"
done
