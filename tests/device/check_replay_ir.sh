#!/usr/bin/env bash
# Record/replay and TTGIR capture with real FlagGems (source .fg/env.sh first), then the
# rest of the op-family breadth check. Work in $WORK; summary and a tarball land in $OUT.
set -uo pipefail
WORK=${WORK:-/tmp/zlh-rr}
source "$(dirname "$0")/common.sh"
OPS="mm log_softmax softmax"
COMMON="--level core --dtypes bfloat16 --isolate-tuner-cache"
{
s=$SECONDS; $ZLH bench $OPS $COMMON --out "$WORK/rec" > "$WORK/rec.txt" 2> "$WORK/rec.err"
echo "record rc=$? wall=$((SECONDS-s))s"
s=$SECONDS; $ZLH bench $OPS $COMMON --replay "$WORK/rec" --out "$WORK/rep" > "$WORK/rep.txt" 2> "$WORK/rep.err"
echo "replay rc=$? wall=$((SECONDS-s))s"
python3 tests/device/corrupt_record.py "$WORK"/rec/mm_* "$WORK/broken_mm"
s=$SECONDS; $ZLH bench mm $COMMON --replay "$WORK/broken_mm" --out "$WORK/bad" > "$WORK/bad.txt" 2> "$WORK/bad.err"
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
for op in mm log_softmax softmax; do
  python3 tests/device/aa_spread.py "$WORK"/rec/${op}_* "$WORK"/rep/${op}_* > "$WORK/aa_$op.txt"
  tail -1 "$WORK/aa_$op.txt"
done
for op in mm softmax; do
  echo "fingerprint $op rec $($ZLH fingerprint "$WORK"/rec/${op}_*) rep $($ZLH fingerprint "$WORK"/rep/${op}_*)"
done
H1="baddbmm rms_norm group_norm batch_norm instance_norm weight_norm_interface conv1d max_pool2d_with_indices:max_pool2d"
H2="avg_pool2d scaled_dot_product_attention flash_attn_varlen_func per_token_group_quant_fp8 cat stack repeat"
H3="tile flip triu rand randn multinomial_with_replacement:multinomial upsample_nearest2d pad"
B="$WORK/breadth"
run_group h1 150 "$B" $H1 & run_group h2 150 "$B" $H2 & run_group h3 150 "$B" $H3 & wait
python3 tests/device/summarize_runs.py "$WORK/breadth" > "$WORK/breadth_summary.txt" 2>&1
tail -30 "$WORK/breadth_summary.txt"
} 2>&1 | tee "$WORK/summary.txt"
cp "$WORK/summary.txt" "$OUT/summary.txt"
tar czf "$OUT/replay_ir.tgz" --exclude='.cache-*' -C "$(dirname "$WORK")" "$(basename "$WORK")"
