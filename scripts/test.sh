#!/usr/bin/env bash
# Runs the tap suite and ends with a plain "N passed, N failed" line that any CI log reader understands.
set -o pipefail
out=$(mktemp)
# An interrupted run (Ctrl-C) skips tap's `after` script: stop the run's embedded cluster here instead.
stop_cluster() { DATABASE_URL="${DATABASE_URL:-}" node --import tsx test/helpers/teardown.ts; rm -f "$out"; exit 130; }
trap stop_cluster INT TERM
npx tap --reporter=tap "$@" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
summary=$(grep -E '^# \{ total: [0-9]+' "$out" | tail -1)
num() { sed -nE "s/.*$1: ([0-9]+).*/\1/p" <<<"$summary"; }
pass=$(num pass); fail=$(num fail); skip=$(num skip); todo=$(num todo)
backend="embedded PostgreSQL"; [ -n "${DATABASE_URL:-}" ] && backend="PostgreSQL at DATABASE_URL"
version=$(grep -oE 'test server: PostgreSQL [0-9.]+' "$out" | tail -1 | sed 's/test server: //')
# A log read from its tail alone still names what failed: each failing assertion with its diagnostics.
if [ "${fail:-0}" -gt 0 ]; then
  echo "# what failed:"
  awk '/^[[:space:]]*not ok /{print; inblk=1; yaml=0; n=0; next}
    inblk && /^[[:space:]]*---$/ {yaml=1}
    inblk && yaml {print; if (/^[[:space:]]*\.\.\.$/ || ++n > 40) inblk = 0; next}
    {inblk=0}' "$out" | head -200
fi
echo "# the suite ran on $backend${version:+ ($version)}"
echo "tap: ${pass:-0} passed, ${fail:-0} failed, $(( ${skip:-0} + ${todo:-0} )) skipped"
rm -f "$out"
[ -z "$summary" ] && [ "$rc" -eq 0 ] && { echo "no test ran"; exit 1; }
exit "$rc"
