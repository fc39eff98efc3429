#!/usr/bin/env bash
# Builds the Python API reference (Sphinx: docs/python_api) as HTML, nitpicky, any warning an
# error:
#   scripts/build_api_docs.sh [OUT]      # default OUT: build/python_api_html
# with the interpreter $PYTHON (default: python on PATH, as scripts/test.sh puts the
# environment of python/requirements.txt there) and the qfleet it imports: the installed
# package, or with PYTHONPATH=python the checkout's (its libraries from build/); where none
# is importable, the checkout's (docs/python_api/conf.py). The C++ reference is Doxygen's:
# QFLEET_API_OUT=docs/api doxygen docs/api/Doxyfile.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$(realpath -m "${1:-$root/build/python_api_html}")"
python="${PYTHON:-python}"
cd "$root"
"$python" -m sphinx -W --keep-going -n -q -b html docs/python_api "$out"
echo "$out/index.html (qfleet from $(cd docs/python_api && "$python" -c 'import conf, qfleet; print(qfleet.__path__[0])'))"
