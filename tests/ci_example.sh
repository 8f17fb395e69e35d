#!/usr/bin/env bash
# A CI gate for a compiler or library change, runnable on a CPU as it is (the builtin kernels
# under Triton's interpreter; the builtin slow switch plays the change under test):
#
#   bash tests/ci_example.sh [OUT_DIR]          # default runs/ci_example
#
# 1. A/A — the same build on both sides — must pass the gates (exit 0).
# 2. A planted regression (ZLH_BUILTIN_SLOW=1 on side B) must trip them: zlh ab exits 6.
# Each step keeps its `--json` document; the summary below is read from it with python, as a
# CI job would (jq works as well: jq -r '.fail_on.regressions[]' OUT_DIR/regression.json).
# On a GPU, replace the switch with the change under test (--switch FLAGTREE_X=0,1,
# --python-a/-b, --recipe) and --backend cpu with your backend, and tighten the limits.
#
# The budgets can be made smaller (the test suite does) through the environment:
# CI_EXAMPLE_ROUNDS (3), CI_EXAMPLE_WARMUP_MS (30), CI_EXAMPLE_MIN_SAMPLES (15),
# CI_EXAMPLE_MAX_TIME_MS (400), CI_EXAMPLE_OPS ("mm softmax", any of the two),
# CI_EXAMPLE_ROUND_PROCESS (fresh: a new process per round and side; persistent: one worker
# per side for every round, see docs/concepts/rounds.md), CI_EXAMPLE_SETTLE_MS (persistent
# rounds' idle gap before each round, zlh's default when unset); the gates'
# limit through CI_EXAMPLE_LIMIT_PCT (50, see below). Fewer than 3 rounds is refused: the gates read intervals
# across rounds (Student's t), which two rounds make too wide to catch the regression.
set -euo pipefail
out="${1:-runs/ci_example}"
rounds="${CI_EXAMPLE_ROUNDS:-3}"
if [ "$rounds" -lt 3 ]; then
    echo "ci_example: CI_EXAMPLE_ROUNDS=$rounds; use 3 or more" >&2
    exit 2
fi
process="${CI_EXAMPLE_ROUND_PROCESS:-fresh}"
if [ -n "${CI_EXAMPLE_SETTLE_MS:-}" ] && [ "$process" = fresh ]; then
    echo "ci_example: CI_EXAMPLE_SETTLE_MS needs CI_EXAMPLE_ROUND_PROCESS persistent, turns" \
         "or turns-fresh (fresh rounds have no gap to set)" >&2
    exit 2
fi
rm -rf "$out"
mkdir -p "$out"
printf 'mm: [[32, 32, 32]]\nsoftmax: [[16, 200]]\n' > "$out/shapes.yaml"
bench=(--adapter builtin --backend cpu --shapes "$out/shapes.yaml"
       --warmup-ms "${CI_EXAMPLE_WARMUP_MS:-30}" --min-samples "${CI_EXAMPLE_MIN_SAMPLES:-15}"
       --min-time-ms 0 --max-time-ms "${CI_EXAMPLE_MAX_TIME_MS:-400}")
# The limits fit Triton's interpreter on a shared CPU host: there one process of a side can run
# 1.4-2x slower than the next for its whole life, so an A/A reads B up to 40 % slower in
# every round now and then (significant at 3 rounds), while the planted regression is 2-6x.
# On a GPU, where processes agree to about 2 %, use limits such as slower:2% and geomean:1%.
limit="${CI_EXAMPLE_LIMIT_PCT:-50}"
round_process=(--round-process "$process")
if [ -n "${CI_EXAMPLE_SETTLE_MS:-}" ]; then
    round_process+=(--settle-ms "$CI_EXAMPLE_SETTLE_MS")
fi
gates=(--fail-on "slower:$limit%" --fail-on "geomean:$limit%" --fail-on broken)

gate() {   # gate NAME SWITCH: one A/B with the gates; prints and returns zlh ab's exit status
    local rc=0
    # shellcheck disable=SC2086 - the op names are words
    zlh ab ${CI_EXAMPLE_OPS:-mm softmax} --switch "$2" --rounds "$rounds" \
        "${round_process[@]}" "${bench[@]}" "${gates[@]}" \
        --root "$out/$1" --json -q > "$out/$1.json" || rc=$?
    python3 - "$out/$1.json" "$1" "$rc" <<'EOF'
import json, sys
path, name, rc = sys.argv[1], sys.argv[2], int(sys.argv[3])
doc = json.load(open(path))
assert doc["schema_version"] == 1, doc["schema_version"]
print(f"== {name}: zlh ab exit {rc} (zlh {doc['zlh_version']}, "
      f"gates {', '.join(doc['fail_on']['gates'])})")
for row in doc["rows"]:
    print(f"   {row['op']:8} {row['shape_detail']:10} A {row['a_ms']:8.3f} ms  "
          f"B {row['b_ms']:8.3f} ms  delta {row['delta_pct']:+7.2f} %  "
          f"direction {row['direction']:+d}")
for op in doc["ops"]:
    s = op["summary"]
    num = lambda v: "-" if v is None else f"{v:.3f}"
    print(f"   {op['op']:8} geomean speedup B vs A {num(s['geomean_speedup'])} "
          f"[{num(s.get('geomean_ci_low'))}, {num(s.get('geomean_ci_high'))}] (95% CI)")
for line in doc["fail_on"]["regressions"]:
    print(f"   {line}")
EOF
    return "$rc"
}

rc_aa=0; gate aa ZLH_BUILTIN_SLOW=0,0 || rc_aa=$?
rc_slow=0; gate regression ZLH_BUILTIN_SLOW=0,1 || rc_slow=$?

if [ "$rc_aa" -eq 0 ] && [ "$rc_slow" -eq 6 ]; then
    echo "ci_example: OK (A/A passed the gates, the planted regression exited 6)"
else
    echo "ci_example: FAILED (A/A exit $rc_aa, want 0; regression exit $rc_slow, want 6)"
    exit 1
fi
