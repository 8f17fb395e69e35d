#!/usr/bin/env bash
# Corpus assets on a CUDA machine: source .fg/env.sh first; FlagGems-vllm staged in .fgv
# (or $FLAGGEMS_VLLM_DIR). All parts run at the same time, each process killed after its limit:
# both sides of (a) see the same load; latencies are not for comparison.
#  a. the fast screen: OPS (141 ops, dealt to PARTS=2 `zlh batch` runs, one worker each,
#     OP_TIMEOUT=90 s per op) with shapes/single.yaml, and the same batches with FlagGems' core
#     shapes: per op wall (run.json) and rows, ops reached within LIMIT seconds (default 230).
#  b. injection: classes that hard-code shapes, with shapes/single.yaml (SHAPES_INJECTED and the
#     rows' shape_detail), then avg_pool2d with an entry of the wrong form (back-off marker).
#  OPS, INJECT and MISFIT ("op ClassKey") can be overridden from the environment.
#  c. FlagGems-vllm: --verify-collect of its corpus (no timing), then up to 36 collectable ops in
#     3 `zlh batch` runs with its own core shapes: ops with rows.
# Work in $WORK; summaries (assets_*.txt, summary.txt) and a tarball land in $OUT.
set -uo pipefail
WORK=${WORK:-/tmp/zlh-assets}
LIMIT=${LIMIT:-230}
ASSETS_PARTS=${ASSETS_PARTS:-abc}   # which of the parts below to run
PARTS=${PARTS:-2}
source "$(dirname "$0")/common.sh"
# the vllm checkout only where it is staged: a FLAGGEMS_VLLM_DIR naming a missing folder is a
# preflight failure for every zlh command of this script
[ -z "${FLAGGEMS_VLLM_DIR:-}" ] && [ -d .fgv/benchmark ] && export FLAGGEMS_VLLM_DIR=$PWD/.fgv
BUDGET="--level core --warmup-ms 10 --min-samples 5 --min-time-ms 5 --max-time-ms 100"
BATCH="$BUDGET --op-timeout ${OP_TIMEOUT:-90} --retries 0 -q"
SUMMARY="python3 tests/device/assets_summary.py"
# light ops first; autotuned BLAS (LibTuner sweeps), convs and weight_norm last
OPS=${OPS:-"abs exp gelu relu sigmoid tanh mul sub div add pow_tensor_tensor:pow where_self:where
clamp silu sum mean amax argmax max min prod cumsum log_softmax softmax var_mean all any
cross_entropy_loss rms_norm group_norm batch_norm layer_norm instance_norm gather scatter_add
index_select index_add masked_fill masked_select embedding nonzero isin unique_consecutive argsort
topk perf_sort:sort dropout moe_sum cos sin neg rsqrt erf floor eq gt minimum maximum logsumexp
std vector_norm cat stack repeat arange full zeros ones addcmul lerp_tensor:lerp tile flip triu
rand randn pad sqrt log reciprocal elu softplus logical_and bitwise_and exp2 ceil
per_token_group_quant_fp8 dequantize fake_quantize_per_channel_affine ge le lt ne isnan isinf
isfinite sign trunc round hardswish hardsigmoid leaky_relu mish selu celu log1p expm1 sinh cosh
tan atan asin acos log2 log10 square remainder true_divide nan_to_num clamp_min clamp_max
threshold hardtanh_ gelu_and_mul silu_and_mul glu avg_pool2d max_pool2d_with_indices:max_pool2d
upsample_bicubic2d_aa_backward linalg_lu_factor upsample_nearest_exact1d conv2d_padding mv outer
bmm addmm linear baddbmm mm weight_norm_interface conv1d conv2d"}
INJECT=${INJECT:-"avg_pool2d conv2d_padding upsample_bicubic2d_aa_backward linalg_lu_factor upsample_nearest_exact1d"}
# back-off: an op whose class hard-codes 4-D shapes, given a 2-D entry
MISFIT=${MISFIT:-"avg_pool2d AvgPool2dBenchmark"}

screen_part() {   # (a): OPS dealt round-robin to PARTS batches per side (one worker each)
  local all h i
  read -r -a all <<< "$(echo $OPS)"
  for ((h = 1; h <= PARTS; h++)); do
    : > "$WORK/ops_h$h.txt"
    for ((i = h - 1; i < ${#all[@]}; i += PARTS)); do echo "${all[$i]}" >> "$WORK/ops_h$h.txt"; done
    local list
    list=$(paste -sd, "$WORK/ops_h$h.txt")
    timeout -k 30 "$LIMIT" $ZLH batch --ops "$list" --shapes shapes/single.yaml $BATCH \
      --out "$WORK/single/h$h" > "$WORK/single_h$h.txt" 2> "$WORK/single_h$h.err" &
    timeout -k 30 "$LIMIT" $ZLH batch --ops "$list" $BATCH \
      --out "$WORK/core/h$h" > "$WORK/core_h$h.txt" 2> "$WORK/core_h$h.err" &
  done
  wait
}

inject_part() {   # (b)
  local misfit=($MISFIT)
  printf '%s:\n  shapes: [[64, 64]]\n' "${misfit[1]}" > "$WORK/misfit.yaml"
  # shellcheck disable=SC2086  # op lists are space-separated
  timeout -k 30 170 $ZLH bench $INJECT --shapes shapes/single.yaml $BUDGET -q --out "$WORK/inject" \
    > "$WORK/inject.txt" 2> "$WORK/inject.err"
  echo "inject rc=$?"
  timeout -k 20 50 $ZLH bench "${misfit[0]}" --shapes "$WORK/misfit.yaml" $BUDGET -q \
    --out "$WORK/misfit" \
    > "$WORK/misfit.txt" 2> "$WORK/misfit.err"
  echo "misfit rc=$?"
}

vllm_part() {     # (c)
  local s=$SECONDS rest g
  if [ ! -d "${FLAGGEMS_VLLM_DIR:-.fgv}/benchmark" ]; then
    echo "FlagGems-vllm is not staged (.fgv or FLAGGEMS_VLLM_DIR): part c not run"
    return 0
  fi
  env -u FLAGGEMS_DIR timeout -k 20 100 $ZLH ops --adapter flaggems --vllm "$FLAGGEMS_VLLM_DIR" \
    --csv --verify-collect > "$WORK/vllm_inventory.csv" 2> "$WORK/vllm_inventory.err"
  echo "vllm verify-collect rc=$? wall=$((SECONDS - s))s"
  $SUMMARY pick "$WORK/vllm_inventory.csv" 36 > "$WORK/vllm_ops.txt"
  echo "vllm ops picked (collect=ok first): $(wc -l < "$WORK/vllm_ops.txt"): $(tr '\n' ' ' < "$WORK/vllm_ops.txt")"
  rest=$((LIMIT - (SECONDS - s)))
  [ "$rest" -lt 90 ] && rest=90
  for g in 0 1 2; do
    sed -n "$((g * 12 + 1)),$((g * 12 + 12))p" "$WORK/vllm_ops.txt" > "$WORK/vllm_ops_g$g.txt"
    [ -s "$WORK/vllm_ops_g$g.txt" ] || continue
    timeout -k 30 "$rest" $ZLH batch --ops "$(paste -sd, "$WORK/vllm_ops_g$g.txt")" \
      --vllm "$FLAGGEMS_VLLM_DIR" $BATCH --out "$WORK/vllm/g$g" \
      > "$WORK/vllm_g$g.txt" 2> "$WORK/vllm_g$g.err" &
  done
  wait
}

{
start=$SECONDS
[[ $ASSETS_PARTS == *a* ]] && screen_part &
[[ $ASSETS_PARTS == *b* ]] && inject_part > "$WORK/inject_part.txt" 2>&1 &
[[ $ASSETS_PARTS == *c* ]] && vllm_part > "$WORK/vllm_part.txt" 2>&1 &
wait
echo "all parts done: wall=$((SECONDS - start))s"
echo "== (a) shapes/single.yaml vs core_shapes.yaml (same ops, same load, ${LIMIT}s per process)"
# shellcheck disable=SC2086
$SUMMARY sets "$WORK/single" "$WORK/core" $OPS > "$WORK/assets_sets.txt" 2>&1
cat "$WORK/assets_sets.txt"
echo "== (b) injected classes"
cat "$WORK/inject_part.txt" 2>/dev/null
$SUMMARY inject "$WORK/inject" "$WORK/misfit" > "$WORK/assets_inject.txt" 2>&1
cut -c1-220 "$WORK/assets_inject.txt" | head -60
echo "== (c) FlagGems-vllm"
cat "$WORK/vllm_part.txt" 2>/dev/null
$SUMMARY rows "$WORK/vllm" > "$WORK/assets_vllm.txt" 2>&1
tail -2 "$WORK/assets_vllm.txt"
echo "total wall=$((SECONDS - start))s"
} 2>&1 | tee "$WORK/summary.txt"
cp "$WORK"/summary.txt "$WORK"/assets_*.txt "$WORK/vllm_inventory.csv" "$OUT/" 2>/dev/null
tar czf "$OUT/assets.tgz" --exclude='.cache-*' --exclude='ttgir' -C "$(dirname "$WORK")" \
  "$(basename "$WORK")"
