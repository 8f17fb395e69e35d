#!/usr/bin/env bash
# Corpus engine on a GPU machine with real FlagGems (source .fg/env.sh first).
#   bash tests/device/check_corpus.sh engine   # batch on 2 devices vs 1, screen, partition for 8,
#                                              # an illegal address mid-batch, a parallel sweep
#   bash tests/device/check_corpus.sh rounds   # campaign on 2 cards vs the same plan on 1
#   bash tests/device/check_corpus.sh all      # `zlh batch --all` at core on DEVICES (default 0);
#                                              # a second call on the same machine resumes it
#   bash tests/device/check_corpus.sh allsingle # the ops `all` finished, with shapes/single.yaml:
#                                              # per-op wall and rows against the core shapes
#   bash tests/device/check_corpus.sh reuse    # 30 ops with reused workers vs --fresh-process
#                                              # replaying their records: ops/min, overhead per
#                                              # op, per-shape |delta| with the configs pinned
#                                              # (a second call on the same machine resumes both)
#   bash tests/device/check_corpus.sh sweep    # two GPUs: parallel autotune sweep vs serial for
#                                              # SWEEP_OPS (mm: LibTuner; layer_norm: @triton.autotune):
#                                              # wall, conflicts, A/A of the two measurements
#   bash tests/device/check_corpus.sh screen60 # one GPU: the whole 60-op screen (resumable), partition
#                                              # for 8 devices; rounds3: zlh ab --rounds 3 on its
#                                              # ir_changed.txt (SCREEN=folder holding it)
#   bash tests/device/check_corpus.sh holdmem  # fault_hold_memory and fault_global_state mid-batch:
#                                              # the worker is replaced after each
#   bash tests/device/check_corpus.sh fallbacks # ops aborting under graph capture measured with
#                                              # event timing; mixin-run benchmarks UNSUPPORTED
#   bash tests/device/check_corpus.sh screen1  # one GPU: screen of the 60 ops, rescore, partition
#                                              # for 8 devices, and a switch acting after TTGIR
#                                              # (TRITON_DEFAULT_FP_FUSION) at --ir-stage ttgir vs ptx
# Each mode stays within ~9.5 minutes (steps are time-boxed; a boxed batch keeps what it did).
# The summary is written to $OUT as it goes; `engine` also leaves $OUT/screen/screen.{json,tsv}
# for `rounds` (SCREEN=<that folder>).
set -uo pipefail
WORK=${WORK:-/tmp/zlh-corpus}
mode=${1:?engine | rounds}
source "$(dirname "$0")/common.sh"
OPS=tests/device/ops60.txt
# SHAPES=shapes/single.yaml (one shape per op) makes every step several times cheaper; the boxes
# (seconds) can be set from the environment: BOX_B2 BOX_B1 BOX_SCREEN BOX_C2 BOX_C1.
FASTB="--level core --dtypes bfloat16 --isolate-tuner-cache --warmup-ms 10 --min-samples 5 --min-time-ms 5 --max-time-ms 50${SHAPES:+ --shapes $SHAPES}"
SUM="python3 tests/device/corpus_summary.py"
step() {  # step LABEL SECONDS CMD...
  local label=$1 limit=$2; shift 2; local s=$SECONDS
  timeout "$limit" "$@" > "$WORK/$label.log" 2>&1
  echo "== $label rc=$? wall=$((SECONDS-s))s"
}
{
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
if [ "$mode" = engine ]; then
  step batch2 ${BOX_B2:-150} $ZLH batch --ops-file $OPS --devices 0,1 $FASTB --op-timeout 90 --retries 0 -q --out "$WORK/b2"
  $SUM batch "$WORK/b2"
  step batch1 ${BOX_B1:-170} $ZLH batch --ops-file $OPS --devices 0 $FASTB --op-timeout 90 --retries 0 -q --out "$WORK/b1"
  $SUM batch "$WORK/b1" "$WORK/b2"
  step screen ${BOX_SCREEN:-160} $ZLH screen --ops-file $OPS --switch TRITON_F32_DEFAULT=ieee,tf32x3 --devices 0,1 \
    $FASTB --op-timeout 90 --retries 0 --root "$WORK/s"
  $SUM screen "$WORK/s"; tail -n 25 "$WORK/screen.log"
  $ZLH partition "$WORK/s/screen.tsv" --devices 0,1,2,3,4,5,6,7 --verdict IR_CHANGED \
    --verdict NO_IR_DIFF --verdict NO_TRITON --verdict NO_ROWS | tail -n 12
  $ZLH screen --rescore "$WORK/s" --scrub ', inputPrecision = [a-z0-9]+' | tail -n 15
  mkdir -p "$OUT/screen"; cp "$WORK/s/screen.json" "$WORK/s/screen.tsv" "$OUT/screen/"
  cp "$WORK/s/screen.tsv.before-rescore" "$OUT/screen/" 2>/dev/null
  step illegal 45 $ZLH batch --adapter builtin --ops add,fault_illegal_address,softmax \
    --dtypes float16 --warmup-ms 10 --min-samples 5 --max-time-ms 50 --op-timeout 40 --retries 0 -q --out "$WORK/ill"
  $SUM batch "$WORK/ill"
  step sweep 60 $ZLH bench mm $FASTB --parallel-sweep 2 --sweep-devices 0,1 -q --out "$WORK/sw"
  grep -E "parallel sweep|WARNING" "$WORK/sweep.log"
elif [ "$mode" = all ]; then
  R=$WORK/all
  # ROOT_TGZ: a batch root an earlier machine packed (KEEP_ROOT=1), to resume it on this one
  # (its parts, all_root.tgz.aa, .ab, ...: ROOT_TGZ names the prefix)
  [[ -n "${ROOT_TGZ:-}" && ! -f "$R/batch.json" ]] && cat "$ROOT_TGZ".?? | tar xzf - -C "$WORK"
  if [ -f "$R/batch.json" ]; then
    step all ${BOX_ALL:-540} $ZLH batch --resume "$R" -q
  else
    step all ${BOX_ALL:-540} $ZLH batch --all --devices ${DEVICES:-0} $FASTB --op-timeout ${OP_TIMEOUT:-120} --retries 1 -q \
      --dismiss ${DISMISS:-tests/device/dismiss_slow.txt} --out "$R"
  fi
  $SUM batch "$R"
  cp "$R/ops_status.csv" "$OUT/all_ops_status.csv"
  # KEEP_ROOT=1: the batch root too, to carry into a later call, in parts of 15 MiB (a file
  # brought back from the device may have 16 MiB)
  [ "${KEEP_ROOT:-0}" = 1 ] && tar czf - -C "$WORK" all | split -b 15m - "$OUT/all_root.tgz."
elif [ "$mode" = allsingle ]; then
  # The ops the --all batch finished (core shapes), again with shapes/single.yaml and the same
  # options, alone on the GPU: per-op wall and rows, one shape set against the other.
  R=$WORK/all
  python3 -c "import csv,sys; [print(r['op']) for r in csv.DictReader(open(sys.argv[1])) if r['status'] in ('PASS','FAIL','SKIP')]" \
    "$R/ops_status.csv" > "$WORK/all_done.txt"
  step allsingle ${BOX_AS:-540} $ZLH batch --ops-file "$WORK/all_done.txt" --devices 0 $FASTB --shapes shapes/single.yaml \
    --op-timeout 120 --retries 0 -q --out "$WORK/allsingle"
  $SUM batch "$WORK/allsingle"
  python3 tests/device/assets_summary.py sets "$WORK/allsingle" "$R" $(cat "$WORK/all_done.txt") | tail -n 4
  python3 tests/device/assets_summary.py sets "$WORK/allsingle" "$R" $(cat "$WORK/all_done.txt") > "$OUT/allsingle_sets.txt"
elif [ "$mode" = reuse ]; then
  # Pointwise ops first (no autotuner: both batches run the same configs), then reductions.
  grep -v '^#' $OPS | grep -E -x -f <(printf '%s\n' gelu softmax log_softmax layer_norm rms_norm sum mean max \
    min argmax amax prod cumsum exp sin cos relu silu sigmoid tanh mul sub div abs neg rsqrt erf clamp \
    isnan logical_and eq minimum) | head -n ${REUSE_OPS:-30} > "$WORK/ops30.txt"
  # A second call on the same machine resumes both batches where their boxes ended them.
  if [ -f "$WORK/reused/batch.json" ]; then
    step reused ${BOX_REUSED:-150} $ZLH batch --resume "$WORK/reused" -q
  else
    step reused ${BOX_REUSED:-150} $ZLH batch --ops-file "$WORK/ops30.txt" --devices 0 $FASTB --op-timeout 90 --retries 0 -q --out "$WORK/reused"
  fi
  # The fresh processes replay the reused batch's records: both measure the same configs, so
  # the per-shape comparison is an A/A of the two ways to run an op (ops the reused box did not
  # finish are SKIP no_record there, at no cost, and run on resume once it has them).
  if [ -f "$WORK/fresh/batch.json" ]; then
    step fresh ${BOX_FRESH:-420} $ZLH batch --resume "$WORK/fresh" -q
  else
    step fresh ${BOX_FRESH:-420} $ZLH batch --ops-file "$WORK/ops30.txt" --devices 0 $FASTB --op-timeout 90 --retries 0 -q --fresh-process \
      --replay "$WORK/reused" --out "$WORK/fresh"
  fi
  $SUM batch "$WORK/reused"
  $SUM batch "$WORK/fresh" "$WORK/reused"
elif [ "$mode" = sweep ]; then
  for op in ${SWEEP_OPS:-mm layer_norm}; do
    step par_$op ${BOX_SWEEP:-200} $ZLH bench $op $FASTB --parallel-sweep 2 --sweep-devices 0,1 -q --out "$WORK/sw/$op-par"
    grep -E "parallel sweep|WARNING" "$WORK/par_$op.log"
    step ser_$op ${BOX_SWEEP:-200} $ZLH bench $op $FASTB -q --out "$WORK/sw/$op-ser"
    par=$(ls -d "$WORK/sw/$op-par"/${op}_* 2>/dev/null | head -n 1)
    ser=$(ls -d "$WORK/sw/$op-ser"/${op}_* 2>/dev/null | head -n 1)
    if [[ -n "$par" && -n "$ser" ]]; then   # same op measured with the merged record vs the serial one
      $ZLH ab "$par" "$ser" --allow-caliber-mismatch --root "$WORK/sw/$op-ab" 2>&1 | tail -n 20
    fi
  done
elif [ "$mode" = screen60 ]; then
  # The whole 60-op screen on one GPU, resumable: a second call on the same machine continues it.
  R=${SCREEN_ROOT:-$WORK/s60}
  if [ -f "$R/screen.json" ]; then
    step screen60 ${BOX_SCREEN:-540} $ZLH screen --resume "$R"
  else
    step screen60 ${BOX_SCREEN:-540} $ZLH screen --ops-file ${SCREEN_OPS:-$OPS} --switch TRITON_F32_DEFAULT=ieee,tf32x3 --devices 0 \
      $FASTB --op-timeout ${OP_TIMEOUT:-60} --retries 0 --root "$R"
  fi
  $SUM screen "$R"; tail -n 30 "$WORK/screen60.log"
  $ZLH partition "$R/screen.tsv" --devices 0,1,2,3,4,5,6,7 --verdict IR_CHANGED \
    --verdict NO_IR_DIFF --verdict NO_TRITON --verdict NO_ROWS | tail -n 14
  mkdir -p "$OUT/screen"; cp "$R/screen.json" "$R/screen.tsv" "$R/ir_changed.txt" "$OUT/screen/" 2>/dev/null
elif [ "$mode" = rounds3 ]; then
  # zlh ab --rounds 3 on a screen's IR_CHANGED list (SCREEN: the folder holding ir_changed.txt).
  S=${SCREEN:-$WORK/s60}
  step rounds3 ${BOX_R3:-300} $ZLH ab --ops-file "${R3_OPS:-$S/ir_changed.txt}" --switch TRITON_F32_DEFAULT=ieee,tf32x3 \
    $FASTB --rounds 3 --timeout 150 --root "$WORK/r3"
  tail -n 60 "$WORK/rounds3.log"
  mkdir -p "$OUT/r3"; cp "$WORK/r3/status.tsv" "$OUT/r3/" 2>/dev/null; cp "$WORK/r3"/report.* "$OUT/r3/" 2>/dev/null
elif [ "$mode" = holdmem ]; then
  # A reused worker left holding device memory is replaced before the next op.
  step holdmem 60 $ZLH batch --adapter builtin --ops add,fault_hold_memory,softmax,fault_global_state,mm --dtypes float16 \
    --warmup-ms 10 --min-samples 5 --max-time-ms 50 --op-timeout 40 --retries 0 -q --out "$WORK/hold"
  $SUM batch "$WORK/hold"; cut -d, -f2,5,10 "$WORK/hold/ops_status.csv"
  grep -h "still held" "$WORK"/hold/*/run.attempt*.log
  for op in add fault_hold_memory softmax fault_global_state mm; do   # the worker's pid per op (softmax, mm: new ones)
    echo "$op pid $(grep -ho '"pid": [0-9]*' "$WORK"/hold/$op/${op}_*/run.json | head -n 1)"
  done
