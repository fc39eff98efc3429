#!/usr/bin/env bash
# Set up and run every test: a Release build (warnings are errors) with the
# PyTorch adapter and its C++ and Python tests, the pip-installed package's
# tests, and an AddressSanitizer + UndefinedBehaviorSanitizer build of the core,
# each running the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
start=$SECONDS
./scripts/setup.sh
venv=$(./scripts/setup_python.sh)
export PATH="$venv/bin:$PATH"
jobs=$(nproc)

echo "== Release build + tests ($((SECONDS - start)) s)"
# (-U: a previous run's wheel build, below, left scikit-build-core's variables in the cache.)
# The CUDA code is compiled for one architecture here, sm_90 (the H100/H200 the GPU
# checks run on, scripts/gpu_check.sh), not for both of a user's build (80 and 90,
# CMakeLists.txt): the device code is the same source for both, and each architecture
# costs its own device compile (open_cuda_k_group.cu: 127 s of CPU for sm_90 alone,
# 246 s for both; nvcc 13, 2026-11-27). (Torch's CMake adds its own -gencode flags to
# every CUDA unit, hence TORCH_CUDA_ARCH_LIST as well.)
./scripts/configure.sh build -U 'SKBUILD*' -DCMAKE_BUILD_TYPE=Release -DQFLEET_BUILD_TESTS=ON -DQFLEET_BUILD_BENCH=ON \
      -DQFLEET_WERROR=ON -DQFLEET_BUILD_TORCH=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DTORCH_CUDA_ARCH_LIST=9.0 \
      -DPython3_EXECUTABLE="$venv/bin/python" >/dev/null
cmake --build build -j"$jobs"
# (The Python suite, ctest's python_tests, runs below against the installed package
# rather than twice.)
ctest --test-dir build --output-on-failure -j"$jobs" -E '^python_tests$'
./build/bench/bench_circuits --benchmark_filter='BM_Classifier_FwdBwd_c128' --benchmark_min_time=0.05 \
  >/dev/null  # the benchmarks still run

echo "== pip install . and the Python tests against the installed package ($((SECONDS - start)) s)"
# The wheel is built in the Release build's tree (same generator and compiler
# flags), so pip compiles nothing again; a user's plain `pip install .` builds in
# build-wheel/.
CMAKE_GENERATOR="$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' build/CMakeCache.txt)" \
  python -m pip install -q --no-build-isolation --no-deps --force-reinstall -Cbuild-dir=build \
  -Ccmake.define.QFLEET_BUILD_TESTS=ON -Ccmake.define.QFLEET_BUILD_BENCH=ON .
# The wheel configures the CUDA backend as the CMake build did (on when nvcc is found).
expect_cuda=0
grep -q '^QFLEET_ENABLE_CUDA:BOOL=ON' build/CMakeCache.txt && expect_cuda=1
tmp=$(mktemp -d)
(cd "$tmp" && env -u PYTHONPATH -u QFLEET_TORCH_LIBRARY -u QFLEET_META_LIBRARY -u QFLEET_CLASSIFY_LIBRARY -u QFLEET_QGAN_LIBRARY -u QFLEET_RL_LIBRARY QFLEET_EXPECT_CUDA_BACKEND=$expect_cuda QFLEET_CLI="$venv/bin/qfleet" QFLEET_META="$root/build/apps/meta_control/qfleet-meta" \
   QFLEET_CLASSIFY="$root/build/apps/classify/qfleet-classify" QFLEET_QGAN="$root/build/apps/qgan/qfleet-qgan" QFLEET_RL="$root/build/apps/rl/qfleet-rl" \
   QFLEET_LAYER_EVAL="$root/build/tests/qfleet_torch_layer_eval" \
   python -m pytest -q -p no:cacheprovider --durations=20 "$root/tests/python")
rm -rf "$tmp"

echo "== ASan + UBSan build + tests ($((SECONDS - start)) s)"
# -O1 -g1 (line tables: the sanitizers' reports still name file and line), the
# optimisation AddressSanitizer's documentation recommends: the heaviest test unit
# compiled in 65 s against 134 s at RelWithDebInfo's -O2 -g (2026-11-27).
sanitize_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO='-O1 -g1 -DNDEBUG'
                -DCMAKE_C_FLAGS_RELWITHDEBINFO='-O1 -g1 -DNDEBUG')
./scripts/configure.sh build-asan "${sanitize_flags[@]}" -DQFLEET_SANITIZE=ON -DQFLEET_ENABLE_CUDA=OFF \
      -DQFLEET_BUILD_BENCH=OFF -DQFLEET_WERROR=ON -DQFLEET_BUILD_TORCH=OFF >/dev/null
cmake --build build-asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs"

echo "== libFuzzer on the JSON readers, the .npy reader and the PGM reader (clang, ASan + UBSan; ${QFLEET_FUZZ_SECONDS:-30} s per reader; $((SECONDS - start)) s)"
CXX=clang++ ./scripts/configure.sh build-fuzz "${sanitize_flags[@]}" -DQFLEET_FUZZ=ON -DQFLEET_ENABLE_CUDA=OFF \
      -DQFLEET_BUILD_TESTS=OFF -DQFLEET_BUILD_BENCH=OFF -DQFLEET_BUILD_CLI=OFF -DQFLEET_BUILD_TORCH=OFF >/dev/null
cmake --build build-fuzz -j"$jobs" --target fuzz_circuit_json fuzz_lindblad_json fuzz_npy fuzz_pgm fuzz_rl_config
./scripts/fuzz.sh build-fuzz "${QFLEET_FUZZ_SECONDS:-30}"

echo "== all tests passed in $((SECONDS - start)) s"
