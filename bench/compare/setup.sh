#!/usr/bin/env bash
# Creates bench/compare/.venv and installs the comparison libraries (requirements.txt,
# locked by constraints.txt) from PyPI. Idempotent: a stamp file keyed on the hash of
# both files skips the install when nothing changed. Prints how long it took.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
VENV="$HERE/.venv"

if [ -n "${PYTHON:-}" ]; then
  PY="$PYTHON"
elif command -v python3.11 >/dev/null 2>&1; then
  PY=python3.11
else
  PY=python3
fi

start=$(date +%s)
hash=$(cat "$HERE/requirements.txt" "$HERE/constraints.txt" | sha256sum | cut -c1-16)
stamp="$VENV/.installed-$hash"

if [ -f "$stamp" ] && [ -x "$VENV/bin/python" ]; then
  echo "setup.sh: $VENV is up to date (requirements hash $hash)"
else
  if [ ! -x "$VENV/bin/python" ]; then
    echo "setup.sh: creating $VENV with $("$PY" --version 2>&1)"
    "$PY" -m venv "$VENV"
  fi
  echo "setup.sh: installing requirements.txt (constraints.txt) from PyPI"
  "$VENV/bin/python" -m pip install --disable-pip-version-check --no-input \
    -r "$HERE/requirements.txt" -c "$HERE/constraints.txt"
  # qutip-qoc 0.2.0 declares numpy<2.0, which the pins above exclude; its wheel runs with them.
  "$VENV/bin/python" -m pip install --disable-pip-version-check --no-input --no-deps qutip-qoc==0.2.0
  rm -f "$VENV"/.installed-*
  touch "$stamp"
fi

# qfleet's Python package, built against this venv's torch (no build isolation:
# the build links the installed wheel's LibTorch). Rebuilt on every run so the
# figures are those of the checkout; skipped when run.sh was given
# --qfleet-from-build DIR (QFLEET_SKIP_INSTALL=1): run.py then loads that build tree's library.
if [ -n "${QFLEET_SKIP_INSTALL:-}" ]; then
  echo "setup.sh: qfleet not installed into the venv (--qfleet-from-build: the build tree's library is used)"
else
  "$VENV/bin/python" -m pip install -q "scikit-build-core==1.1.2"
  "$VENV/bin/python" -m pip install -q --no-build-isolation --no-deps --force-reinstall "$REPO"
fi
echo "setup.sh: done in $(( $(date +%s) - start )) s"
