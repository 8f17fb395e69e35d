#!/usr/bin/env bash
# The ray executor on one GPU against local lanes, with real FlagGems (source .fg/env.sh first):
#   source .fg/env.sh && bash tests/device/check_ray.sh
# Needs .whl/ made by tests/device/pack_ray.sh (carried with the call: nothing is fetched).
# Installs Ray under build/raylib, starts a one-node Ray cluster (the GPU), then the first 20
# ops of tests/device/ops20.txt: a batch through local lanes (recording), the same through Ray
# and again through local lanes (both replaying the first's records: the A/A reference), a screen
# (TRITON_F32_DEFAULT=ieee,tf32x3) both ways. Prints statuses and verdicts equal or not, the
# per-shape latency |delta| of the two batches (corpus_summary.py), and what Ray adds per op
# (ray_summary.py). Steps are time-boxed (BOX_BATCH 85 s, BOX_SCREEN 115 s each): ~9 min.
# STEPS picks them ("batch screen" by default; "batch" and "screen" in two calls give each
# more time), SCREEN_EXTRA more options for both screens (e.g. --kernel-split, so that the kept
# local root shows the per-kernel split of multi-kernel ops), OPS the list (default: tests/device/ops20.txt, at most 20 ops are taken; a boxed step
# keeps what it finished, the comparisons take the ops finished both ways).
# $OUT/ray.txt holds the summary, $OUT/ray_logs.tgz the step logs and tables, and
# $OUT/ray_screen.tgz the local screen's root with its TTGIR (a real root for zlh report).
set -uo pipefail
WORK=${WORK:-/tmp/zlh-ray}
source "$(dirname "$0")/common.sh"
SUM="python3 tests/device/corpus_summary.py"
RSUM="python3 tests/device/ray_summary.py"
FASTB="--level core --dtypes bfloat16 --isolate-tuner-cache --warmup-ms 10 --min-samples 5 --min-time-ms 5 --max-time-ms 50"
{
nvidia-smi --query-gpu=index,name,clocks.sm,temperature.gpu --format=csv,noheader
ray_up 1 || exit 1
LIST=${OPS:-tests/device/ops20.txt}
OPS=$WORK/ops20.txt
grep -v '^[[:space:]]*#' "$LIST" | grep -v '^[[:space:]]*$' | head -n 20 > "$OPS"
COMMON="--ops-file $OPS $FASTB --op-timeout 90 --retries 0"
STEPS=${STEPS:-batch screen}
if [[ " $STEPS " == *" batch "* ]]; then
step batch_local ${BOX_BATCH:-85} $ZLH batch $COMMON --devices 0 -q --out "$WORK/bl"
step batch_ray ${BOX_BATCH:-85} $ZLH batch $COMMON --executor ray --backend cuda \
  --replay "$WORK/bl" -q --out "$WORK/br"
step batch_again ${BOX_BATCH:-85} $ZLH batch $COMMON --devices 0 --replay "$WORK/bl" -q \
  --out "$WORK/bl2"
echo "--- batch through Ray against local lanes (both replaying the first batch's records)"
$SUM batch "$WORK/br" "$WORK/bl2"
$RSUM "$WORK/br" "$WORK/bl2" ${WALL[batch_ray]} ${WALL[batch_again]}
echo "--- the A/A noise of two local batches (the second replaying the first's records)"
$SUM batch "$WORK/bl2" "$WORK/bl"
fi
if [[ " $STEPS " == *" screen "* ]]; then
SWITCH="--switch TRITON_F32_DEFAULT=ieee,tf32x3 ${SCREEN_EXTRA:-}"
step screen_local ${BOX_SCREEN:-115} $ZLH screen $COMMON $SWITCH --devices 0 --root "$WORK/sl"
step screen_ray ${BOX_SCREEN:-115} $ZLH screen $COMMON $SWITCH --executor ray --backend cuda --root "$WORK/sr"
echo "--- screen through Ray against local lanes"
$SUM screens "$WORK/sr" "$WORK/sl"
for side in A B; do echo "side $side:"; $RSUM "$WORK/sr/$side" "$WORK/sl/$side"; done
(cd "$WORK" && tar czf "$OUT/ray_screen.tgz" --exclude='.cache-*' --exclude='*.ptx' \
  --exclude='*.llir' --exclude='*.cubin' --exclude='*.json.gz' sl)
fi
ray_down
for log in "$WORK/batch_ray.log" "$WORK/screen_ray.log"; do [ -f "$log" ] && tail -n 3 "$log"; done
} 2>&1 | tee "$OUT/ray.txt"
(cd "$WORK" && find . -maxdepth 4 \( -name '*.log' ! -name 'run.attempt*' -o -name ops_status.csv \
   -o -name summary.csv -o -name screen.tsv -o -name '*.ray.tsv' -o -name ops20.txt \) -print \
   | tar czf "$OUT/ray_logs.tgz" -T - 2>/dev/null)
