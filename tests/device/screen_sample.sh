#!/usr/bin/env bash
# The corpus-throughput benchmark on a GPU with real FlagGems (source .fg/env.sh first): a
# screen of the fixed stratified sample tests/device/sample162.txt (every family) under a real
# compiler switch, at the corpus budgets, resumed across calls:
#   NAME=before BOX=1000 bash tests/device/screen_sample.sh          # first call
#   NAME=before BOX=1000 IN=device-in/before.tar.xz bash tests/device/screen_sample.sh   # resume
#   (IN: the parts NAME.tar.xz.aa, .ab, … a call brought back, or an older NAME.tgz)
# EXTRA adds screen options to a new root (e.g. "--timing changed", or "--overlap": two pairs at
# once per device and warm spare workers); RESUME_EXTRA to a resume (a resumed root keeps its
# plan, so only what --resume takes: e.g. "--overlap" switches overlap for the rest of it);
# OPS picks another list (OPS=all: the whole corpus, zlh screen --all; SKIP="FILE …" with it
# leaves out the ops those files list besides the curated dismiss list, e.g.
# "tests/device/all_part1.txt tests/device/all_part2.txt": ops earlier roots screened); WORK the scratch folder. The screen is killed after BOX seconds (resumable: finished ops are kept);
# the root (without compiled artefacts) comes back as $OUT/NAME.tar.xz.aa, .ab, …, the summary (verdicts,
# op time and wall per op pair — overlapped ops counted once —, where it went: worker start,
# imports, inputs, compile, sweep, measure, lock wait; the corpus projection) as $OUT/NAME.txt.
set -uo pipefail
WORK=${WORK:-/tmp/zlh-sample}
source "$(dirname "$0")/common.sh"
NAME=${NAME:-sample}
OPS=${OPS:-tests/device/sample162.txt}
SWITCH=${SWITCH:-TRITON_F32_DEFAULT=ieee,tf32x3}
BUDGET="--level core --dtypes bfloat16 --warmup-ms 10 --min-samples 5 --min-time-ms 5 --max-time-ms 50 --op-timeout 90 --retries 0"
{
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
root="$WORK/$NAME"
if [ -n "${IN:-}" ] && [ ! -d "$root" ]; then      # a .tgz, or the parts NAME.tar.xz.aa, .ab, …
  mkdir -p "$WORK"
  if [ -f "$IN" ]; then tar xzf "$IN" -C "$WORK" && echo "resuming $root from $IN"
  elif [ -f "$IN.aa" ]; then cat "$IN".?? | xz_unpack | tar xf - -C "$WORK" && echo "resuming $root from $IN.*"
  fi
fi
s=$SECONDS
if [ -f "$root/screen.json" ]; then
  timeout "${BOX:-540}" $ZLH screen --resume "$root" --allow-env-change ${RESUME_EXTRA:-} > "$WORK/$NAME.log" 2>&1
else
  if [ "$OPS" = all ]; then select="--all"; else select="--ops-file $OPS"; fi
  if [ "$OPS" = all ] && [ -n "${SKIP:-}" ]; then        # the curated list and SKIP's ops
    # shellcheck disable=SC2086   # (SKIP: one or more files)
    { cat harness/corpus/dismiss.txt; grep -hv '^#' $SKIP | sed 's/$/  # screened in an earlier root/'; } > "$WORK/dismiss.txt"
    select="--all --dismiss $WORK/dismiss.txt"
  fi
  timeout "${BOX:-540}" $ZLH screen $select --switch "$SWITCH" --devices 0 $BUDGET \
    ${EXTRA:-} --root "$root" > "$WORK/$NAME.log" 2>&1
fi
echo "== screen rc=$? wall=$((SECONDS-s))s"
tail -n 5 "$WORK/$NAME.log" | cut -c1-300
python3 tests/device/corpus_summary.py screen "$root"
# The root without compiled artefacts (the .ttgir files stay: a resume re-decides verdicts from
# them), xz-compressed in parts of 15 MiB (a file back from the device may have 16 MiB):
# $OUT/NAME.tar.xz.aa, .ab, …; IN=<folder>/NAME.tar.xz resumes from them.
(cd "$WORK" && tar cf - --exclude='.cache-*' --exclude='.compile-cache-*' --exclude='*.ptx' --exclude='*.llir' \
  --exclude='*.cubin' --exclude='*.json.gz' "$NAME" | xz_pack | split -b 15m - "$OUT/$NAME.tar.xz.")
ls -la "$OUT/$NAME".tar.xz.*
} 2>&1 | tee "$OUT/$NAME.txt"
