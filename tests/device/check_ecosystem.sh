#!/usr/bin/env bash
# Ecosystem checks on a GPU machine with a staged FlagGems (source .fg/env.sh first), ~4 min:
#  1. FlagGems' own log lines (`Skipped registering operator ...`, printed per case through the
#     root logger when use_gems registers its ops) stay off the terminal and land in run.log
#     once: softmax and add, core, bfloat16. Prints the count on the terminal (want 0), the
#     LIBRARY_LOG lines of run.log and run.json's library_log and compiler.
#  2. zlh ab --fail-on on the device: builtin add/softmax, ZLH_BUILTIN_SLOW=0,0 (A/A, want exit
#     0 with slower:2%) and 0,1 (want exit 6); the --json regressions.
# Work in $WORK; summary.txt and a tarball land in $OUT.
set -uo pipefail
WORK=${WORK:-/tmp/zlh-ecosystem}
source "$(dirname "$0")/common.sh"
rm -rf "$WORK/logs" "$WORK/gate"
mkdir -p "$WORK/logs" "$WORK/gate"
{
echo "== 1. library log lines (FlagGems)"
$ZLH bench softmax add --level core --dtypes bfloat16 --out "$WORK/logs" \
  > "$WORK/logs.out" 2> "$WORK/logs.err"
echo "zlh bench rc=$?"
echo "terminal lines with 'Skipped registering': $(cat "$WORK/logs.out" "$WORK/logs.err" \
  | grep -c 'Skipped registering') (want 0)"
grep "log line(s) of other libraries" "$WORK/logs.err"
for run in "$WORK"/logs/*_*/; do
  echo "-- $run"
  grep '^LIBRARY_LOG' "$run/run.log" | cut -c1-200
  python3 - "$run/run.json" <<'EOF'
import json, sys
info = json.load(open(sys.argv[1]))
print("library_log:", info.get("library_log"), "| compiler:", info.get("compiler"))
print("schema_version", info.get("schema_version"), "zlh_version", info.get("zlh_version"))
EOF
done
echo "== 2. zlh ab --fail-on on the device (builtin, graph timer)"
for sw in 0,0 0,1; do
  $ZLH ab add softmax --adapter builtin --switch "ZLH_BUILTIN_SLOW=$sw" --rounds 3 \
    --fail-on slower:2% --fail-on geomean:1% --fail-on broken --json -q \
    --root "$WORK/gate/$sw" > "$WORK/gate/$sw.json" 2> "$WORK/gate/$sw.err"
  rc=$?
  python3 - "$WORK/gate/$sw.json" "$sw" "$rc" <<'EOF'
import json, sys
path, sw, rc = sys.argv[1:]
want = "0" if sw == "0,0" else "6"
try:
    doc = json.load(open(path))
except ValueError:
    print(f"ZLH_BUILTIN_SLOW={sw}: exit {rc} (want {want}); no JSON"); sys.exit()
rows = doc["rows"]
print(f"ZLH_BUILTIN_SLOW={sw}: exit {rc} (want {want}); {len(rows)} shapes, "
      f"slower {sum(r['direction'] < 0 for r in rows)}, "
      f"regressions {len(doc['fail_on']['regressions'])}")
for line in doc["fail_on"]["regressions"][:6]:
    print("  ", line)
EOF
done
} 2>&1 | tee "$WORK/summary.txt"
cp "$WORK/summary.txt" "$OUT/ecosystem_summary.txt"
tar czf "$OUT/ecosystem.tgz" --exclude='*.ttgir' -C "$(dirname "$WORK")" "$(basename "$WORK")"
