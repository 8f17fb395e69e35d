# Sourced by the check_*.sh scripts (after WORK has its default): output folders, Python path,
# the zlh command, and breadth groups run with reduced budgets.
OUT=${OUT:-device-out}
mkdir -p "$OUT" "$WORK"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
ZLH="python3 -m harness"
FAST="--level core --warmup-ms 10 --min-samples 5 --min-time-ms 5 --max-time-ms 50"

# run_group NAME SECONDS OUT_ROOT OP...: one zlh bench process over OPs, killed after SECONDS;
# log in $WORK/NAME.txt/.err, run directories under OUT_ROOT/NAME.
run_group() {
  local name=$1 limit=$2 root=$3; shift 3
  local s=$SECONDS
  timeout "$limit" $ZLH bench "$@" $FAST --out "$root/$name" > "$WORK/$name.txt" 2> "$WORK/$name.err"
  echo "group $name rc=$? wall=$((SECONDS-s))s"
}
