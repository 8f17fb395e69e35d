#!/usr/bin/env bash
# A pre-registered product campaign on real FlagGems (source .fg/env.sh first):
#   bash tests/device/check_product_campaign.sh
# Eight workloads in $DTYPE (default bfloat16; mm, addmm, bmm, softmax, add, layer_norm, gelu,
# rms_norm), canaries softmax, add, mm (see product_manifest.py for why not float32); cells TRITON_F32_DEFAULT=ieee (baseline) and tf32x3 (candidate), code
# change by fingerprint. prepare canary -> run -> prepare all (with the canary receipt) -> run,
# then re-account the sealed run at floors 0 and 1. Prints status.csv and the campaign
# receipt of each run; receipts, plans and logs land in $OUT/product_campaign/.
# About 8 minutes on one H200 (each cell is a fresh process: ~11 s of it is import flag_gems).
# RESUME=1 continues a call that its time box ended (same machine, same WORK): the manifest
# and frozen plans already there are kept and each run goes on with `product run --resume`.
set -uo pipefail
WORK=${WORK:-/tmp/zlh-product}
source "$(dirname "$0")/common.sh"
: "${FLAGGEMS_DIR:?source .fg/env.sh first (FLAGGEMS_DIR)}"
if [[ "${RESUME:-0}" == 1 && -f "$WORK/manifest.json" ]]; then
  echo "resuming in $WORK"
else
  RESUME=0
  rm -rf "$WORK" && mkdir -p "$WORK"
fi
DEST="$OUT/product_campaign"
mkdir -p "$DEST"
STAMPED=""
if [[ ! -e .git && ! -f COMMIT ]]; then     # a copied tree: zlh's identity from its sources
  if [[ -n "${ZLH_COMMIT:-}" ]]; then
    echo "$ZLH_COMMIT" > COMMIT
  else
    python3 -c 'import hashlib; from harness.product.receipts import zlh_files
print(hashlib.sha1(zlh_files()["tree_sha256"].encode()).hexdigest())' > COMMIT
  fi
  STAMPED=1
  echo "zlh tree is not a git checkout: COMMIT stamped $(cat COMMIT)"
fi
trap '[[ -n "$STAMPED" ]] && rm -f COMMIT' EXIT
T0=$SECONDS
step() { echo "== $1 (t=$((SECONDS-T0))s)"; }

step "manifest"
if [[ $RESUME == 1 ]]; then MANIFEST=$WORK/manifest.json
else MANIFEST=$(python3 tests/device/product_manifest.py "$WORK") || exit 1; fi
$ZLH product prepare "$MANIFEST" --selection all --dry-run | tail -12
CID=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["campaign_id"])' "$MANIFEST")

for selection in canary all; do
  FROZEN="$WORK/frozen/$CID--$selection"
  resume=()
  if [[ -d "$FROZEN" ]]; then
    resume=(--resume)
  else
    step "prepare $selection"
    extra=()
    [[ $selection == all ]] && extra=(--canary-receipt "$WORK/frozen/$CID--canary/run/campaign-receipt.json")
    $ZLH product prepare "$MANIFEST" --selection "$selection" --out "$WORK/frozen" "${extra[@]}" \
      || { echo "prepare $selection failed"; break; }
  fi
  step "run $selection ${resume[*]}"
  $ZLH product run "$FROZEN" "${resume[@]}" 2>&1 | tee -a "$WORK/run_$selection.txt"
  rc=${PIPESTATUS[0]}
  echo "run $selection rc=$rc wall=$((SECONDS-T0))s"
  [[ -f "$FROZEN/run/campaign-receipt.json" ]] || { echo "stopping: no campaign receipt"; break; }
  echo "--- status.csv ($selection)"
  cat "$FROZEN/run/status.csv"
  echo "--- campaign-receipt.json ($selection; zlh file hashes folded)"
  python3 - "$FROZEN/run/campaign-receipt.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
files = doc["produced_by"]["zlh"].pop("files")
doc["produced_by"]["zlh"]["files"] = f"{len(files)} files"
print(json.dumps(doc, indent=1, sort_keys=True))
PY
  [[ $rc -eq 0 ]] || { echo "stopping: run $selection exited $rc"; break; }
done

ROOT="$WORK/frozen/$CID--all/run"
if [[ -f "$ROOT/campaign-receipt.json" ]]; then
  for floor in 0 1; do
    step "reaccount floor $floor"
    $ZLH product reaccount "$ROOT" --out "$WORK/reaccount$floor" --measured-launch-floor "$floor"
    cat "$WORK/reaccount$floor/reaccount-matrix.csv"
  done
  echo "--- per task: class, round deltas, convert counts, fingerprints"
  python3 - "$ROOT" <<'PY'
import json, pathlib, sys
root = pathlib.Path(sys.argv[1])
for path in sorted(root.glob("tasks/*/task-receipt.json")):
    t = json.load(open(path))
    a = t["cells"]["a"]
    r = {k: (v or {}).get("delta_median_pct") for k, v in t["rounds"].items()}
    print(f'{t["task_id"]:<11} {t["class"]} {t["rule"]:<26} rounds {r} '
          f'cvt {[c["convert_count"] for c in a.values()]} '
          f'fp {[(c["fingerprint"] or "-")[:10] for c in a.values()]}')
PY
fi
step "copy receipts to $DEST"
( cd "$WORK" && find . \( -name "*receipt*.json" -o -name "status.csv" -o -name "*.txt" \
    -o -name "task-matrix.json" -o -name "budget.json" -o -name "manifest.json" \
    -o -name "reaccount-matrix.csv" -o -name "cell.log" \) -print0 \
  | xargs -0 cp --parents -t "$DEST" )
echo "total wall $((SECONDS-T0))s"
