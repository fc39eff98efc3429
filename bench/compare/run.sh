#!/usr/bin/env bash
# One command: set up the comparison venv (once), then run the benchmarks.
#   bench/compare/run.sh            # full run (~15 min on 2 cores), results in bench/results/
#   bench/compare/run.sh --quick    # smoke test (< 2 min)
# Any argument is passed to run.py (--threads N, --only circuit,meta,cz, --no-sweeps, --out-dir DIR).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$HERE/setup.sh"
exec "$HERE/.venv/bin/python" "$HERE/run.py" "$@"
