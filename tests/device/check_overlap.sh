#!/usr/bin/env bash
# Overlap changes no number (one GPU, real FlagGems: source .fg/env.sh first, FLAGGEMS_DIR set):
#   bash tests/device/check_overlap.sh
# Four batches of the same ops (OPS, default tests/device/ops10.txt) on device 0:
#   plain     --no-overlap, recording: it pins every op's tuned configs for the others
#   over      --overlap, replaying plain's records (--replay plain)
#   again     --no-overlap, replaying the same records: the A/A noise of two separate runs
#   reversed  --no-overlap, replaying, the ops in reverse order: an A/A in which each op
#             follows other ops in its worker (a worker's history changes addresses and
#             state, as overlap's hand-out of ops to workers does)
# and prints, per batch, its wall and where the time went (worker start, inputs, compile,
# sweep, measure, lock wait), then per-shape gems latency |delta| (median, max) of over vs again
# beside again vs plain and reversed vs again, and status agreement, then every shape where
# overlap reads outside both runs without it by more than 2 %, and a verdict line: overlap
# changes no number when no shape of 0.5 us or more (a kernel, not a view) is among them; then
# the same test turned on every batch (how often each is the odd one out: separate runs
# without overlap are too, and overlap should be no more often). Boxes (seconds): BOX_PLAIN 170, BOX_OVER 120, BOX_AGAIN
# 150, BOX_REVERSED 120 (0 leaves it out; a boxed batch keeps what it finished; the comparisons
# take the ops finished in both). ~9.5 minutes at most.
# BUDGET replaces the bench options; EXTRA adds batch options; WIDTH the overlap's width
# (--overlap-width, default 2: ops at once on the device).
set -uo pipefail
WORK=${WORK:-/tmp/zlh-overlap}
source "$(dirname "$0")/common.sh"
OPS=${OPS:-tests/device/ops10.txt}
BUDGET=${BUDGET:-"--level core --dtypes bfloat16 --isolate-tuner-cache --warmup-ms 10 --min-samples 5 --min-time-ms 5 --max-time-ms 50 --op-timeout 90 --retries 0"}
BUDGET="$BUDGET ${EXTRA:-}"     # EXTRA: more batch options (a CPU dry run: --adapter builtin --backend cpu)
SUM="python3 tests/device/corpus_summary.py"
step() {  # step LABEL SECONDS CMD...
  local label=$1 limit=$2; shift 2; local s=$SECONDS
  timeout "$limit" "$@" > "$WORK/$label.log" 2>&1
  echo "== $label rc=$? wall=$((SECONDS-s))s"
}
{
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
rm -rf "$WORK/plain" "$WORK/over" "$WORK/again" "$WORK/reversed"
step plain ${BOX_PLAIN:-170} $ZLH batch --ops-file "$OPS" --devices 0 $BUDGET --no-overlap -q --out "$WORK/plain"
step over ${BOX_OVER:-120} $ZLH batch --ops-file "$OPS" --devices 0 $BUDGET --overlap --overlap-width ${WIDTH:-2} --replay "$WORK/plain" -q --out "$WORK/over"
step again ${BOX_AGAIN:-150} $ZLH batch --ops-file "$OPS" --devices 0 $BUDGET --no-overlap --replay "$WORK/plain" -q --out "$WORK/again"
if [ "${BOX_REVERSED:-120}" -gt 0 ]; then
  grep -v '^[[:space:]]*\(#\|$\)' "$OPS" | tac > "$WORK/ops.reversed"
  step reversed ${BOX_REVERSED:-120} $ZLH batch --ops-file "$WORK/ops.reversed" --devices 0 $BUDGET --no-overlap --replay "$WORK/plain" -q --out "$WORK/reversed"
fi
for b in plain over again reversed; do [ -f "$WORK/$b.log" ] && tail -n 2 "$WORK/$b.log" | cut -c1-200; done
echo "---- overlap vs no overlap (both replaying plain's records)"
$SUM batch "$WORK/over" "$WORK/again"
echo "---- no overlap vs no overlap (A/A of separate runs: the noise)"
$SUM batch "$WORK/again" "$WORK/plain"
if [ -d "$WORK/reversed" ]; then
  echo "---- no overlap, the ops in reverse order vs in order (A/A of separate runs, other histories)"
  $SUM batch "$WORK/reversed" "$WORK/again"
fi
echo "---- shapes where overlap reads outside both runs without it by more than 2 % (the A/A's span)"
python3 - "$WORK" <<'EOF'
import json, sys
from pathlib import Path
work = Path(sys.argv[1])
def medians(batch):
    out = {}
    for results in (work / batch).glob("*/*/results.jsonl"):
        for line in results.read_text().splitlines():
            row = json.loads(line)
            if row.get("gems"):
                out[(row["op"], row["shape_detail"])] = row["gems"]["median_ms"]
    return out
plain, over, again = medians("plain"), medians("over"), medians("again")
reversed_ = medians("reversed") if (work / "reversed").is_dir() else {}
shared = [k for k in over if k in plain and k in again]
outside = []
for key in shared:
    low, high = min(plain[key], again[key]), max(plain[key], again[key])
    if over[key] < low * 0.98 or over[key] > high * 1.02:
        outside.append((key, over[key], plain[key], again[key]))
print(f"   {len(outside)} of {len(shared)} shapes")
for (op, shape), o, p, a in outside:
    r = reversed_.get((op, shape))
    print(f"   {op:<12} {shape[:24]:<24} over {o * 1e3:9.3f} us  plain {p * 1e3:9.3f}  "
          f"again {a * 1e3:9.3f}" + (f"  reversed {r * 1e3:9.3f}" if r is not None else ""))
# shapes under 0.5 us launch no kernel (views: a few ns, where 2 % means nothing)
kernels = [k for k in shared if min(plain[k], again[k]) >= 0.5e-3]
moved = [k for k, *_ in outside if k in kernels]
print(f"== overlap verdict: {'changes no number' if not moved else 'CHANGES NUMBERS'} "
      f"({len(moved)} of {len(kernels)} shapes of >= 0.5 us outside both runs without it by "
      f"more than 2 %)")
# The same test turned on each batch in turn: how often is a batch without overlap the odd one
# out (outside every other batch by more than 2 %)? That is what separate runs do anyway.
batches = {"plain": plain, "over": over, "again": again, **({"reversed": reversed_} if reversed_ else {})}
common = [k for k in kernels if all(k in b for b in batches.values())]
odd_keys = {}
for name, runs in batches.items():
    others = [b for n, b in batches.items() if n != name]
    odd_keys[name] = [k for k in common if runs[k] < min(b[k] for b in others) * 0.98
                      or runs[k] > max(b[k] for b in others) * 1.02]
odd = {name: len(keys) for name, keys in odd_keys.items()}
plain_most = max(v for n, v in odd.items() if n != "over")
print(f"== odd one out (outside every other batch by more than 2 %), of {len(common)} kernel "
      f"shapes: " + ", ".join(f"{n} {v}" for n, v in odd.items())
      + f"; overlap {'no more often than' if odd['over'] <= plain_most else 'MORE OFTEN THAN'} "
      f"a batch without it")
# A spare worker's start (its CUDA context, the library's import) is device work outside any
# run: which of overlap's odd ones out ran while a spare was starting?
spares = []
for log in (work / "over" / ".workers").glob("*.log"):
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("zlh spare start:"):
            words = line.split()
            spares.append((int(words[4]), float(words[6]), float(words[8])))
for op in sorted({op for op, _ in odd_keys["over"]}):
    for run in sorted((work / "over" / op).glob("*/run.json")):
        held = (json.loads(run.read_text()).get("device_lock") or {}).get("sections") or []
        for enter, leave in held:       # the stretches it held the device (its timed ones)
            beside = [f"pid {p} for {min(b, leave) - max(a, enter):.1f} s"
                      for p, a, b in spares if a < leave and enter < b]
            print(f"   {op}: held the device {leave - enter:.1f} s; spares starting meanwhile: "
                  f"{', '.join(beside) or 'none'}")
EOF
echo "---- overlap: lock waits and worker starts per op"
python3 - "$WORK/over" <<'EOF'
import json, sys
from pathlib import Path
root = Path(sys.argv[1])
for done in sorted(root.glob("*/.complete")):
    c = json.loads(done.read_text())
    runs = sorted((root / c["op"]).glob("*/run.json"))
    info = json.loads(runs[-1].read_text()) if runs else {}
    lock = info.get("device_lock") or {}
    print(f"   {c['op']:<14} {c['status']:<8} elapsed {c['elapsed_s']:6.1f}s start {c.get('start_s', 0):5.1f}s "
          f"measure {info.get('measure_s', 0):5.1f}s lock wait {info.get('lock_wait_s', 0):5.2f}s "
          f"({lock.get('contended', 0)}/{lock.get('acquires', 0)} contended, "
          f"{lock.get('asides', 0)} compiles let it go)")
EOF
(cd "$WORK" && tar czf "$OUT/overlap_roots.tgz" --exclude='.cache-*' --exclude='*.ttgir' --exclude='*.ptx' \
  --exclude='*.llir' --exclude='*.cubin' --exclude='*.json.gz' plain over again $(ls -d reversed 2>/dev/null))
} 2>&1 | tee "$OUT/overlap.txt"
