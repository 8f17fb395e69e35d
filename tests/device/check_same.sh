#!/usr/bin/env bash
# Statuses, verdicts and latencies unchanged by a change of the code's shape (real FlagGems;
# source .fg/env.sh first). Runs, each time-boxed:
#   the builtin slow-switch A/B (check_ab.sh slow), a batch of tests/device/ops10.txt twice
#   (the second replays the first's records: its |delta| is this machine's A/A noise with the
#   configs pinned), and a screen of the same ops under TRITON_F32_DEFAULT=ieee,tf32x3.
# STEPS picks among them (default "ab batch aa screen"; one call of all four may need more than
# ten minutes):
#   STEPS="batch aa screen" bash tests/device/check_same.sh     # leaves $OUT/same.tgz (the roots)
#   STEPS="pinned" REF=device-in/same.tgz bash tests/device/check_same.sh  # the batch again,
#       replaying the reference batch's records (configs pinned: a fresh tuning may pick another
#       config, e.g. rms_norm's TILE_N 4096 vs 8192, 12 % apart), against the reference batch
#   STEPS="ab batch screen" REF=device-in/same.tgz bash tests/device/check_same.sh  # compares with those roots:
#       status and verdict agreement, per-shape gems latency |delta| against the reference's
#       first batch, beside the reference's own A/A |delta|
set -uo pipefail
WORK=${WORK:-/tmp/zlh-same}
source "$(dirname "$0")/common.sh"
OPS=tests/device/ops10.txt
FASTB="--level core --dtypes bfloat16 --isolate-tuner-cache --warmup-ms 10 --min-samples 5 --min-time-ms 5 --max-time-ms 50"
SUM="python3 tests/device/corpus_summary.py"
step() {  # step LABEL SECONDS CMD...
  local label=$1 limit=$2; shift 2; local s=$SECONDS
  timeout "$limit" "$@" > "$WORK/$label.log" 2>&1
  echo "== $label rc=$? wall=$((SECONDS-s))s"
}
{
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
STEPS=" ${STEPS:-ab batch aa screen} "
has() { [[ "$STEPS" == *" $1 "* ]]; }
has ab && WORK=$WORK/ab bash tests/device/check_ab.sh slow
has batch && step batch ${BOX_B:-240} $ZLH batch --ops-file $OPS --devices 0 $FASTB --op-timeout 90 --retries 0 -q --out "$WORK/b"
has batch && $SUM batch "$WORK/b"
has aa && step batch_aa ${BOX_B:-240} $ZLH batch --ops-file $OPS --devices 0 $FASTB --op-timeout 90 --retries 0 -q \
  --replay "$WORK/b" --out "$WORK/b2"
has aa && $SUM batch "$WORK/b2" "$WORK/b"
if has pinned; then
  mkdir -p "$WORK/ref" && tar xzf "$REF" -C "$WORK/ref"
  step pinned ${BOX_B:-240} $ZLH batch --ops-file $OPS --devices 0 $FASTB --op-timeout 90 --retries 0 -q \
    --replay "$WORK/ref/b" --out "$WORK/bp"
  $SUM batch "$WORK/bp" "$WORK/ref/b"
  echo "reference A/A:"; $SUM batch "$WORK/ref/b2" "$WORK/ref/b" | grep -E "agreement|delta"
fi
has screen && step screen ${BOX_S:-300} $ZLH screen --ops-file $OPS --switch TRITON_F32_DEFAULT=ieee,tf32x3 --devices 0 \
  $FASTB --op-timeout 90 --retries 0 --root "$WORK/s"
has screen && $SUM screen "$WORK/s"
roots=$(cd "$WORK" && ls -d b b2 bp s 2>/dev/null)
[ -n "$roots" ] && (cd "$WORK" && tar czf "$OUT/same.tgz" --exclude='.cache-*' --exclude='*.ttgir' \
  --exclude='*.ptx' --exclude='*.llir' $roots)
if [ -n "${REF:-}" ] && ! has pinned; then
  mkdir -p "$WORK/ref" && tar xzf "$REF" -C "$WORK/ref"
  echo "---- against the reference roots ($REF)"
  has batch && $SUM batch "$WORK/b" "$WORK/ref/b"
  [ -d "$WORK/ref/b2" ] && { echo "reference A/A:"; $SUM batch "$WORK/ref/b2" "$WORK/ref/b" | grep -E "agreement|delta"; }
  has screen && $SUM screens "$WORK/s" "$WORK/ref/s"
fi
} 2>&1 | tee "$OUT/same.txt"
