#!/usr/bin/env bash
# The last seed rows on a GPU with real FlagGems (source .fg/env.sh first: FLAGGEMS_DIR):
#   a) Hopper fp16 BLAS: mm, addmm, bmm, linear in float16 at core and at comprehensive
#      (FlagGems' Hopper mm has a cluster path, `cluster_remote_mm_scenario`; the old harness
#      carried an opt-in plugin for an out-of-bounds crash there): per op the case statuses,
#      and the crash text of any run that did not end complete;
#   b) every entry of the curated dismiss list re-checked (`zlh batch --ops … --no-dismiss`,
#      short op timeout): each op's outcome beside the list's reason;
#   c) a batch with a planted environment problem (ZLH_BUILTIN_SLOW=maybe, which every run
#      would refuse): one line, exit 2, no root (`--resume --retry` is tested on a CPU).
# Each step is time-boxed (BOX_CORE, BOX_COMP, BOX_DISMISS, BOX_RETRY seconds; DISMISS_TIMEOUT
# is b's op timeout; defaults 110 + 130 + 200 + 3 x 25 s): all within 9 minutes. A first
# FlagGems mm/addmm/bmm/linear tuner sweep on a fresh machine may need more than BOX_CORE: the
# step's rc (124) and the runs finished before it say so; rerun with STEPS=blas (BLAS_OPS and
# BLAS_LEVELS narrow it). STEPS picks among "blas dismiss retry".
# Output: $OUT/seeds.txt (the summary), $OUT/seeds_logs.tgz (logs and the roots, no caches).
set -uo pipefail
WORK=${WORK:-/tmp/zlh-seeds}
source "$(dirname "$0")/common.sh"
BUDGET="--warmup-ms 10 --min-samples 5 --min-time-ms 5 --max-time-ms 50"
STEPS=" ${STEPS:-blas dismiss retry} "
has() { [[ "$STEPS" == *" $1 "* ]]; }
step() {  # step LABEL SECONDS CMD...
  local label=$1 limit=$2; shift 2; local s=$SECONDS
  echo "\$ $*" > "$WORK/$label.log"
  timeout "$limit" "$@" >> "$WORK/$label.log" 2>&1
  local rc=$?
  echo "== $label rc=$rc wall=$((SECONDS-s))s: $*"
  [ $rc -ne 0 ] && tail -n 4 "$WORK/$label.log" | cut -c1-400 | sed 's/^/   | /'
  return 0
}
runs_summary() {  # runs_summary DIR: per run, op, case statuses, failures, crash text
  python3 - "$1" <<'EOF'
import collections, json, pathlib, sys
root = pathlib.Path(sys.argv[1])
runs = sorted(p.parent for p in root.glob("*/run.json")) if root.is_dir() else []
if not runs:
    print(f"  no run directory under {root}")
for run in runs:
    info = json.loads((run / "run.json").read_text())
    rows = [json.loads(l) for l in (run / "results.jsonl").read_text().splitlines() if l.strip()] \
        if (run / "results.jsonl").is_file() else []
    counts = collections.Counter(r.get("status") for r in rows)
    cal = info.get("caliber") or {}
    print(f"  {info.get('op')}: run {info.get('status')}"
          + (f" ({info.get('reason')})" if info.get("reason") else "")
          + f", timer {cal.get('timer')}, cases " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    for r in rows:
        if r.get("status") != "SUCCESS":
            print(f"    {r.get('status')} {r.get('dtype')} {r.get('shape_detail')}: "
                  f"{(r.get('reason') or '')[:300]}")
        marks = [m for m in r.get("markers", []) if "POISON" in m or "FALLBACK" in m]
        for m in marks[:2]:
            print(f"    marker {r.get('shape_detail')}: {m[:200]}")
    if info.get("status") != "complete" and (run / "run.log").is_file():
        tail = (run / "run.log").read_text(errors="replace").splitlines()[-15:]
        print("    run.log tail:\n      " + "\n      ".join(tail))
EOF
}
status_table() {  # status_table ROOT: ops_status.csv, the columns that matter here
  python3 - "$1" <<'EOF'
import csv, pathlib, sys
path = pathlib.Path(sys.argv[1]) / "ops_status.csv"
if not path.is_file():
    print(f"  no {path}"); sys.exit()
for r in csv.DictReader(open(path, newline="")):
    print(f"  {r['op']}: {r['status']} attempts={r['attempts']} timer={r['timer']} "
          f"{float(r['elapsed_s']):.1f}s rows={r['rows_success']}/{r['rows_total']} "
          f"notes=[{r['notes']}] {r['reason'][:240]}")
EOF
}
{
nvidia-smi --query-gpu=index,name,uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
# a staged checkout says its commit in COMMIT (git would name the enclosing repository's)
echo "FLAGGEMS_DIR=${FLAGGEMS_DIR:-<unset>} commit $(cat "${FLAGGEMS_DIR:-.}/COMMIT" 2>/dev/null \
  || git -C "${FLAGGEMS_DIR:-.}" rev-parse --short HEAD 2>/dev/null)"
if has blas; then
  echo "---- a) fp16 BLAS on this GPU (FlagGems' cluster path:"
  grep -rn "cluster_remote_mm_scenario" "${FLAGGEMS_DIR:-/nonexistent}/src" 2>/dev/null | head -3
  echo "   )"
  for level in ${BLAS_LEVELS:-core comprehensive}; do
    box=$([ $level = core ] && echo "${BOX_CORE:-110}" || echo "${BOX_COMP:-130}")
    step blas_$level "$box" $ZLH bench ${BLAS_OPS:-mm addmm bmm linear} --adapter flaggems --dtypes float16 \
      --level $level $BUDGET --no-ir --out "$WORK/blas_$level"
    runs_summary "$WORK/blas_$level"
    grep -iE "illegal|out of bounds|misaligned|Traceback|Error" "$WORK/blas_$level.log" | head -8
  done
fi
if has dismiss; then
  OPS=$(grep -vE '^\s*(#|$)' harness/corpus/dismiss.txt | awk '{print $1}' | paste -sd, -)
  echo "---- b) the dismiss list re-checked: $OPS"
  step dismiss "${BOX_DISMISS:-200}" $ZLH batch --ops "$OPS" --no-dismiss --devices 0 --level core \
    --dtypes bfloat16 $BUDGET --no-ir --op-timeout "${DISMISS_TIMEOUT:-30}" --retries 0 -q \
    --out "$WORK/dismiss"
  status_table "$WORK/dismiss"
  echo "  the list says:"
  grep -vE '^\s*(#|$)' harness/corpus/dismiss.txt | sed -E 's/^([^ ]+) +# ([^;]*);.*/    \1: \2/' | cut -c1-200
fi
if has retry; then
  echo "---- c) a planted environment problem: refused before anything runs"
  step retry_planted "${BOX_RETRY:-25}" env ZLH_BUILTIN_SLOW=maybe $ZLH batch --adapter builtin \
    --ops add,softmax --dtypes float16 --devices 0 $BUDGET --retries 0 -q --out "$WORK/retry"
  echo "  (exit 2 and no root expected: every run would refuse the switch alike;"
  echo "   root left: $(ls -d "$WORK/retry" 2>/dev/null || echo none))"
fi
(cd "$WORK" && tar czf "$OUT/seeds_logs.tgz" --exclude='.cache-*' --exclude='*.ttgir' \
  --exclude='*.ptx' --exclude='*.llir' --exclude='autotune' *.log $(ls -d blas_* dismiss retry 2>/dev/null))
} 2>&1 | tee "$OUT/seeds.txt"
