#!/usr/bin/env bash
# Input building at core level with real FlagGems (source .fg/env.sh first: FLAGGEMS_DIR): the
# ops whose upstream inputs are drawn on the host and moved to the device (integer randint at
# 2**30 elements: generate_tensor_input, shift amounts, masks, ...; numpy index sets over
# 2**28; dequantize, whose host draw zlh leaves as written: a host op comes before the move),
# run by `zlh batch` at core, bf16 (integer ops fall back to their own dtypes), at the screen's budgets, twice:
#   device:   every op of OPS with --inputs device (the default);
#   upstream: the ops of UP_OPS with --inputs upstream (upstream's exact construction; each
#             costs about a minute, so only a few).
# Per op: status, wall, the slowest case's input building (results.jsonl `extra.inputs_s`,
# over every run of the op), the run's total `inputs_s` and run.json `inputs` (mode, calls
# drawn on the device). Target: no case over 1 s with --inputs device.
# Boxes BOX_DEVICE (default 220 s) and BOX_UP (120 s): within 6 minutes with the start-up.
# Output: $OUT/inputs.txt (the summary), $OUT/inputs_roots.tgz (both roots, no caches).
set -uo pipefail
WORK=${WORK:-/tmp/zlh-inputs}
source "$(dirname "$0")/common.sh"
OPS=${OPS:-bitwise_xor_scalar:bitwise_xor,bitwise_and,fmod_tensor_:fmod,where_self_out:where,remainder,gcd,lshift,rshift,randint_like,bincount,bitwise_left_shift,bitwise_right_shift_,contiguous,cumprod_perf:cumprod,nanmedian,index_acc_perf:index,index_put_acc_false:index_put,dequantize}
UP_OPS=${UP_OPS:-bitwise_xor_scalar:bitwise_xor,lshift}
BUDGET="--level core --dtypes bfloat16 --warmup-ms 10 --min-samples 5 --min-time-ms 5
        --max-time-ms 50 --op-timeout 90 --retries 0"
batch() {  # batch LABEL SECONDS INPUTS OPS
  local label=$1 limit=$2 inputs=$3 ops=$4 s=$SECONDS
  rm -rf "$WORK/$label"
  timeout "$limit" $ZLH batch --ops "$ops" $BUDGET --inputs "$inputs" --out "$WORK/$label" -q \
    > "$WORK/$label.log" 2>&1
  local rc=$?
  echo "== $label: zlh batch --inputs $inputs rc=$rc wall=$((SECONDS-s))s ($ops)"
  [ $rc -ne 0 ] && [ $rc -ne 1 ] && tail -n 4 "$WORK/$label.log" | cut -c1-300 | sed 's/^/   | /'
  return 0
}
{
nvidia-smi --query-gpu=index,name,clocks.sm,temperature.gpu --format=csv,noheader
echo "FLAGGEMS_DIR=${FLAGGEMS_DIR:-<unset>} commit $(cat "${FLAGGEMS_DIR:-.}/COMMIT" 2>/dev/null \
  || git -C "${FLAGGEMS_DIR:-.}" rev-parse --short HEAD 2>/dev/null)"
batch device "${BOX_DEVICE:-220}" device "$OPS"
batch upstream "${BOX_UP:-120}" upstream "$UP_OPS"
python3 "$(dirname "$0")/inputs_summary.py" device "$WORK/device" upstream "$WORK/upstream"
} 2>&1 | tee "$OUT/inputs.txt"
tar czf "$OUT/inputs_roots.tgz" -C "$WORK" --exclude='.cache-*' --exclude='ttgir' \
  --exclude='autotune' device upstream device.log upstream.log 2>/dev/null
exit 0
