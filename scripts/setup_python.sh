#!/usr/bin/env bash
# Creates, or reuses, the Python environment of this checkout, .venv/ (ignored by git), and
# prints its path. `.venv/bin/python` (or `source .venv/bin/activate`) has torch, PennyLane,
# QuTiP and the rest of python/requirements.txt, and imports this checkout's qfleet (python/,
# with the libraries of ./build): the README's and the guides' Python runs there as written.
#
# The packages themselves live in a dependency environment cached outside the checkout, keyed
# on the requirements (python/requirements.txt's CUDA torch is 4 GB: a second checkout on the
# same machine reuses it; a clean machine builds it from PyPI, about 3 minutes). .venv sees
# it through a .pth file and has its own site-packages: what you pip-install there stays in
# this checkout, and no qfleet is ever installed into the shared one.
#   scripts/setup_python.sh                  prints .venv's path
#   scripts/setup_python.sh --dependencies   prints the dependency environment's path
#   QFLEET_VENV=/path  overrides the dependency environment's location.
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
if [ "${1:-}" = --dependencies ]; then
  echo "$venv"
  exit 0
fi

# .venv: its own interpreter and site-packages (no pip of its own: the dependency
# environment's, so that an old bundled pip or setuptools does not shadow the pinned ones),
# the dependencies and this checkout's python/ on its path.
local_venv="$root/.venv"
purelib() { "$1" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }
if [ ! -x "$local_venv/bin/python" ] || ! "$local_venv/bin/python" -c '' 2>/dev/null; then
  rm -rf "$local_venv"
  "$venv/bin/python" -m venv --without-pip "$local_venv" >&2
fi
site=$(purelib "$local_venv/bin/python")
purelib "$venv/bin/python" >"$site/qfleet_dependencies.pth"
echo "$root/python" >"$site/qfleet_checkout.pth"
# The dependency environment's programs (torchrun, pytest, ...) as .venv's own: the same
# script on .venv's interpreter (as pip would write it), so that a program they start with
# sys.executable (torchrun's workers) imports this checkout's qfleet too.
for f in "$venv"/bin/*; do
  name=$(basename "$f")
  case "$name" in python* | pip* | activate* | Activate*) continue ;; esac
  head -c 512 "$f" 2>/dev/null | head -n 1 | grep -qx "#!$venv/bin/python[0-9.]*" || continue
  { echo "#!$local_venv/bin/python"; tail -n +2 "$f"; } >"$local_venv/bin/$name.tmp"
  chmod +x "$local_venv/bin/$name.tmp" && mv "$local_venv/bin/$name.tmp" "$local_venv/bin/$name"
done
# and qfleet's command-line tool, as the wheel installs it: this checkout's build.
cat >"$local_venv/bin/qfleet" <<EOF_QFLEET
#!/bin/sh
[ -x "$root/build/tools/qfleet" ] || { echo "qfleet: $root/build/tools/qfleet is not built (cmake --build $root/build --target qfleet_cli)" >&2; exit 127; }
exec "$root/build/tools/qfleet" "\$@"
EOF_QFLEET
chmod +x "$local_venv/bin/qfleet"
echo "$local_venv"
