#!/usr/bin/env bash
# Record/replay and TTGIR capture with real FlagGems (source .fg/env.sh first): record OPs,
# replay them in a fresh process, replay a corrupted record of the first OP, A/A spread and
# fingerprints record vs replay.
#   bash tests/device/check_replay_ir.sh [OP...]      # default: mm log_softmax softmax
# Work in $WORK; summary (replay_<name>.txt) and a tarball land in $OUT.
set -uo pipefail
WORK=${WORK:-/tmp/zlh-rr}
source "$(dirname "$0")/common.sh"
OPS=${*:-mm log_softmax softmax}
FIRST=${OPS%% *}
name=$(basename "$WORK")
COMMON="--level core --dtypes bfloat16 --isolate-tuner-cache"
{
s=$SECONDS; $ZLH bench $OPS $COMMON --out "$WORK/rec" > "$WORK/rec.txt" 2> "$WORK/rec.err"
echo "record rc=$? wall=$((SECONDS-s))s"
s=$SECONDS; $ZLH bench $OPS $COMMON --replay "$WORK/rec" --out "$WORK/rep" > "$WORK/rep.txt" 2> "$WORK/rep.err"
echo "replay rc=$? wall=$((SECONDS-s))s"
python3 tests/device/corrupt_record.py "$WORK"/rec/${FIRST}_* "$WORK/broken"
s=$SECONDS; $ZLH bench "$FIRST" $COMMON --replay "$WORK/broken" --out "$WORK/bad" > "$WORK/bad.txt" 2> "$WORK/bad.err"
echo "corrupted replay rc=$? wall=$((SECONDS-s))s"
python3 - "$WORK" <<'PY'
import json, sys, glob, collections
work = sys.argv[1]
for side in ("rec", "rep", "bad"):
    for run in sorted(glob.glob(f"{work}/{side}/*/run.json")):
        d = json.load(open(run))
        rec = d.get("autotune_records") or {}
        markers = collections.Counter()
        for line in open(run.replace("run.json", "results.jsonl")):
            for m in json.loads(line)["markers"]:
                markers[" ".join(m.split()[:2])] += 1
        print(side, d["op"], "status", d["status"], "mode", d.get("autotune_mode"),
              "fallbacks", d.get("autotune_fallbacks"), "ir", {k: d.get("ir", {}).get(k) for k in
              ("variants", "dumped", "sweep_losers", "convert_layout_total")}, dict(markers))
    for meta in sorted(glob.glob(f"{work}/{side}/*/autotune/records.json")):
        kernels = json.load(open(meta))["kernels"]
        print("  records", meta.split("/")[-3], {k.split(".")[-1]: len(v) for k, v in kernels.items()})
PY
for op in $OPS; do
  python3 tests/device/aa_spread.py "$WORK"/rec/${op}_* "$WORK"/rep/${op}_* > "$WORK/aa_$op.txt"
  tail -1 "$WORK/aa_$op.txt"
done
for op in $OPS; do
  echo "fingerprint $op rec $($ZLH fingerprint "$WORK"/rec/${op}_*) rep $($ZLH fingerprint "$WORK"/rep/${op}_*)"
done
} 2>&1 | tee "$WORK/summary.txt"
cp "$WORK/summary.txt" "$OUT/replay_$name.txt"
tar czf "$OUT/replay_$name.tgz" --exclude='.cache-*' -C "$(dirname "$WORK")" "$name"
