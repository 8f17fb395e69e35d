#!/usr/bin/env bash
# Several device checks in one command, each in its own time box (run from the repository root):
#   bash tests/device/run_checks.sh "NAME:SECONDS:COMMAND" ...
# e.g. "library:170:python3 tests/device/check_library_api.py". Each COMMAND runs with OUT set
# to a private folder; when it ends (or its box expires: the process group is killed) that folder
# is packed into $OUT/NAME.tgz and its console is $OUT/NAME.txt, so an expired box never loses
# what the earlier checks wrote. $OUT/checks.txt lists rc and wall per check (124 = box expired).
# Three checks leave 7 files in $OUT.
set -uo pipefail
FINAL=${OUT:-device-out}
STAGE=${STAGE:-/tmp/zlh-checks}
mkdir -p "$FINAL"
for spec in "$@"; do
  name=${spec%%:*}; rest=${spec#*:}; limit=${rest%%:*}; cmd=${rest#*:}
  if [[ -z "$name" || ! "$limit" =~ ^[0-9]+$ || -z "$cmd" ]]; then
    echo "run_checks: '$spec' is not NAME:SECONDS:COMMAND" >&2; exit 2
  fi
  rm -rf "${STAGE:?}/$name" && mkdir -p "$STAGE/$name"
  started=$SECONDS
  OUT="$STAGE/$name" timeout -k 15 "$limit" bash -c "$cmd" > "$FINAL/$name.txt" 2>&1
  rc=$?
  echo "== $name rc=$rc wall=$((SECONDS - started))s (box ${limit}s)" | tee -a "$FINAL/checks.txt"
  tar czf "$FINAL/$name.tgz" -C "$STAGE/$name" . 2>/dev/null
done
