#!/usr/bin/env bash
# Submits the job-array example of docs/guides/slurm.md, as the page shows it, to the Slurm
# that tests/slurm/start_slurm.sh started, waits for it, and checks the merged root. Not
# part of CI.
#
# The two scripts are cut out of the page (the ```bash blocks whose second line is
# `# file: NAME`), so what runs is what the page says. On this CPU-only node the submission
# overrides what a GPU cluster needs: --gres=none (no GPU), --cpus-per-task=1, and
# --array=1-$SHARDS; the ops are builtin ones on the cpu backend with tiny budgets.
#
# Then it submits the same two commands again with the same root, as the page says to do
# after a task died: every shard resumes (finding nothing to do) and the merge is replaced.
#
#   bash tests/slurm/run_example.sh         # WORK=/tmp/zlh-slurm-example SHARDS=2 TIMEOUT=600
#   VERB=screen bash tests/slurm/run_example.sh     # the screen (ZLH_BUILTIN_SLOW=0,1)
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
PAGE=$REPO/docs/guides/slurm.md
WORK=${WORK:-/tmp/zlh-slurm-example}
SHARDS=${SHARDS:-2}
TIMEOUT=${TIMEOUT:-600}
VERB=${VERB:-batch}
OPS=${OPS:-add,softmax,fault_raise}
SIDES=()
[ "$VERB" = screen ] && SIDES=(--switch ZLH_BUILTIN_SLOW=0,1)
PY=${PYTHON:-/work/venv/bin/python}

rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
awk '/^```bash$/ {inside=1; n=0; next}
     /^```$/ && inside {inside=0; if (buf[2] ~ /^# file: /) {split(buf[2], w, " ");
                         for (i = 1; i <= n; i++) print buf[i] > w[3]; close(w[3])}; next}
     inside {buf[++n]=$0}' "$PAGE"
ls zlh-shards.sbatch zlh-merge.sbatch >/dev/null
printf 'add: [[64]]\nsoftmax: [[4, 64]]\nfault_raise: [[64]]\n' > shapes.yaml

# The jobs run the zlh of this checkout (sbatch exports this environment to them).
export PATH=$(dirname "$PY"):$PATH PYTHONPATH=$REPO${PYTHONPATH:+:$PYTHONPATH}
export ZLH="$PY -m harness"
echo "zlh: $ZLH (PYTHONPATH=$PYTHONPATH)"

ROOT=$WORK/runs/corpus
submit() {      # the page's two sbatch commands, with this node's overrides
    set -x
    array=$(sbatch --parsable --gres=none --cpus-per-task=1 --array=1-"$SHARDS" \
        zlh-shards.sbatch "$VERB" "$ROOT" --adapter builtin --backend cpu --ops "$OPS" \
        "${SIDES[@]}" --shapes "$WORK/shapes.yaml" --warmup-ms 1 --min-samples 3 \
        --min-time-ms 0 --max-time-ms 20 --retries 1)
    merge=$(sbatch --parsable --dependency=afterany:${array%%;*} zlh-merge.sbatch "$ROOT")
    { set +x; } 2>/dev/null
    echo "array job ${array%%;*}, merge job ${merge%%;*}"
    squeue
    deadline=$((SECONDS + TIMEOUT))
    while squeue -h -j "${array%%;*},${merge%%;*}" 2>/dev/null | grep -q .; do
        [ $SECONDS -lt $deadline ] || { echo "jobs still queued after ${TIMEOUT}s" >&2; squeue; exit 1; }
        sleep 3
    done
    for job in "${array%%;*}" "${merge%%;*}"; do
        scontrol show job "$job" | grep -E "JobId=|JobState=" | sed 's/^ */  /'
    done
}
submit
for out in zlh-*.out; do echo "== $out"; cat "$out"; done

TABLE=$ROOT/merged/ops_status.csv
[ "$VERB" = screen ] && TABLE=$ROOT/merged/screen.tsv
echo "== $TABLE"
cat "$TABLE"
check() {
"$PY" - "$ROOT" "$OPS" "$SHARDS" "$VERB" <<'PY'
import csv, json, sys
from pathlib import Path
root, ops, shards, verb = Path(sys.argv[1]), sys.argv[2].split(","), int(sys.argv[3]), sys.argv[4]
merged_root = root / "merged"
plan = json.loads((merged_root / f"{verb}.json").read_text())
merged = (plan["batch"] if verb == "screen" else plan)["merged"]
assert sorted(s["k"] for s in merged["shards"]) == list(range(1, shards + 1)), merged
assert not merged["missing"] and not merged["unfinished"], merged
for side in ("A", "B") if verb == "screen" else ("",):
    rows = list(csv.DictReader(open(merged_root / side / "ops_status.csv")))
    for r in rows:
        assert r["run_dir"] == "-" or (merged_root / side / r["run_dir"] / "run.json").is_file()
    print(f"merged{'/' + side if side else ''}:", {r["op"]: r["status"] for r in rows})
    if side != "B":
        assert [r["op"] for r in rows] == ops, rows
if verb == "screen":
    rows = list(csv.DictReader(open(merged_root / "screen.tsv"), delimiter="\t"))
    assert [r["op"] for r in rows] == ops, rows
    print("verdicts:", {r["op"]: r["verdict"] for r in rows})
for s in merged["shards"]:
    doc = json.loads((Path(s["root"]) / f"{verb}.json").read_text())
    shard = (doc["batch"] if verb == "screen" else doc)
    print(f"shard {shard['shard']['k']}/{shard['shard']['n']}: {[o['op'] for o in shard['ops']]}")
print(f"merged at {merged['at']}")
print("OK: the merged root holds every op of the selection, each from its shard")
PY
}
check

echo "== the same two commands again, the same ROOT"
rm -f zlh-*.out
submit
for out in zlh-*.out; do echo "== $out"; cat "$out"; done
check
