#!/usr/bin/env bash
# Set up and run every test: a Release build (warnings are errors) and an
# AddressSanitizer + UndefinedBehaviorSanitizer build, each running the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
jobs=$(nproc)
start=$SECONDS

echo "== Release build + tests"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DQFLEET_BUILD_TESTS=ON -DQFLEET_BUILD_BENCH=ON \
      -DQFLEET_WERROR=ON >/dev/null
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"
./build/bench/bench_circuits --benchmark_filter='BM_Classifier_FwdBwd_c128' --benchmark_min_time=0.05 \
  >/dev/null  # the benchmarks still run

echo "== ASan + UBSan build + tests"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQFLEET_SANITIZE=ON -DQFLEET_ENABLE_CUDA=OFF \
      -DQFLEET_BUILD_BENCH=OFF -DQFLEET_WERROR=ON >/dev/null
cmake --build build-asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs"

echo "== all tests passed in $((SECONDS - start)) s"
