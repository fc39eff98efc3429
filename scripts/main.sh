#!/usr/bin/env bash
# Set up, build (Release) and run the main job with its embedded defaults.
# Extra arguments go to `qfleet demo` (see `build/tools/qfleet demo --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
jobs=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DQFLEET_BUILD_TESTS=OFF -DQFLEET_BUILD_BENCH=OFF >/dev/null
cmake --build build -j"$jobs" --target qfleet_cli
exec ./build/tools/qfleet demo "$@"
