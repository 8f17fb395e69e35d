#!/usr/bin/env bash
# The ten-op acceptance of `--rounds auto` (A/A and a planted 0.3 %), one group per device call:
#   source .fg/env.sh && bash tests/device/rounds_acceptance.sh [GROUP] [MODES] [BOX_S]
# GROUP: gemm (mm addmm bmm), rest1 (softmax fused_add_rms_norm sum cumsum) or rest2 (gelu add
# einsum layer_norm); default gemm on an H200 (the card the acceptance asks for), rest1 on any
# other card. MODES: plant, aa, fresh3 (three fresh rounds at zlh's default budget, for the
# wall) or several joined by + (default plant+aa). BOX_S: the call's time box in seconds
# (default 500). ONLY="OP …" runs those of the group's ops alone. Every op at the budget zlh
# chooses (`--round-budget auto`, harness/ab/round_budget.py): the round process its record
# chose sets it, turns-fresh four placements of 10/20 ms windows (the GEMMs near the power cap,
# thirty-fourth set), twins one placement of 40/80 ms windows (the others, thirty-second set;
# four placements cost them 1.1-1.7 times the wall and found no more, thirty-fifth set) and up
# to 64 short level placements for a case whose level is drawn per placement (fortieth set).
# CALL_END (epoch seconds, e.g. `export CALL_END=$(( $(date +%s) + 540 ))` once at the start of a
# device call) caps BOX_S so that several invocations chained in one call end by then; an
# invocation left under 60 s is skipped (exit 3).
# ROUND_BUDGET=group gives each group one fixed budget instead (GEMM_BUDGET / REST_BUDGET, the
# same two by default; setting either implies group): one budget for a whole group, as the
# thirty-second to thirty-eighth sets ran.
# Runs tests/device/rounds_spread.sh and packs what it wrote, with the card's name and limits,
# into $OUT/call-GROUP-MODES.tgz (a device call brings back few files; several invocations in
# one call pack apart); add groups up with
# `python3 tests/device/rounds_spread.py summarize ROOT…` (an op in two roots of one kind
# counts once).
set -u
FINAL=${OUT:-device-out}
WORK_OUT=$(mktemp -d)/o
mkdir -p "$FINAL" "$WORK_OUT"
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv > "$WORK_OUT/gpu.txt"
cat "$WORK_OUT/gpu.txt"
if grep -q H200 "$WORK_OUT/gpu.txt"; then default_group=gemm; else default_group=rest1; fi
GROUP=${1:-$default_group}
if [ -n "${GEMM_BUDGET:-}${REST_BUDGET:-}" ]; then ROUND_BUDGET=${ROUND_BUDGET:-group}; fi
ROUND_BUDGET=${ROUND_BUDGET:-auto}
GEMM_BUDGET=${GEMM_BUDGET:-"--warmup-ms 10 --min-samples 10 --min-time-ms 10 --max-time-ms 20 \
--placements 4"}
REST_BUDGET=${REST_BUDGET:-"--warmup-ms 20 --min-time-ms 40 --max-time-ms 80"}
case $ROUND_BUDGET in
  auto) echo "rounds_acceptance: each op's budget as zlh chooses it (--round-budget auto)"
        GEMM_BUDGET="--round-budget auto"; REST_BUDGET="--round-budget auto" ;;
  group) ;;
  *) echo "rounds_acceptance: ROUND_BUDGET is auto or group, not '$ROUND_BUDGET'" >&2; exit 2 ;;
esac
case $GROUP in
  gemm) OPS="mm addmm bmm"; BUDGET=$GEMM_BUDGET ;;
  rest1) OPS="softmax fused_add_rms_norm sum cumsum"; BUDGET=$REST_BUDGET ;;
  rest2) OPS="gelu add einsum_bmm:einsum layer_norm"; BUDGET=$REST_BUDGET ;;
  *) echo "rounds_acceptance: GROUP is gemm, rest1 or rest2, not '$GROUP'" >&2; exit 2 ;;
esac
if [ -n "${ONLY:-}" ]; then            # ONLY="bmm": some of the group's ops, at its budget
  for op in $ONLY; do
    case " $OPS " in *" $op "*) ;; *) echo "rounds_acceptance: '$op' is not in group $GROUP" \
      "($OPS)" >&2; exit 2 ;; esac
  done
  OPS=$ONLY
fi
MODES=${2:-plant+aa}
BOX_S=${3:-500}
if [ -n "${CALL_END:-}" ]; then        # the call's deadline, less the 20 s rounds_spread keeps
  LEFT=$(( CALL_END - $(date +%s) - 20 ))
  if [ "$LEFT" -lt 60 ]; then
    echo "rounds_acceptance: skipped $GROUP $MODES ($OPS): ${LEFT} s left before CALL_END" >&2
    exit 3
  fi
  if [ "$LEFT" -lt "$BOX_S" ]; then BOX_S=$LEFT; fi
fi
export OPS BUDGET BOX_S OUT=$WORK_OUT ROUND_PROCESS=auto MIN_ROUNDS=8 MAX_ROUNDS=16 \
  TARGET_PCT=0.1
echo "rounds_acceptance: group $GROUP ($OPS), modes $MODES, box ${BOX_S} s, budget $BUDGET"
bash tests/device/rounds_spread.sh "$MODES" 2>&1 \
  | grep -v "WARNING\|FutureWarning\|isinstance(o, Autotuner\|registered at\|dispatch key" \
  | grep -v "previous kernel\|new kernel\|self.m.impl"
rc=${PIPESTATUS[0]}
PACKED="$FINAL/call-$GROUP-${MODES//+/-}.tgz"
tar czf "$PACKED" -C "$(dirname "$WORK_OUT")" o
echo "rounds_acceptance rc=$rc (packed: $PACKED)"
exit "$rc"
