#!/usr/bin/env bash
# Breadth over FlagGems op families (source .fg/env.sh first): each quoted group of ops is one
# zlh bench process with reduced budgets, killed after SECONDS; all groups run at once, so
# their latencies are for runnability only, never for comparison.
#   bash tests/device/check_breadth.sh SECONDS "OPS..." ["OPS..." ...]
# Work in $WORK; summary (breadth_<name>.txt) and a tarball land in $OUT.
set -uo pipefail
WORK=${WORK:-/tmp/zlh-breadth}
limit=${1:?SECONDS \"OPS...\" ...}; shift
source "$(dirname "$0")/common.sh"
name=$(basename "$WORK")
{
s=$SECONDS; i=0
for group in "$@"; do
  i=$((i + 1))
  # shellcheck disable=SC2086  # a group is a space-separated op list
  run_group "g$i" "$limit" "$WORK" $group &
done
wait
python3 tests/device/summarize_runs.py "$WORK" > "$WORK/runs_summary.txt" 2>&1
tail -45 "$WORK/runs_summary.txt"
echo "breadth wall=$((SECONDS-s))s"
} 2>&1 | tee "$WORK/summary.txt"
cp "$WORK/summary.txt" "$OUT/breadth_$name.txt"
tar czf "$OUT/breadth_$name.tgz" --exclude='.cache-*' -C "$(dirname "$WORK")" "$name"
