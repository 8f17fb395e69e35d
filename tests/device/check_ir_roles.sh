#!/usr/bin/env bash
# IR roles and the profiler cross-check on FlagGems ops (source .fg/env.sh first).
#   bash tests/device/check_ir_roles.sh [OP...]
# 1. gelu rms_norm cumsum (core, bf16): index.tsv roles per kernel — the op's own kernels must
#    be `measured`, FlagGems' fill_scalar_kernel never (set-up or absent).
# 2. The given OPs (default: a dozen families): zlh's gems latency vs do_bench_cudagraph and
#    the profiler's kernel time of the same kernels, replaying each run's record.
set -uo pipefail
WORK=${WORK:-/tmp/zlh-roles}
source "$(dirname "$0")/common.sh"
OPS=${*:-softmax add layer_norm mm gelu rms_norm cumsum log_softmax sum argmax exp mul}
{
s=$SECONDS
$ZLH bench gelu rms_norm cumsum --level core --dtypes bfloat16 --isolate-tuner-cache -q \
  --out "$WORK/roles" > "$WORK/roles.log" 2>&1
echo "roles bench rc=$? wall=$((SECONDS-s))s"
for run in "$WORK"/roles/*_*/; do
  echo "== $(basename "$run")"
  awk -F'\t' 'NR>1 {n[$2"\t"$3]+=$7; s[$2"\t"$3]+=$8; w[$2"\t"$3]+=$9}
              END {for (k in n) printf "   %-40s launches=%d setup=%d sweep=%d\n", k, n[k], s[k], w[k]}' \
    "$run/ttgir/index.tsv" | sort
  python3 -c "import json,sys; i=json.load(open('$run/run.json'))['ir']; print('   ir:', {k: i[k] for k in ('measured_variants','setup_variants','dumped','setup_dumped','sweep_losers','convert_layout_total')})"
  if awk -F'\t' 'NR>1 && $3=="measured" && $2 ~ /fill/' "$run/ttgir/index.tsv" | grep -q .; then
    echo "   FAIL: a fill kernel is measured"; else echo "   ok: no fill kernel among measured"; fi
done
s=$SECONDS
$ZLH bench $OPS --level core --dtypes bfloat16 --isolate-tuner-cache -q --out "$WORK/prof" \
  > "$WORK/prof.log" 2>&1
echo "profiler ops bench rc=$? wall=$((SECONDS-s))s"
python3 tests/device/compare_do_bench.py "$WORK"/prof/*_*/
} 2>&1 | tee "$WORK/summary.txt"
cp "$WORK/summary.txt" "$OUT/ir_roles.txt"
tar czf "$OUT/ir_roles.tgz" --exclude='.cache-*' -C "$WORK" roles roles.log prof.log 2>/dev/null
