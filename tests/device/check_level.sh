#!/usr/bin/env bash
# Level placements (harness/run/level.py) on a device, in one call:
#   source .fg/env.sh && bash tests/device/check_level.sh [BOX_S]
# 1. one record of PROBE_OPS at the twins budget with --level-placements 128: each case's
#    probe spread and level placements, and what the probe costs (tests/device/level_probe.py);
# 2. the ten-op acceptance's rounds of layer_norm (`rounds_acceptance.sh rest2 plant+aa`,
#    `--round-budget auto`, which now gives twins ops --level-placements 128), in what is left
#    of BOX_S (default 560).
set -u
WORK=${WORK:-$(mktemp -d)}
source tests/device/common.sh
BOX=${1:-560}
S=$SECONDS
PROBE_OPS=${PROBE_OPS:-"softmax fused_add_rms_norm sum cumsum gelu add layer_norm mm"}
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv,noheader
timeout ${PROBE_S:-170} $ZLH bench $PROBE_OPS --dtypes bfloat16 --level core \
  --isolate-tuner-cache --level-placements 128 --warmup-ms 20 --min-time-ms 40 \
  --max-time-ms 80 --out "$WORK/probe" > "$WORK/probe.txt" 2>&1
echo "probe rc=$? wall=$((SECONDS-S)) s"
python3 tests/device/level_probe.py "$WORK/probe" | tee "$OUT/level_probe.txt"
LEFT=$((BOX-(SECONDS-S)))
ONLY=layer_norm bash tests/device/rounds_acceptance.sh rest2 ${MODES:-plant+aa} "$LEFT"
