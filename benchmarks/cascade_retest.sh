#!/usr/bin/env bash
# Cascade Table 3 re-tested: P@1 on 200 SQuAD-AS2 test questions, the [CLS] monolithic
# baselines given the exit classifiers' head learning-rate tuning on dev, and section
# 4.3.2's larger first batch.
#   benchmarks/cascade_retest.sh
#   OUT        folder for everything            (default runs/cascade-retest)
#   STEPS      fine-tuning steps of every model (default 800)
#   DEPTHS     [CLS] monolithic depths tuned    (default "2 3 4 5 6")
#   SCALES     head learning-rate scales tried  (default "1 20 50", the cascade's grid
#              without x100, which was worst on WikiQA dev)
#   QUESTIONS  test questions sampled (seed 0)  (default 200)
#   DEVICE     cpu | cuda                       (default cpu; on a GPU also set
#              EXTRA="--accelerator gpu")
# Steps: (1) SQuAD-AS2 from SQuAD v1.1 dev; (2) the cascade and pooled-2..6 (mean read-out,
# heads x20) as in BENCHMARKS "SQuAD-AS2 Table 3"; (3) [CLS] mono-K at every scale, each in
# OUT/hl-S/mono-K; per depth the scale with the best dev MAP (run.json) is linked as
# OUT/cls-K; (4) cascade_table3.py with pooled-K, then with the tuned cls-K, as the
# monolithic rows; (5) section 4.3.2: monolithic batch 84 against a cascade batch of 128.
# Every training step resumes or is skipped when rerun.
set -euo pipefail
OUT=${OUT:-runs/cascade-retest}
STEPS=${STEPS:-800}
QUESTIONS=${QUESTIONS:-200}
DEVICE=${DEVICE:-cpu}
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
squad=$OUT/squad-as2
[ -f "$squad/summary.json" ] ||
  ctxsent data squad-as2 --squad ../shared/data/squad/dev-v1.1.json.gz --out "$squad"
train() {  # OUT_DIR HEAD_LR_SCALE NAME...
  local out=$1 scale=$2
  shift 2
  DATA=squad-as2:$squad OUT=$out STEPS=$STEPS LOSS=listwise LR=5e-5 HEAD_LR_SCALE=$scale \
    MONO_HEAD_LR_SCALE=$scale EXTRA="--max-negatives 15 --dev-questions 30 ${EXTRA:-}" \
    benchmarks/cascade_train.sh "$@"
}
train "$OUT" 20 cascade pooled-6 pooled-5 pooled-4 pooled-3 pooled-2
for scale in ${SCALES:-1 20 50}; do
  for depth in ${DEPTHS:-2 3 4 5 6}; do
    train "$OUT/hl-$scale" "$scale" "mono-$depth"
  done
done
for depth in ${DEPTHS:-2 3 4 5 6}; do
  best=$(python - "$OUT" "$depth" ${SCALES:-1 20 50} <<'EOF'
import json, sys
out, depth, scales = sys.argv[1], sys.argv[2], sys.argv[3:]
dev = {s: json.load(open(f"{out}/hl-{s}/mono-{depth}/run.json"))["best"]["dev"]["map"] for s in scales}
print(max(dev, key=dev.get))
EOF
  )
  ln -sfn "hl-$best/mono-$depth" "$OUT/cls-$depth"
  echo "cls-$depth: head-lr scale $best" >&2
done
table() {  # REPORT PREFIX [options]
  local report=$1 prefix=$2
  shift 2
  [ -s "$OUT/$report.json" ] && return
  python benchmarks/cascade_table3.py --runs "$OUT" --mono-prefix "$prefix" \
    --cascade "$OUT/cascade/model" --reference "$OUT/cls-6/model" \
    --data "squad-as2:$squad" --sample-questions "$QUESTIONS" --device "$DEVICE" "$@" \
    > "$OUT/$report.json.part"
  mv "$OUT/$report.json.part" "$OUT/$report.json"
}
table table3-pooled pooled
table table3-cls cls
table section-4.3.2 pooled --batch-size 84 --cascade-batch-size 128 --alphas 0.3
