#!/usr/bin/env bash
# Why the code changed, on real FlagGems (FLAGGEMS_DIR; `source .fg/env.sh` first).
#   bash tests/device/check_kernel_meta.sh
# (a) zlh bench cumsum at [1024, 65536] (float32, float16) with --kernel-split: per kernel
#     time per call and share, and the kernels' times summed beside the op's measured latency
#     (ok within 2 %);
# (b) a screen of mm, addmm, softmax (float32) under TRITON_F32_DEFAULT=ieee,tf32x3: every
#     run's measured rows of ttgir/index.tsv with n_regs, n_spills, shared, num_warps,
#     num_stages, num_ctas, convert_layout, then the verdicts and their notes.
# Boxes BOX_SPLIT (150 s) and BOX_SCREEN (210 s); within 5 minutes. STEPS picks the steps
# (default "split screen"); SCREEN_OPS the screen's ops (with --kernel-split: a multi-kernel op
# such as cumsum then carries its split into the screen's report). Summary in
# $OUT/kmeta.txt, both roots packed as $OUT/kmeta.tgz.
set -uo pipefail
WORK=${WORK:-/tmp/zlh-kmeta}
source "$(dirname "$0")/common.sh"
SUM="python3 tests/device/kernel_meta_summary.py"
step() {  # step LABEL SECONDS CMD...
  local label=$1 limit=$2; shift 2; local s=$SECONDS
  timeout "$limit" "$@" > "$WORK/$label.log" 2>&1
  echo "== $label rc=$? wall=$((SECONDS-s))s"
}
rm -rf "$WORK/split" "$WORK/screen"
cat > "$WORK/cumsum.yaml" <<'EOF'
cumsum:
  shape_desc: "M, N"
  shapes:
    - [1024, 65536]
EOF
{
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
STEPS=${STEPS:-split screen}
if [[ " $STEPS " == *" split "* ]]; then
step split ${BOX_SPLIT:-150} $ZLH bench cumsum --shapes "$WORK/cumsum.yaml" \
  --dtypes float32,float16 --kernel-split --isolate-tuner-cache --out "$WORK/split"
grep -h "kernel split\|cumsum" "$WORK/split.log" | tail -n 12
$SUM split "$WORK"/split/cumsum_*/
echo "split check rc=$?"
fi
if [[ " $STEPS " == *" screen "* ]]; then
step screen ${BOX_SCREEN:-210} $ZLH screen --ops ${SCREEN_OPS:-mm,addmm,softmax} --kernel-split \
  --switch TRITON_F32_DEFAULT=ieee,tf32x3 --devices 0 --level core --dtypes float32 \
  --isolate-tuner-cache --warmup-ms 10 --min-samples 5 --min-time-ms 5 --max-time-ms 50 \
  --op-timeout 150 --retries 0 --root "$WORK/screen"
tail -n 8 "$WORK/screen.log"
$SUM meta "$WORK/screen"
for run in "$WORK"/screen/[AB]/*/*_*/kernel_split.tsv; do [ -f "$run" ] && $SUM split "$(dirname "$run")"; done
fi
} 2>&1 | tee "$WORK/summary.txt"
cp "$WORK/summary.txt" "$OUT/kmeta.txt"
tar czf "$OUT/kmeta.tgz" --exclude='.cache-*' --exclude='*.cubin' -C "$WORK" \
  split screen split.log screen.log cumsum.yaml 2>/dev/null
ls -la "$OUT/kmeta.tgz"
