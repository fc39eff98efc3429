#!/usr/bin/env bash
# One command: set up the comparison venv (once), then run the benchmarks.
#   bench/compare/run.sh            # full run (~15 min on 2 cores), results in bench/results/
#   bench/compare/run.sh --quick    # smoke test (< 2 min)
#   bench/compare/run.sh --only transfer --qfleet-from-build build   # the d = 2..64 state-transfer sweep
#                                                                      # on an existing build tree's qfleet
# Any argument is passed to run.py (--threads N, --only circuit,meta,cz,e2e,transfer, --no-sweeps,
# --out-dir DIR, --qfleet-from-build DIR: no pip build of qfleet, that build tree's library instead).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
for a in "$@"; do
  case "$a" in --qfleet-from-build|--qfleet-from-build=*) export QFLEET_SKIP_INSTALL=1 ;; esac
done
"$HERE/setup.sh"
exec "$HERE/.venv/bin/python" "$HERE/run.py" "$@"
