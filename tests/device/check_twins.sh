#!/usr/bin/env bash
# Do a round's two runs, one after the other behind the same spacer, land their data alike?
# (`--round-process twins`, docs/concepts/rounds.md). One device call, about 9 minutes:
#   source .fg/env.sh && bash tests/device/check_twins.sh
# 1. run_state.py's twins: fresh processes in pairs behind spacers of one seed, against bare
#    fresh processes (the table's `twins:` lines: how far twins differ against how far one
#    process spreads);
# 2. zlh calibrate's plant of 0.3 % at --round-process twins on OPS (16 rounds), with the
#    processes that hold device memory polled meanwhile ($OUT/apps.txt: do spares hold a
#    context?), then rounds_within.py's table (`r`: the two sides' medians correlated over
#    the rounds; near 1 where twins land alike, near 0 in turns-fresh).
# Environment: CASES (run_state), OPS (the plant; default the shapes that spread in
# turns-fresh), ROUNDS (16), BUDGET (the runs' windows), BOX_S (the plant's box, 330),
# FRESH (run_state's pairs, 4), CHILD_SPACERS ("twin none"; "twin twin-spare" adds twins with
# a spare's device context made between them), RUN_STATE_S (run_state's box, 180).
set -u
if [ -z "${FLAGGEMS_DIR:-}" ]; then
  echo "check_twins: FLAGGEMS_DIR is not set; source .fg/env.sh first" >&2
  exit 2
fi
export OUT=${OUT:-device-out} PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
mkdir -p "$OUT"
ROOT_OUT=$OUT
nvidia-smi --query-gpu=name,power.limit,memory.used --format=csv,noheader
CASES=${CASES:-"fused_add_rms_norm:4096x4096 fused_add_rms_norm:64x512x512 softmax:4096x4096"} \
  REPS=0 FRESH=${FRESH:-4} CHILD_SPACERS=${CHILD_SPACERS:-"twin none"} \
  timeout "${RUN_STATE_S:-180}" \
  python3 tests/device/run_state.py | tail -n 20
echo "run_state rc=${PIPESTATUS[0]}"
# every second: the processes that hold device memory ("== time" then one line each)
while sleep 1; do
  echo "== $(date +%s)"
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader 2>/dev/null
done > "$ROOT_OUT/apps.txt" &
POLL=$!
OUT=$ROOT_OUT/twins ROUND_PROCESS=twins MIN_ROUNDS=${ROUNDS:-16} MAX_ROUNDS=${ROUNDS:-16} \
  TARGET_PCT=0.1 BUDGET=${BUDGET:-"--warmup-ms 20 --min-time-ms 40 --max-time-ms 80"} \
  OPS=${OPS:-"fused_add_rms_norm softmax add"} BOX_S=${BOX_S:-330} \
  bash tests/device/rounds_spread.sh plant 2>&1 | tail -30
kill "$POLL" 2>/dev/null
python3 tests/device/rounds_within.py show "$ROOT_OUT/twins/plant_root/samples.json"
# how many processes held device memory at once (spares that made a context count here)
# (none seen at all: this machine's nvidia-smi does not list them, which says nothing)
awk '/^==/ {if (n > most) most = n; n = 0; polls++; next} {n++; pids[$1] = 1}
     END {if (n > most) most = n
          if (length(pids) == 0) print "apps.txt: " polls " polls, no process listed: " \
            "nvidia-smi lists none here, so whether spares hold a context is not known"
          else print "apps.txt: " polls " polls, at most " most \
            " processes holding device memory at once, " length(pids) " in all"}' \
  "$ROOT_OUT/apps.txt"
