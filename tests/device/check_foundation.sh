#!/usr/bin/env bash
# Foundation checks on a CUDA machine. Work happens in $WORK; a tarball of it and a summary
# land in $OUT (default ./device-out).
# Runs: builtin add/softmax/mm with the graph timer twice (A/A) and the event timer twice,
# zlh vs do_bench_cudagraph on the same callables, capture fallback, nvidia-smi fixtures.
set -uo pipefail
WORK=${WORK:-/tmp/zlh-foundation}
source "$(dirname "$0")/common.sh"
{
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw,utilization.gpu \
  --format=csv,noheader,nounits > "$WORK/nvidia-smi-nounits.csv" 2>&1
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw,utilization.gpu \
  --format=csv > "$WORK/nvidia-smi-units.csv" 2>&1
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__, torch.cuda.get_device_name(0))'
for t in graph event; do
  for side in A B; do
    start=$SECONDS
    $ZLH bench add softmax mm --adapter builtin --backend cuda --timer $t --out "$WORK/$t$side" \
      > "$WORK/bench_$t$side.txt" 2>"$WORK/bench_$t$side.err"
    echo "rc=$? timer=$t side=$side wall=$((SECONDS-start))s"
  done
done
for t in graph event; do
  for op in add softmax mm; do
    echo "$t $op: $(python3 tests/device/aa_spread.py "$WORK/${t}A"/${op}_* "$WORK/${t}B"/${op}_* | tail -1)"
  done
done
python3 tests/device/compare_do_bench.py "$WORK"/graphA/* > "$WORK/vs_do_bench_cudagraph.txt" 2>&1
tail -2 "$WORK/vs_do_bench_cudagraph.txt"
python3 tests/device/capture_fallback.py 2>&1
} 2>&1 | tee "$WORK/summary.txt"
cp "$WORK/summary.txt" "$OUT/summary.txt"
tar czf "$OUT/foundation.tgz" -C "$(dirname "$WORK")" "$(basename "$WORK")"
