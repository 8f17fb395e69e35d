#!/usr/bin/env bash
# The rounds experiment on a GPU, one mode per device call (each well under 8 minutes):
#   source .fg/env.sh && bash tests/device/rounds_spread.sh spread|pace|plant|aa|fresh3
# (several modes joined by +, e.g. plant+aa, share one call's box)
# Modes, their environment and what they print: tests/device/rounds_spread.py. The table is
# appended to $OUT/rounds_spread.txt, the numbers go to $OUT/<mode>.json.
set -u
MODE=${1:-spread}
if [ -z "${FLAGGEMS_DIR:-}" ]; then
  echo "rounds_spread: FLAGGEMS_DIR is not set; source .fg/env.sh first" >&2
  exit 2
fi
export OUT=${OUT:-device-out} PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
mkdir -p "$OUT"
timeout $(( ${BOX_S:-450} + 20 )) python3 tests/device/rounds_spread.py "$MODE"
rc=$?
echo "rounds_spread $MODE rc=$rc (table: $OUT/rounds_spread.txt)"
exit $rc
