#!/usr/bin/env bash
# Set up, build (Release) and run the main job on its embedded default: the
# meta-learned robust quantum-control app (qfleet-meta, docs/meta_control.md) on the
# paper's single-qubit setting, shortened (preset "main": train, then the adaptation
# gap G_K against K in and out of distribution beside the robust pulse and per-task
# GRAPE, and the one-paragraph conclusion the numbers support), then draw its plots.
# Output: meta-control-out/ (report.json, pulses.csv/json, eval/, checkpoint.json, *.png).
# Extra arguments go to qfleet-meta, e.g. `--preset paper` or `--set iterations=1000`
# (see `build/apps/meta_control/qfleet-meta --help`); without --preset or --config the
# preset is "main".
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
venv=$(./scripts/setup_python.sh)
# The Release tree scripts/test.sh builds too, in the same configuration (only the
# app and what it links are compiled here); the CUDA backend only where a GPU is visible.
./scripts/configure.sh release >/dev/null
cmake --build build -j"$(nproc)" --target qfleet_meta_cli
bin=./build/apps/meta_control/qfleet-meta
case " $* " in
  *" --preset"* | *" --config"*) ;;
  *) set -- --preset main "$@" ;;
esac
"$bin" "$@"
out=$("$bin" "$@" --print-config | "$venv/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["output_dir"])')
# (qfleet.meta_control loads the app's library, built beside qfleet-meta, when imported)
PYTHONPATH="$PWD/python" QFLEET_TORCH_LIBRARY="$PWD/build/adapters/torch/libqfleet_torch.so" \
  QFLEET_META_LIBRARY="$PWD/build/apps/meta_control/libqfleet_meta.so" \
  "$venv/bin/python" -m qfleet.meta_control.plot "$out"
