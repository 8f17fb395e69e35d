#!/usr/bin/env bash
# zlh ab on a CUDA machine (source .fg/env.sh first for FlagGems ops).
#   bash tests/device/check_ab.sh aa softmax add      # A/A: same build both sides, $ROUNDS (3) rounds
#   bash tests/device/check_ab.sh slow                # builtin ZLH_BUILTIN_SLOW=0,1: sign check
# Work in $WORK/<mode>; summary (ab_<mode>.txt) and a tarball land in $OUT.
set -uo pipefail
WORK=${WORK:-/tmp/zlh-ab}
mode=${1:?aa OPS... | slow}; shift
source "$(dirname "$0")/common.sh"
{
s=$SECONDS
if [ "$mode" = aa ]; then
  $ZLH ab "$@" --env-a ZLH_SIDE=A --env-b ZLH_SIDE=B --rounds "${ROUNDS:-3}" --allow-no-ir-diff \
    --level core --dtypes bfloat16 --isolate-tuner-cache --timeout 500 --root "$WORK/aa" \
    > "$WORK/aa.log" 2>&1
  echo "A/A rc=$? wall=$((SECONDS-s))s"; python3 tests/device/ab_summary.py "$WORK/aa"
else
  $ZLH ab add softmax mm --adapter builtin --switch ZLH_BUILTIN_SLOW=0,1 \
    --timeout 300 --root "$WORK/slow" > "$WORK/slow.log" 2>&1
  echo "slow switch rc=$? wall=$((SECONDS-s))s"; python3 tests/device/ab_summary.py "$WORK/slow"
fi
} 2>&1 | tee "$WORK/summary_$mode.txt"
cp "$WORK/summary_$mode.txt" "$OUT/ab_$mode.txt"
tar czf "$OUT/ab_$mode.tgz" --exclude='.cache-*' --exclude='*.ttgir' -C "$WORK" "$mode" "$mode.log"