elif [ "$mode" = fallbacks ]; then
  # An op that aborts inside a graph capture is measured with event timing (builtin fault op,
  # then FlagGems' cholesky_solve, whose batched MAGMA solver asserts under capture); a
  # benchmark whose run() comes from a mixin (blas_perf_parallel) is UNSUPPORTED at once.
  step capture 90 $ZLH batch --adapter builtin --ops add,fault_abort_in_capture,softmax --dtypes float16 \
    --warmup-ms 10 --min-samples 5 --max-time-ms 50 --op-timeout 40 --retries 1 -q --out "$WORK/capture"
  $SUM batch "$WORK/capture"; cut -d, -f2,5,10 "$WORK/capture/ops_status.csv"
  step magma 240 $ZLH batch --ops cholesky_solve,cholesky_solve_out:cholesky_solve $FASTB --op-timeout 120 --retries 1 -q \
    --out "$WORK/magma"
  $SUM batch "$WORK/magma"; cut -d, -f2,5,6,7,8,9,10 "$WORK/magma/ops_status.csv"
  grep -h '"timer"' "$WORK"/magma/*/*/run.json | sort | uniq -c
  step mixin 120 $ZLH batch --ops perf_mul:blas_perf_parallel,vdot_benchmark:blas_perf_parallel $FASTB \
    --op-timeout 90 --retries 0 -q --out "$WORK/mixin"
  cut -d, -f2,5,7,10 "$WORK/mixin/ops_status.csv"; grep -h "UNSUPPORTED" "$WORK"/mixin/*/*/run.log | head -n 4
