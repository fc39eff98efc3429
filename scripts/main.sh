#!/usr/bin/env bash
# Set up, build (Release) and run the main job on its embedded default: the
# meta-learned robust quantum-control app (qfleet-meta, docs/meta_control.md) on the
# paper's single-qubit setting, shortened (preset "main": train, then the adaptation
# gap G_K against K in and out of distribution beside the robust pulse and per-task
# GRAPE, and the one-paragraph conclusion the numbers support), then draw its plots.
# Output: meta-control-out/ (report.json, pulses.csv/json, eval/, checkpoint.pt, *.png).
# Extra arguments go to qfleet-meta, e.g. `--preset paper` or `--set iterations=1000`
# (see `build/apps/meta_control/qfleet-meta --help`); without --preset or --config the
# preset is "main".
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
venv=$(./scripts/setup_python.sh)
# The Release tree scripts/test.sh builds too, in the same configuration (only the
# app and what it links are compiled here, and the C library the PennyLane devices of the
# source package use); the CUDA backend only where a GPU is visible.
./scripts/configure.sh release >/dev/null
cmake --build build -j"$(nproc)" --target qfleet_meta_cli qfleet_c
bin=./build/apps/meta_control/qfleet-meta
case " $* " in
  *" --preset"* | *" --config"*) ;;
  *) set -- --preset main "$@" ;;
esac
# The main job again replaces the main job's results (the app refuses a used folder otherwise);
# `--resume` continues it instead.
case " $* " in
  *" --resume"* | *" --overwrite"*) ;;
  *) set -- "$@" --overwrite ;;
esac
"$bin" "$@"
out=$("$bin" "$@" --print-config | "$venv/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["output_dir"])')
# (the source package finds the libraries of ./build itself: python/qfleet/_lib.py)
PYTHONPATH="$PWD/python" "$venv/bin/python" -m qfleet.meta_control.plot "$out"
cat <<EOF

This command builds qfleet-meta only. The other programs, on the same build:
  cmake --build build -j$(nproc)                    # all: qfleet (the CLI), qfleet-classify, qfleet-qgan, qfleet-rl
  ./build/tools/qfleet demo                         # the engine's command line (docs/cli.md)
  ./build/apps/classify/qfleet-classify             # docs/classify.md
  ./build/apps/qgan/qfleet-qgan                     # docs/qgan.md
  ./build/apps/rl/qfleet-rl                         # docs/rl.md
  .venv/bin/python -m qfleet.rl                     # any app from Python (the same C++), in this
                                                    # checkout's environment (source .venv/bin/activate)
EOF
