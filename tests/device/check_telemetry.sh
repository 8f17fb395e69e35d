#!/usr/bin/env bash
# Telemetry and calibration on a CUDA machine (issue 14). Run from the repository root, after
# `source .fg/env.sh` for FlagGems ops (FLAGGEMS_DIR set); without it builtin ops are used.
#   bash tests/device/check_telemetry.sh abc   # ~6 min on an H200:
#     a  zlh ab add softmax mm (builtin, ZLH_BUILTIN_SLOW=0,1), telemetry every 1 s: clocks
#        over time from the A/B root's telemetry.tsv, per op; report.html with the clocks
#     b  the same 3 builtin ops (24 cases) benched with telemetry off, then again replaying
#        the first run's configs with telemetry every 50 ms: per-case clock readings and
#        throttle flags, and the per-case |delta| between the two (does sampling perturb?)
#     c  zlh calibrate on 3 ops (gelu rms_norm cumsum with FlagGems, else add softmax mm),
#        3 rounds: noise floor and detectable change per shape
#   bash tests/device/check_telemetry.sh d     # ~8 min on an H200:
#     d  zlh calibrate --plant-pct 1, then --plant-pct 0.3, same ops, 3 rounds: detection
#        rate and sign (all shapes, and shapes >= 20 us); PLANTS="0.3" runs one of them only
# Work in $WORK; summaries (telemetry_<part>.txt), report.html and tarballs land in $OUT.
set -uo pipefail
WORK=${WORK:-/tmp/zlh-telemetry}
parts=${1:-abc}
source "$(dirname "$0")/common.sh"
SUM="python3 tests/device/telemetry_summary.py"
BUILTIN=${BUILTIN:-"--adapter builtin --dtypes bfloat16"}
CASE_DTYPES=${CASE_DTYPES:-bfloat16,float16}     # part b: 3 ops x 4 shapes x 2 dtypes = 24 cases
if [ -n "${FLAGGEMS_DIR:-}" ]; then
  CAL_OPS=${CAL_OPS:-"gelu rms_norm cumsum"}; CAL_ARGS="--level core --dtypes bfloat16 --isolate-tuner-cache"
else
  CAL_OPS="add softmax mm"; CAL_ARGS="$BUILTIN"
fi
CAL_BUDGET=${CAL_BUDGET:-"--warmup-ms 50 --max-time-ms 300 --no-ir --timeout 240"}

part_a() {
  s=$SECONDS; rm -rf "$WORK/ab"
  $ZLH ab add softmax mm $BUILTIN --switch ZLH_BUILTIN_SLOW=0,1 --telemetry-interval 1 \
    --timeout 240 --root "$WORK/ab" > "$WORK/ab.log" 2>&1
  echo "a) zlh ab rc=$? wall=$((SECONDS-s))s"
  $SUM tsv "$WORK/ab"
  $ZLH report "$WORK/ab" --html > /dev/null && cp "$WORK/ab/report.html" "$OUT/telemetry_ab_report.html"
  grep -h "throttled" "$WORK/ab.log" | head -5
}

part_b() {
  s=$SECONDS; rm -rf "$WORK/cases_off" "$WORK/cases_on"
  $ZLH bench add softmax mm --adapter builtin --dtypes $CASE_DTYPES --telemetry-interval 0 \
    --out "$WORK/cases_off" -q > "$WORK/cases_off.log" 2>&1
  echo "b) bench, telemetry off: rc=$? wall=$((SECONDS-s))s"; s=$SECONDS
  $ZLH bench add softmax mm --adapter builtin --dtypes $CASE_DTYPES --telemetry-interval 0.05 \
    --replay "$WORK/cases_off" --out "$WORK/cases_on" -q > "$WORK/cases_on.log" 2>&1
  echo "b) bench, telemetry every 50 ms (replaying the first run): rc=$? wall=$((SECONDS-s))s"
  $SUM cases "$WORK/cases_off" "$WORK/cases_on"
  grep -h BENCHMARK_CASE_THROTTLED "$WORK"/cases_on/*/run.log | head -5
}

part_c() {
  s=$SECONDS; rm -rf "$WORK/floor"
  $ZLH calibrate $CAL_OPS $CAL_ARGS $CAL_BUDGET --rounds 3 --telemetry-interval 2 \
    --root "$WORK/floor" -q > "$WORK/floor.log" 2>&1
  echo "c) zlh calibrate $CAL_OPS rc=$? wall=$((SECONDS-s))s"
  $SUM calibration "$WORK/floor"
  cp "$WORK/floor/calibration.json" "$OUT/telemetry_calibration.json" 2>/dev/null
}

part_d() {
  for pct in ${PLANTS:-1 0.3}; do
    s=$SECONDS; rm -rf "$WORK/plant_$pct"
    $ZLH calibrate $CAL_OPS $CAL_ARGS $CAL_BUDGET --rounds 3 --plant-pct $pct \
      --telemetry-interval 2 --root "$WORK/plant_$pct" -q > "$WORK/plant_$pct.log" 2>&1
    echo "d) zlh calibrate --plant-pct $pct rc=$? wall=$((SECONDS-s))s"
    $SUM calibration "$WORK/plant_$pct"
    grep -h CALIBRATION_PLANT "$WORK"/plant_$pct/*/r1_B/*/run.log | head -3
  done
}

mkdir -p "$WORK"
python3 -c "import pynvml; print('pynvml', pynvml.__file__)" 2>&1 | tail -1
nvidia-smi --query-gpu=index,uuid,clocks.applications.graphics,clocks.max.sm,power.limit \
  --format=csv 2>&1 | head -4
echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-unset} ops for calibration: $CAL_OPS"
for part in $(echo "$parts" | grep -o .); do
  { "part_$part"; } 2>&1 | tee "$WORK/summary_$part.txt"
  cp "$WORK/summary_$part.txt" "$OUT/telemetry_$part.txt"
done
dirs=""
for part in $(echo "$parts" | grep -o .); do
  case $part in a) dirs="$dirs ab";; b) dirs="$dirs cases_off cases_on";; c) dirs="$dirs floor";;
    d) dirs="$dirs $(cd "$WORK" && ls -d plant_* 2>/dev/null)";; esac
done
tar czf "$OUT/telemetry_$parts.tgz" --exclude='.cache-*' --exclude='*.ttgir' -C "$WORK" $dirs \
  $(cd "$WORK" && ls *.log summary_*.txt 2>/dev/null)
ls -la "$OUT" | tail -8
