#!/usr/bin/env bash
# The ten-op acceptance of `--rounds auto` (A/A and a planted 0.3 %), one group per device call:
#   source .fg/env.sh && bash tests/device/rounds_acceptance.sh [GROUP] [MODES] [BOX_S]
# GROUP: gemm (mm addmm bmm) or rest (the seven other ops); default gemm on an H200 (the card
# the acceptance asks for), rest on any other card. MODES: plant, aa or plant+aa (default
# plant+aa for gemm, plant for rest). BOX_S: the call's time box in seconds (default 500).
# Runs tests/device/rounds_spread.sh with the budget of the last sets in tests/device/README.md
# and packs what it wrote, with the card's name and limits, into $OUT/call.tgz (a device call
# brings back few files); add groups up with `python3 tests/device/rounds_spread.py summarize`.
set -u
FINAL=${OUT:-device-out}
WORK_OUT=$(mktemp -d)/o
mkdir -p "$FINAL" "$WORK_OUT"
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv > "$WORK_OUT/gpu.txt"
cat "$WORK_OUT/gpu.txt"
if grep -q H200 "$WORK_OUT/gpu.txt"; then default_group=gemm; else default_group=rest; fi
GROUP=${1:-$default_group}
case $GROUP in
  gemm) OPS="mm addmm bmm"; default_modes=plant+aa ;;
  rest) OPS="softmax fused_add_rms_norm sum cumsum gelu add einsum_bmm:einsum layer_norm"
        default_modes=plant ;;
  *) echo "rounds_acceptance: GROUP is gemm or rest, not '$GROUP'" >&2; exit 2 ;;
esac
MODES=${2:-$default_modes}
export OPS BOX_S=${3:-500} OUT=$WORK_OUT ROUND_PROCESS=auto MIN_ROUNDS=8 MAX_ROUNDS=16 \
  TARGET_PCT=0.1 BUDGET="--warmup-ms 10 --min-samples 10 --min-time-ms 10 --max-time-ms 20 \
--placements 4"
echo "rounds_acceptance: group $GROUP ($OPS), modes $MODES, box ${BOX_S} s"
bash tests/device/rounds_spread.sh "$MODES" 2>&1 \
  | grep -v "WARNING\|FutureWarning\|isinstance(o, Autotuner\|registered at\|dispatch key" \
  | grep -v "previous kernel\|new kernel\|self.m.impl"
rc=${PIPESTATUS[0]}
tar czf "$FINAL/call.tgz" -C "$(dirname "$WORK_OUT")" o
echo "rounds_acceptance rc=$rc (packed: $FINAL/call.tgz)"
exit "$rc"
