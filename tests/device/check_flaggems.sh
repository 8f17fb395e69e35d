#!/usr/bin/env bash
# FlagGems adapter checks on a CUDA machine with a staged FlagGems (source .fg/env.sh first).
#  1. anchors: softmax add layer_norm mm, --level core --dtypes bfloat16, default budgets (alone)
#  2. FlagGems' own pytest benchmark, --mode cudagraph, same ops (alone)
#  3. breadth: ~73 more ops in 6 family groups through check_breadth.sh, 3 processes at a time
# Work in $WORK; summary and a tarball land in $OUT.
set -uo pipefail
WORK=${WORK:-/tmp/zlh-fg}
source "$(dirname "$0")/common.sh"
{
start=$SECONDS
$ZLH bench softmax add layer_norm mm --level core --dtypes bfloat16 --out "$WORK/anchor" \
  > "$WORK/anchor.txt" 2> "$WORK/anchor.err"
echo "zlh anchors rc=$? wall=$((SECONDS-start))s"
for op in softmax add layer_norm mm; do
  s=$SECONDS
  (cd "$FLAGGEMS_DIR" && timeout 300 python3 -m pytest "benchmark/test_$op.py::test_$op" \
     --level core --mode cudagraph --dtypes bfloat16 -s -q -p no:cacheprovider) \
     > "$WORK/pytest_$op.txt" 2>&1
  echo "pytest $op rc=$? wall=$((SECONDS-s))s"
done
G1="topk perf_sort:sort dropout dispatch_fused_moe_kernel:fused_moe fused_moe_fp8 moe_sum"
G2="abs exp gelu relu sigmoid tanh mul sub div pow_tensor_tensor:pow where_self:where clamp silu"
G3="sum mean amax argmax max min prod cumsum log_softmax var_mean all any cross_entropy_loss"
G4="bmm addmm mv outer linear baddbmm rms_norm group_norm batch_norm instance_norm weight_norm_interface"
G5="gather scatter_add index_select index_add masked_fill masked_select embedding nonzero isin unique_consecutive argsort"
G6="conv2d conv1d max_pool2d_with_indices:max_pool2d avg_pool2d scaled_dot_product_attention flash_attn_varlen_func per_token_group_quant_fp8 cat stack repeat tile flip triu rand randn multinomial_with_replacement:multinomial upsample_nearest2d pad"
B="bash $(dirname "$0")/check_breadth.sh"
WORK=$WORK/breadth1 $B 170 "$G1" "$G2" "$G3"
WORK=$WORK/breadth2 $B 170 "$G4" "$G5" "$G6"
echo "total wall=$((SECONDS-start))s"
} 2>&1 | tee "$WORK/summary.txt"
cp "$WORK/summary.txt" "$OUT/summary.txt"
tar czf "$OUT/flaggems.tgz" --exclude=breadth1 --exclude=breadth2 -C "$(dirname "$WORK")" "$(basename "$WORK")"
