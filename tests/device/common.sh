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

# ray_up GPUS: Ray from .whl/ (tests/device/pack_ray.sh) installed under build/raylib unless
# importable, then a one-node cluster with GPUS GPUs started (`ray_down` stops it). Prints
# the version and the seconds it took; returns 1 (saying why) when it cannot.
RAY="python3 -m ray.scripts.scripts"
ray_up() {
  local gpus=${1:-1} lib=$PWD/build/raylib s=$SECONDS need
  mkdir -p "$lib"
  if ! python3 -c "import ray" 2>/dev/null; then
    python3 -c "import glob, sys, tarfile; tarfile.open(glob.glob('.whl/ray-*-cp312-slim.tar.xz')[0]).extractall(sys.argv[1])" "$lib" \
      || { echo "no Ray in .whl/ (bash tests/device/pack_ray.sh fills it)"; return 1; }
    need="jsonschema jsonschema-specifications referencing rpds-py"
    python3 -c "import packaging.version as v, packaging; exit(v.Version(packaging.__version__) < v.Version('24.2'))" || need="$need packaging"
    python3 -m pip install -q --no-index --no-deps --find-links .whl --target "$lib" $need
  fi
  export PYTHONPATH=$PYTHONPATH:$lib
  python3 -c "import ray; print('ray', ray.__version__, 'installed in', $((SECONDS-s)), 's')"
  $RAY start --head --num-gpus "$gpus" --num-cpus 8 --include-dashboard false --disable-usage-stats \
    --object-store-memory 1000000000 > "$WORK/ray_start.log" 2>&1 || { tail -n 20 "$WORK/ray_start.log"; return 1; }
  echo "ray cluster up ($gpus GPU(s)) after $((SECONDS-s)) s"
}
ray_down() { $RAY stop --force > /dev/null 2>&1; }

# step LABEL SECONDS CMD...: CMD boxed to SECONDS, its output in $WORK/LABEL.log; prints rc and
# wall and keeps the wall in WALL[LABEL].
declare -A WALL
step() {
  local label=$1 limit=$2; shift 2; local s=$SECONDS
  timeout "$limit" "$@" > "$WORK/$label.log" 2>&1
  echo "== $label rc=$? wall=$((SECONDS-s))s"; WALL[$label]=$((SECONDS-s))
}

# xz through Python's lzma (the machine may have no xz program): xz_pack < tar > tar.xz,
# xz_unpack < tar.xz > tar.
xz_pack() { python3 -c "import lzma, shutil, sys
with lzma.open(sys.stdout.buffer, 'wb', preset=4) as out: shutil.copyfileobj(sys.stdin.buffer, out)"; }
xz_unpack() { python3 -c "import lzma, shutil, sys
with lzma.open(sys.stdin.buffer) as src: shutil.copyfileobj(src, sys.stdout.buffer)"; }
