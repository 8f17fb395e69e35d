#!/usr/bin/env bash
# Several GPUs of one host against one (real FlagGems; source .fg/env.sh first), one mode per
# device call, each within ~9.5 minutes (steps boxed; a boxed batch or screen keeps what it did):
#   bash tests/device/check_scaling.sh batch     # the ops on 1 device, on N local lanes, on N
#                                                # GPUs through Ray (both replaying the 1-device
#                                                # batch's records): walls, wall ratio, statuses,
#                                                # per-shape |delta| against the 1-device run
#   bash tests/device/check_scaling.sh screen    # the screen on 1 device and on N: verdicts, walls
#   bash tests/device/check_scaling.sh campaign  # the N-device screen's IR_CHANGED ops, --rounds 3,
#                                                # on N cards and on 1: planned vs measured wall per
#                                                # card, imbalance, verdicts of the merged reports
#   bash tests/device/check_scaling.sh sweep     # zlh bench mm --parallel-sweep N against a serial
#                                                # sweep: walls, conflicts, latencies (zlh ab)
# N: every GPU nvidia-smi lists (or DEVICES=0,1,…); OPS: the list (tests/device/ops60.txt).
# Needs .whl/ with Ray (tests/device/pack_ray.sh) for `batch`. The modes of one machine share
# WORK: `campaign` takes the screen `screen` left. Boxes: BOX (each step, default 170 s;
# BOX_ONE for the one-device steps, default 2 x BOX). Summary: $OUT/scaling_<mode>.txt.
set -uo pipefail
WORK=${WORK:-/tmp/zlh-scaling}
mode=${1:?batch | screen | campaign | sweep}
source "$(dirname "$0")/common.sh"
OPS=${OPS:-tests/device/ops60.txt}
DEVICES=${DEVICES:-$(nvidia-smi --query-gpu=index --format=csv,noheader | paste -sd, -)}
N=$(echo "$DEVICES" | tr ',' '\n' | grep -c .)
BOX=${BOX:-170}; BOX_ONE=${BOX_ONE:-$((2 * BOX))}
FASTB="--level core --dtypes bfloat16 --isolate-tuner-cache --warmup-ms 10 --min-samples 5 --min-time-ms 5 --max-time-ms 50"
COMMON="--ops-file $OPS $FASTB --op-timeout 90 --retries 0"
SWITCH="--switch TRITON_F32_DEFAULT=ieee,tf32x3"
SUM="python3 tests/device/corpus_summary.py"
ratio() { python3 -c "import sys; a, b, n = map(float, sys.argv[1:]); print(f'wall ratio {a:.0f} s / {b:.0f} s = {a / b:.2f} on {n:.0f} devices (target >= {0.9 * n:.1f})' if b else 'no wall')" "$@"; }
{
nvidia-smi --query-gpu=index,name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader
echo "devices $DEVICES (N=$N), ops $(grep -cv '^[[:space:]]*\(#\|$\)' "$OPS") from $OPS"
case $mode in
batch)
  step one $BOX_ONE $ZLH batch $COMMON --devices 0 -q --out "$WORK/b1"
  step lanes $BOX $ZLH batch $COMMON --devices "$DEVICES" --replay "$WORK/b1" -q --out "$WORK/bn"
  echo "--- N local lanes against one device"; $SUM batch "$WORK/bn" "$WORK/b1"
  ratio "${WALL[one]}" "${WALL[lanes]}" "$N"
  if ray_up "$N"; then
    step ray $BOX $ZLH batch $COMMON --executor ray --backend cuda --replay "$WORK/b1" -q --out "$WORK/br"
    echo "--- N GPUs through Ray against one device"; $SUM batch "$WORK/br" "$WORK/b1"
    ratio "${WALL[one]}" "${WALL[ray]}" "$N"
    python3 tests/device/ray_summary.py "$WORK/br" "$WORK/bn" "${WALL[ray]}" "${WALL[lanes]}"
    ray_down
  fi ;;
screen)
  step screen_n $BOX $ZLH screen $COMMON $SWITCH --devices "$DEVICES" --root "$WORK/sn"
  step screen_1 $BOX_ONE $ZLH screen $COMMON $SWITCH --devices 0 --root "$WORK/s1"
  $SUM screen "$WORK/sn"; $SUM screens "$WORK/sn" "$WORK/s1"
  ratio "${WALL[screen_1]}" "${WALL[screen_n]}" "$N" ;;
campaign)
  [ -f "$WORK/sn/screen.tsv" ] || { echo "no screen under $WORK/sn: run the screen mode first"; exit 1; }
  step camp_n $BOX $ZLH campaign --screen "$WORK/sn" --devices "$DEVICES" --rounds 3 --root "$WORK/cn"
  step camp_1 $BOX_ONE $ZLH campaign --screen "$WORK/sn" --devices 0 --rounds 3 --root "$WORK/c1"
  for c in cn c1; do echo "--- $c"; tail -n 6 "$WORK/camp_${c#c}.log" 2>/dev/null
    python3 -c "import json, sys; d = json.load(open(sys.argv[1])); [print(f'   card {k}: planned {v.get(\"planned_s\") or 0:.0f} s, measured {v[\"wall_s\"]:.0f} s, ops {len(v[\"ops\"])}') for k, v in d['cards'].items()]" \
      "$WORK/$c/merged.json" 2>/dev/null; done
  python3 - "$WORK/cn/report.json" "$WORK/c1/report.json" <<'PY'
import json, sys
docs = []
for path in sys.argv[1:]:
    try:
        docs.append({o["op"]: sorted((str(r.get("dtype")), str(r.get("shape_detail")),
                                      str(r.get("occurrence")), r.get("direction"))
                                     for r in o.get("rows", []))
                     for o in json.load(open(path))["ops"]})
    except (OSError, ValueError, KeyError):
        docs.append({})
both = sorted(set(docs[0]) & set(docs[1]))
same = [op for op in both if docs[0][op] == docs[1][op]]
print(f"merged reports: every shape's direction (faster/slower/same) equal on {len(same)}/{len(both)} ops: "
      f"{', '.join(op for op in both if op not in same) or 'no difference'}")
PY
  ;;
sweep)
  step par $BOX $ZLH bench mm $FASTB --parallel-sweep "$N" --sweep-devices "$DEVICES" -q --out "$WORK/sw-par"
  grep -E "parallel sweep|WARNING|conflict" "$WORK/par.log"
  step ser $BOX_ONE $ZLH bench mm $FASTB -q --out "$WORK/sw-ser"
  par=$(ls -d "$WORK"/sw-par/mm_* 2>/dev/null | head -n 1); ser=$(ls -d "$WORK"/sw-ser/mm_* 2>/dev/null | head -n 1)
  [[ -n "$par" && -n "$ser" ]] && $ZLH ab "$par" "$ser" --allow-caliber-mismatch --root "$WORK/sw-ab" 2>&1 | tail -n 15
  ratio "${WALL[ser]}" "${WALL[par]}" "$N" ;;
*) echo "check_scaling: mode $mode: not batch, screen, campaign or sweep"; exit 2 ;;
esac
} 2>&1 | tee "$OUT/scaling_$mode.txt"
