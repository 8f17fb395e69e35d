#!/usr/bin/env bash
# Fills .whl/ for tests/device/check_ray.sh; run it where pip reaches an index (the device
# reaches none), from the repository root:   bash tests/device/pack_ray.sh
# The device's python3 is CPython 3.12 on manylinux x86_64, with click, filelock, msgpack,
# protobuf, pyyaml, requests, attrs, typing-extensions already there. Ray's own wheel is 78 MB,
# over the 64 MiB a device call may carry beside .fg/ (~30 MB), so it is carried as one xz
# tarball of its installed tree without what zlh never loads (the Java jars, the dashboard's
# web build, RLlib): ~25 MB. Beside it the wheels of Ray's requirements the image lacks
# (jsonschema and its own: jsonschema-specifications, referencing, rpds-py) and packaging
# (Ray needs >= 24.2; installed only where the image's is older). ~26 MB in .whl/ in all.
set -euo pipefail
RAY=${RAY_VERSION:-2.58.0}
WHL=.whl
PIP="python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$WHL"
$PIP -d "$tmp" "ray==$RAY"
$PIP -d "$WHL" jsonschema jsonschema-specifications referencing rpds-py "packaging>=24.2"
mkdir "$tmp/tree"
(cd "$tmp/tree" && unzip -q "$tmp"/ray-"$RAY"-cp312-*.whl && rm -rf ray/jars ray/dashboard/client/build ray/rllib)
tar cf - -C "$tmp/tree" . | xz -9 -T0 > "$WHL/ray-$RAY-cp312-slim.tar.xz"
ls -la "$WHL"; du -sh "$WHL"
