#!/usr/bin/env bash
# Hardening on a CUDA machine, builtin kernels (no FlagGems needed), about 3 minutes:
#   bash tests/device/check_hardening.sh
# 1. flags on graph-timed samples: how often undersampled / outliers / bimodal fire on a GPU
#    (add softmax mm twice at the default budgets), and a run capped at --max-time-ms 0.2 that
#    must come out undersampled;
# 2. zlh ab's own process holds no device context while its sides run (nvidia-smi polled);
# 3. SIGTERM in the middle of `zlh bench softmax mm`: rc 143, run.json interrupted/SIGTERM,
#    run.log ending with the table and `status: interrupted (SIGTERM)`, no .cache-* left;
# 4. a cuda record replayed on another backend is refused before anything runs (exit 2).
# Work in $WORK; summary (hardening.txt) and a tarball land in $OUT.
set -uo pipefail
WORK=${WORK:-/tmp/zlh-hardening}
source "$(dirname "$0")/common.sh"
B="--adapter builtin --backend cuda"
{
echo "== 1. flags on the device (graph timer, default budgets, two runs)"
for n in 1 2; do
  $ZLH bench add softmax mm $B -q --out "$WORK/flags$n" > "$WORK/flags$n.log" 2>&1
  echo "run $n rc=$?"
done
$ZLH bench add softmax $B -q --min-samples 50 --max-time-ms 0.2 --min-time-ms 0 \
  --out "$WORK/capped" > "$WORK/capped.log" 2>&1
echo "capped run rc=$?"
python3 tests/device/flag_summary.py "$WORK/flags1" "$WORK/flags2" "$WORK/capped"

echo "== 2. zlh ab's own process and the device"
$ZLH ab add softmax $B --switch ZLH_BUILTIN_SLOW=0,1 -q --root "$WORK/ab" > "$WORK/ab.log" 2>&1 &
parent=$!
seen=0; polls=0; others=0
while kill -0 "$parent" 2>/dev/null; do
  apps=$(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null | tr -d ' ')
  polls=$((polls+1))
  for pid in $apps; do
    if [ "$pid" = "$parent" ]; then seen=$((seen+1)); else others=$((others+1)); fi
  done
  sleep 0.5
done
wait "$parent"; echo "zlh ab rc=$? polls=$polls parent_with_context=$seen (want 0) child_contexts_seen=$others (want > 0)"

echo "== 3. SIGTERM mid-run"
$ZLH bench softmax mm $B --min-time-ms 3000 --max-time-ms 3000 --out "$WORK/term" \
  > "$WORK/term.out" 2> "$WORK/term.err" &
pid=$!
for _ in $(seq 1 600); do
  f=$(ls "$WORK"/term/softmax_*/results.jsonl 2>/dev/null | head -1)
  [ -n "$f" ] && [ -s "$f" ] && break
  sleep 0.2
done
kill -TERM "$pid"; wait "$pid"; echo "rc=$? (want 143)"
python3 - "$WORK/term" <<'PY'
import json, sys
from pathlib import Path
(run,) = Path(sys.argv[1]).glob("softmax_*")
info = json.loads((run / "run.json").read_text())
log = (run / "run.log").read_text().rstrip().splitlines()
print("status", info["status"], "reason", info.get("reason"), "cases", info["counts"])
print("run.log last line:", log[-1], "| lines:", len(log))
print("leftovers:", [p.name for p in Path(sys.argv[1]).iterdir() if p.name.startswith(".")] or "none")
PY
echo "stderr: $(grep '^zlh:' "$WORK/term.err")"

echo "== 4. a cuda record replayed on another backend"
$ZLH bench add $B -q $FAST --out "$WORK/rec" > "$WORK/rec.log" 2>&1; echo "record rc=$?"
rec=$(ls -d "$WORK"/rec/add_* | head -1)
$ZLH bench add --adapter builtin --backend cpu --replay "$rec" --out "$WORK/x" 2>&1 | head -2
echo "bench --replay on cpu rc=${PIPESTATUS[0]} (want 2)"
$ZLH ab --replay "$rec" --backend cpu --root "$WORK/abx" 2>&1 | head -2
echo "ab --replay on cpu rc=${PIPESTATUS[0]} (want 2); root created: $([ -e "$WORK/abx" ] && echo yes || echo no) (want no)"
} 2>&1 | tee "$WORK/summary.txt"
cp "$WORK/summary.txt" "$OUT/hardening.txt"
tar czf "$OUT/hardening.tgz" --exclude='.cache-*' --exclude='*.ttgir' -C "$WORK" .
