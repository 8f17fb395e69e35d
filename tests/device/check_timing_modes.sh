#!/usr/bin/env bash
# `zlh screen --timing changed` against `--timing all` on a GPU with real FlagGems (source
# .fg/env.sh first):
#   bash tests/device/check_timing_modes.sh
# The ops of tests/device/ops10.txt (OPS picks another list) under
# TRITON_F32_DEFAULT=ieee,tf32x3 (SWITCH) at the budgets of screen_sample.sh, screened twice
# from scratch, `changed` first, each boxed to BOX seconds (default 210; the whole script
# stays under 8 minutes). Prints each screen's wall and summary (corpus_summary.py screen),
# the verdict agreement op by op (corpus_summary.py screens: must be every op), which rows
# each mode timed and the IR_CHANGED deltas of both. Output: $OUT/timing_modes.txt, both
# screen.tsv files as $OUT/timing_<mode>.tsv.
set -uo pipefail
WORK=${WORK:-/tmp/zlh-timing}
source "$(dirname "$0")/common.sh"
OPS=${OPS:-tests/device/ops10.txt}
SWITCH=${SWITCH:-TRITON_F32_DEFAULT=ieee,tf32x3}
BUDGET="--level core --dtypes bfloat16 --warmup-ms 10 --min-samples 5 --min-time-ms 5 --max-time-ms 50 --op-timeout 90 --retries 0"
{
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
for mode in changed all; do
  root="$WORK/$mode"
  rm -rf "$root"
  s=$SECONDS
  timeout "${BOX:-210}" $ZLH screen --ops-file "$OPS" --switch "$SWITCH" --devices 0 $BUDGET \
    --timing "$mode" --root "$root" > "$WORK/$mode.log" 2>&1
  echo "== --timing $mode rc=$? wall=$((SECONDS-s))s"
  tail -n 4 "$WORK/$mode.log" | cut -c1-300
  python3 tests/device/corpus_summary.py screen "$root"
  cp "$root/screen.tsv" "$OUT/timing_$mode.tsv" 2>/dev/null
done
python3 tests/device/corpus_summary.py screens "$WORK/changed" "$WORK/all"
python3 - "$WORK/changed/screen.tsv" "$WORK/all/screen.tsv" <<'PY'
import csv, sys
changed, every = ({r["op"]: r for r in csv.DictReader(open(p), delimiter="\t")} for p in sys.argv[1:])
print("op                       verdict     timed(changed/all)  median_delta_pct(changed/all)")
for op in sorted(set(changed) & set(every)):
    c, a = changed[op], every[op]
    print(f"{op:<24} {c['verdict']:<11} {c.get('timed', '-'):>3}/{a.get('timed', '-'):<14} "
          f"{c['median_delta_pct']:>9} / {a['median_delta_pct']}")
untimed = [op for op, r in changed.items() if r["verdict"] != "IR_CHANGED" and r.get("timed") == "yes"]
print("changed timed a row that is not IR_CHANGED:", untimed or "none")
PY
} 2>&1 | tee "$OUT/timing_modes.txt"
