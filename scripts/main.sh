#!/usr/bin/env bash
# Set up, build (Release) and run the main job on its embedded default: the
# meta-learned robust quantum-control app (qfleet-meta, docs/meta_control.md),
# then draw its plots. Output: meta-control-out/ (report.json, pulses.csv/json,
# eval/, checkpoint.json, *.png).
# Extra arguments go to qfleet-meta, e.g. `--preset paper` or `--set system=two_qubit_cz`
# (see `build/apps/meta_control/qfleet-meta --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
venv=$(./scripts/setup_python.sh)
jobs=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DQFLEET_BUILD_TORCH=ON -DPython3_EXECUTABLE="$venv/bin/python" \
      >/dev/null
cmake --build build -j"$jobs" --target qfleet_meta_cli
bin=./build/apps/meta_control/qfleet-meta
"$bin" "$@"
out=$("$bin" "$@" --print-config | "$venv/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["output_dir"])')
# (qfleet.meta_control loads the app's library, built beside qfleet-meta, when imported)
PYTHONPATH="$PWD/python" QFLEET_TORCH_LIBRARY="$PWD/build/adapters/torch/libqfleet_torch.so" \
  QFLEET_META_LIBRARY="$PWD/build/apps/meta_control/libqfleet_meta.so" \
  "$venv/bin/python" -m qfleet.meta_control.plot "$out"
