#!/usr/bin/env bash
# Creates, or reuses, the Python environment of the build and the tests, and
# prints its path. It is cached outside the checkout (keyed on the requirements),
# so a second run or a fresh clone on the same machine reuses it; a clean
# machine builds it from PyPI (about 2 minutes, mostly the torch wheel).
#   QFLEET_VENV=/path  overrides the location.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
req="$root/python/requirements.txt"
# Packages installed without their declared dependencies (a pin they declare wrongly).
nodeps="$root/python/requirements-nodeps.txt"
# The key is the requirements without their comments, so a comment's edit keeps the cache.
key=$(cat "$req" "$nodeps" | sed -e 's/[[:space:]]*#.*$//' -e '/^[[:space:]]*$/d' | sha256sum | cut -c1-12)
venv="${QFLEET_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/qfleet/venv-$key}"
if [ ! -f "$venv/.qfleet-complete" ]; then
  echo "setup_python: creating $venv from $req" >&2
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv" >&2
  "$venv/bin/python" -m pip install -q --upgrade pip >&2
  "$venv/bin/python" -m pip install -q -r "$req" >&2
  "$venv/bin/python" -m pip install -q --no-deps -r "$nodeps" >&2
  touch "$venv/.qfleet-complete"
fi
echo "$venv"