elif [ "$mode" = screen1 ]; then
  step screen ${BOX_SCREEN:-330} $ZLH screen --ops-file $OPS --switch TRITON_F32_DEFAULT=ieee,tf32x3 --devices 0 \
    $FASTB --op-timeout 90 --retries 0 --root "$WORK/s"
  $SUM screen "$WORK/s"; tail -n 30 "$WORK/screen.log"
  $ZLH partition "$WORK/s/screen.tsv" --devices 0,1,2,3,4,5,6,7 --verdict IR_CHANGED \
    --verdict NO_IR_DIFF --verdict NO_TRITON --verdict NO_ROWS | tail -n 14
  $ZLH screen --rescore "$WORK/s" --scrub ', inputPrecision = [a-z0-9]+' | tail -n 20
  mkdir -p "$OUT/screen"; cp "$WORK/s/screen.json" "$WORK/s/screen.tsv" "$WORK/s/ir_changed.txt" "$OUT/screen/"
  cp "$WORK/s/screen.tsv.before-rescore" "$OUT/screen/" 2>/dev/null
  # A switch that acts after TTGIR: FMA contraction is an LLVM/PTX option.
  FUSE=${FUSE_OPS:-gelu,layer_norm,rms_norm,sigmoid,mul}
  for stage in ttgir ptx; do
    step fuse_$stage ${BOX_FUSE:-80} $ZLH screen --ops "$FUSE" --switch TRITON_DEFAULT_FP_FUSION=1,0 --devices 0 \
      $FASTB --op-timeout 60 --retries 0 --ir-stage $stage --root "$WORK/fuse_$stage"
    echo "--- --ir-stage $stage"; cut -f1,8-11,14-16 "$WORK/fuse_$stage/screen.tsv"
  done
  cp "$WORK/fuse_ttgir/screen.tsv" "$OUT/screen/fuse_ttgir.tsv"; cp "$WORK/fuse_ptx/screen.tsv" "$OUT/screen/fuse_ptx.tsv"
else
  S=${SCREEN:-device-in/screen}
  ONLY=${ONLY:-mm,addmm,bmm,baddbmm,linear,mv}
  step campaign2 ${BOX_C2:-200} $ZLH campaign --screen "$S" --only "$ONLY" --devices 0,1 --rounds 2 --timeout 150 --root "$WORK/c2"
  tail -n 8 "$WORK/campaign2.log"
  step campaign1 ${BOX_C1:-370} $ZLH campaign --screen "$S" --only "$ONLY" --devices 0 --rounds 2 --timeout 150 --root "$WORK/c1"
  tail -n 4 "$WORK/campaign1.log"
  python3 tests/device/campaign_agreement.py "$WORK/c2" "$WORK/c1"
fi
} 2>&1 | tee "$OUT/corpus_$mode.txt"
