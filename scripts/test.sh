#!/usr/bin/env bash
# Set up and run every test: a Release build (warnings are errors) with the
# PyTorch adapter and its C++ and Python tests, the CUDA backend's compile for sm_90
# where nvcc is found but no GPU, the wheel (scripts/build_wheel.sh) installed into a clean
# environment without a compiler and the Python suite run there, an
# AddressSanitizer + UndefinedBehaviorSanitizer build of the core, the PyTorch adapter and
# the apps running their C++ suites, a ThreadSanitizer build running the threads tests,
# and libFuzzer on the readers. Each phase prints the seconds since the start.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
start=$SECONDS
./scripts/setup.sh
venv=$(./scripts/setup_python.sh)  # .venv: this checkout's environment
deps_venv=$(./scripts/setup_python.sh --dependencies)  # the packages it sees, cached outside the checkout
export PATH="$venv/bin:$PATH"
jobs=$(nproc)

echo "== Release build + tests ($((SECONDS - start)) s)"
# The tree scripts/main.sh builds, in the same configuration (scripts/configure.sh
# release): what the first command compiled is not compiled again.
./scripts/configure.sh release >/dev/null
cmake --build build -j"$jobs" --target all all_tests all_benchmarks
# (The Python suite, ctest's python_tests, runs below against the installed package
# rather than twice.)
ctest --test-dir build --output-on-failure -j"$jobs" -E '^python_tests$'
./build/bench/bench_circuits --benchmark_filter='BM_Classifier_FwdBwd_c128' --benchmark_min_time=0.05 \
  >/dev/null  # the benchmarks still run

nvcc=$(sed -n 's/^CMAKE_CUDA_COMPILER:[A-Z]*=//p' build/CMakeCache.txt)
if grep -q '^QFLEET_ENABLE_CUDA:BOOL=OFF' build/CMakeCache.txt && [ -n "$nvcc" ] && [ "${nvcc%NOTFOUND}" = "$nvcc" ]; then
  # nvcc without a GPU: the Release tree has no CUDA backend (CMakeLists.txt), so its
  # code is compiled here for one architecture, sm_90 (the GPU checks' H100/H200,
  # scripts/gpu_check.sh), in the tree scripts/gpu_prepare.sh builds the GPU
  # programs in; and its PTX is checked for traps from the objects themselves.
  echo "== CUDA backend compile check, sm_90 (nvcc found, no GPU visible; $((SECONDS - start)) s)"
  ./scripts/configure.sh gpu-bin >/dev/null
  cmake --build build-gpu-bin -j"$jobs" --target qfleet_cuda
  ./tests/cuda/ptx_has_no_trap.sh "$nvcc" "$root" build-gpu-bin/CMakeFiles/qfleet_cuda.dir/src/cuda/*.cu.o
  # (and the check finds a trap where there is one)
  "$nvcc" -O3 --generate-code=arch=compute_90,code=[compute_90,sm_90] --no-compress --expt-relaxed-constexpr \
    -std=c++17 -c tests/cuda/trap_fixture.cu -o build-gpu-bin/trap_fixture.o
  if ./tests/cuda/ptx_has_no_trap.sh "$nvcc" "$root" build-gpu-bin/trap_fixture.o >/dev/null; then
    echo "tests/cuda/ptx_has_no_trap.sh found no trap in tests/cuda/trap_fixture.cu"
    exit 1
  fi
fi

# A tree on the Release library, linked as it is (QFLEET_PREBUILT_LIBRARY), as a GPU machine's
# device build links the library scripts/gpu_prepare.sh bundles for it: it configures, the
# command-line tool links, and it runs.
echo "== the library linked prebuilt (QFLEET_PREBUILT_LIBRARY; $((SECONDS - start)) s)"
./scripts/configure.sh build-prebuilt -DCMAKE_BUILD_TYPE=Release -DQFLEET_BUILD_TESTS=OFF -DQFLEET_BUILD_BENCH=OFF \
  -DQFLEET_BUILD_TORCH=OFF -DQFLEET_ENABLE_CUDA="$(sed -n 's/^QFLEET_ENABLE_CUDA:BOOL=//p' build/CMakeCache.txt)" \
  -DQFLEET_PREBUILT_LIBRARY="$root/build/libqfleet.a" >/dev/null
cmake --build build-prebuilt -j"$jobs" --target qfleet_cli
build-prebuilt/tools/qfleet info >/dev/null
# (and a library that is not there is refused at configure time, naming it)
if out=$(cmake -S "$root" -B build-prebuilt-missing -DQFLEET_BUILD_TORCH=OFF -DQFLEET_BUILD_TESTS=OFF \
           -DQFLEET_BUILD_BENCH=OFF -DQFLEET_PREBUILT_LIBRARY=/nonexistent/libqfleet.a 2>&1) ||
   ! grep -q 'QFLEET_PREBUILT_LIBRARY: no file /nonexistent/libqfleet.a' <<<"$out"; then
  echo "QFLEET_PREBUILT_LIBRARY=/nonexistent/libqfleet.a was not refused with its name: $out"
  exit 1
fi
rm -rf build-prebuilt-missing

echo "== the wheel, installed into a clean environment without a compiler, and the Python tests there ($((SECONDS - start)) s)"
# scripts/build_wheel.sh, in the Release build's tree (same generator and compiler flags, so
# pip compiles nothing again; a user's plain build_wheel.sh builds in build-wheel/).
wheel=$(CMAKE_GENERATOR="$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' build/CMakeCache.txt)" \
  ./scripts/build_wheel.sh build/dist -Cbuild-dir=build \
  -Ccmake.define.QFLEET_BUILD_TESTS=ON -Ccmake.define.QFLEET_BUILD_BENCH=ON)
# A new environment of this checkout's own, build/wheel-env. What the wheel requires (torch,
# numpy) and what the tests use come from the test environment, read through a .pth file
# (python/requirements.txt's CUDA torch is 4 GB: installed once); qfleet comes only from the
# wheel, and the test environment never has qfleet installed. pip installs from the wheel
# alone (--no-index): a requirement the environment does not satisfy stops here.
wheel_env="$root/build/wheel-env"
rm -rf "$wheel_env"
"$deps_venv/bin/python" -m venv --without-pip "$wheel_env"  # (pip too is the test environment's)
purelib() { "$1" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }
purelib "$deps_venv/bin/python" >"$(purelib "$wheel_env/bin/python")/qfleet_test_dependencies.pth"
# No compiler on PATH, as on a user's machine that has none: every program of the system's
# bin folders but the C, C++, Fortran and CUDA compilers and the linker.
no_cc_bin="$root/build/no-compiler-bin"
rm -rf "$no_cc_bin" && mkdir -p "$no_cc_bin"
for f in /usr/local/bin/* /usr/bin/* /bin/*; do
  case "$(basename "$f")" in
    gcc* | g++* | cc | c++ | cpp | cpp-* | c89* | c99* | clang* | nvcc | ld | ld.* | gfortran* | *-linux-gnu-*) ;;
    *) [ -e "$no_cc_bin/$(basename "$f")" ] || ln -s "$f" "$no_cc_bin/" ;;
  esac
done
wheel_path="$wheel_env/bin:$no_cc_bin"
env PATH="$wheel_path" python -m pip install -q --no-index "$wheel"
tmp=$(mktemp -d)
# The environment is what it says: no compiler, qfleet from the wheel, the system libraries it
# links from the wheel's own copies (python/qfleet is not on the path: the tests run from $tmp).
(cd "$tmp" && env -u PYTHONPATH PATH="$wheel_path" python -c "
import shutil, torch, qfleet
assert [c for c in ('cc', 'c++', 'gcc', 'g++', 'clang', 'nvcc', 'ld') if shutil.which(c)] == []
assert qfleet.__file__.startswith('$wheel_env/'), qfleet.__file__
qfleet.load_operators()
maps = open('/proc/self/maps').read()
assert 'qfleet.libs/liblbfgsb' in maps and '/liblbfgsb.so' not in maps, 'L-BFGS-B is not the wheel own copy'
")
# The wheel configures the CUDA backend as the CMake build did (on where nvcc is found and a GPU visible).
expect_cuda=0
grep -q '^QFLEET_ENABLE_CUDA:BOOL=ON' build/CMakeCache.txt && expect_cuda=1
(cd "$tmp" && env -u PYTHONPATH -u QFLEET_TORCH_LIBRARY -u QFLEET_C_LIBRARY -u QFLEET_META_LIBRARY -u QFLEET_CLASSIFY_LIBRARY -u QFLEET_QGAN_LIBRARY -u QFLEET_RL_LIBRARY \
   PATH="$wheel_path" QFLEET_EXPECT_CUDA_BACKEND=$expect_cuda QFLEET_CLI="$wheel_env/bin/qfleet" QFLEET_META="$root/build/apps/meta_control/qfleet-meta" \
   QFLEET_CLASSIFY="$root/build/apps/classify/qfleet-classify" QFLEET_QGAN="$root/build/apps/qgan/qfleet-qgan" QFLEET_RL="$root/build/apps/rl/qfleet-rl" \
   QFLEET_LAYER_EVAL="$root/build/tests/qfleet_torch_layer_eval" \
   python -m pytest -q -p no:cacheprovider --durations=20 "$root/tests/python")
rm -rf "$tmp"
# The docs' blocks run on the checkout's package, as a reader of a checkout runs them (the
# wheel's run above skips them): .venv's python, this tree's programs.
echo "== README's and docs/' blocks on the checkout's package ($((SECONDS - start)) s)"
tmp=$(mktemp -d)
# (The dependency environment's programs, torchrun among them, on PATH too: the skipped blocks'
# programs are checked to exist.)
(cd "$tmp" && env -u PYTHONPATH PATH="$venv/bin:$deps_venv/bin:$PATH" QFLEET_CLI="$root/build/tools/qfleet" \
   QFLEET_META="$root/build/apps/meta_control/qfleet-meta" \
   "$venv/bin/python" -m pytest -q -p no:cacheprovider "$root/tests/python/test_docs_blocks.py")
rm -rf "$tmp"

# The sanitizer trees run only here, so they compile only the wider instruction set this
# machine runs (QFLEET_CPU_ISAS) beside baseline: what a sanitizer checks is what runs. The
# machine's widest is the one the Release library picks (`qfleet info`, as tests/isa_rerun.sh).
native_isa=$(env -u QFLEET_ISA build/tools/qfleet info | sed -n 's/.*"isas":\["\([a-z0-9]*\)".*/\1/p')
if [ "$native_isa" = baseline ]; then native_isa=""; fi

echo "== ASan + UBSan build + tests ($((SECONDS - start)) s)"
# Clang (its sanitizer builds compile the kernels 2-5x faster than GCC's: the heaviest,
# src/cpu/isa_open.cpp for baseline, 32 s against 155 s; 2026-11-28) at -O1 -g1 (line
# tables: the reports still name file and line), the optimisation AddressSanitizer's
# documentation recommends. The same tree builds the libFuzzer targets (QFLEET_FUZZ).
# The PyTorch adapter and the apps are instrumented; LibTorch itself (the PyPI wheel) is
# not, so what it does inside is not checked, and the STL containers it fills are not
# annotated: detect_container_overflow is off (AddressSanitizer's documentation, "false
# positives" of partially instrumented programs).
# Left out of this tree's run: the unit tests' AVX2 rerun (the baseline rerun has its
# lane widths, and the native run AVX-512's); the Python suite (its engine tests run on
# this tree's libraries in the next phase), and the meta-control app's export
# through `qfleet eval` (90 s here, the app's other tests run the same code).
./scripts/configure.sh build-asan -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO='-O1 -g1 -DNDEBUG' \
      -DQFLEET_SANITIZE=ON -DQFLEET_FUZZ=ON -DQFLEET_CPU_ISAS="$native_isa" -DQFLEET_ENABLE_CUDA=OFF -DQFLEET_BUILD_BENCH=OFF -DQFLEET_WERROR=ON \
      -DQFLEET_BUILD_TORCH=ON -DPython3_EXECUTABLE="$venv/bin/python" >/dev/null
cmake --build build-asan -j"$jobs" --target all all_tests
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_container_overflow=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  LSAN_OPTIONS=suppressions="$root/tests/sanitizers/lsan.supp" ctest --test-dir build-asan --output-on-failure -j"$jobs" \
  -E '^(unit_tests_isa_avx2|python_tests|MetaRun\.ExportedPulsesThroughQfleetEvalReproduceTheReport)$'

echo "== The Python entries on the ASan + UBSan libraries ($((SECONDS - start)) s)"
# The Python suite's tests of the engine's operators, layers, devices, training runtime,
# environments and C binding, run by the (uninstrumented) interpreter on this tree's
# instrumented PyTorch adapter, C library and rl library: the sanitizers' runtime is
# preloaded, as a program built with them would have it from the start. Leaks are not
# checked here (the interpreter keeps its objects to the end by design); the command line
# the tests start is the Release tree's (the ASan tree's links its own copy of the
# runtime). The fixture first: a heap overflow in a library loaded from Python must be
# reported, or this phase checks nothing.
asan_rt="$(clang -print-file-name=libclang_rt.asan-x86_64.so)"
py_asan() {
  env -u PYTHONPATH PYTHONPATH="$root/python:$root/tests/python" LD_PRELOAD="$asan_rt" \
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:detect_container_overflow=0 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    QFLEET_TORCH_LIBRARY="$root/build-asan/adapters/torch/libqfleet_torch.so" \
    QFLEET_C_LIBRARY="$root/build-asan/adapters/c/libqfleet_c.so" \
    QFLEET_RL_LIBRARY="$root/build-asan/apps/rl/libqfleet_rl.so" QFLEET_CLI="$root/build/tools/qfleet" "$@"
}
fixture="$root/build-asan/tests/libqfleet_heap_overflow_fixture.so"
if py_asan python -c "import ctypes; ctypes.CDLL('$fixture').qfleet_heap_overflow_fixture(4)" \
     >/dev/null 2>build-asan/heap_overflow_fixture.log ||
   ! grep -q "AddressSanitizer: heap-buffer-overflow" build-asan/heap_overflow_fixture.log; then
  echo "AddressSanitizer did not report tests/sanitizers/heap_overflow_fixture.cpp's overflow from Python"
  exit 1
fi
py_asan python -c "
import torch, qfleet
c = qfleet.Circuit(1); c.angle_embedding([0]).expval('Z0')
qfleet.QuantumLayer(c)(torch.zeros(2, 1, dtype=torch.float64))
maps = open('/proc/self/maps').read()
assert '$root/build-asan/adapters/torch/libqfleet_torch.so' in maps, 'the instrumented adapter is not the one loaded'
"
tmp=$(mktemp -d)
(cd "$tmp" && py_asan python -m pytest -q -p no:cacheprovider \
   -k "not test_compare_runs_qfleet_meta_on_the_same_tasks and not dynamiqs" \
   "$root"/tests/python/test_{circuits,open,open_outputs,control,noisy,program_results,engine_binding,train,rl}.py)
rm -rf "$tmp"

echo "== ThreadSanitizer build + the threads tests ($((SECONDS - start)) s)"
# The threads tests (tests/threads: compiled programs, the torch operators and autograd
# shared by four threads) under ThreadSanitizer, which reports a data race in a program's
# caches or workspaces even when the results happen to agree. Clang's OpenMP runtime is
# followed through its ThreadSanitizer tool, Archer (LLVM's libarcher, loaded by
# OMP_TOOL_LIBRARIES): without it the runtime's own synchronisation is invisible to the
# sanitizer. LibTorch is not instrumented (as above).
./scripts/configure.sh build-tsan -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO='-O1 -g1 -DNDEBUG' \
      -DQFLEET_TSAN=ON -DQFLEET_CPU_ISAS="$native_isa" -DQFLEET_ENABLE_CUDA=OFF -DQFLEET_BUILD_BENCH=OFF -DQFLEET_WERROR=ON \
      -DQFLEET_BUILD_TORCH=ON -DPython3_EXECUTABLE="$venv/bin/python" >/dev/null
cmake --build build-tsan -j"$jobs" --target qfleet_thread_tests qfleet_torch_thread_tests qfleet_race_fixture
archer="$(dirname "$(readlink -f "$(command -v clang)")")/../lib/libarcher.so"
[ -f "$archer" ] || { echo "no $archer (Debian's libomp-dev installs it)"; exit 1; }
# ignore_noninstrumented_modules: no reports from inside the uninstrumented runtimes (the
# OpenMP runtime's own locks, LibTorch), as Archer asks.
tsan_options="halt_on_error=1 second_deadlock_stack=1 ignore_noninstrumented_modules=1"
OMP_TOOL_LIBRARIES="$archer" TSAN_OPTIONS="$tsan_options" \
  ctest --test-dir build-tsan --output-on-failure -j"$jobs" -R '^Threads\.'
# (and the sanitizer reports a race where there is one)
if TSAN_OPTIONS="$tsan_options" ./build-tsan/tests/qfleet_race_fixture >/dev/null 2>build-tsan/race_fixture.log ||
   ! grep -q "ThreadSanitizer: data race" build-tsan/race_fixture.log; then
  echo "ThreadSanitizer did not report tests/threads/race_fixture.cpp's race"
  exit 1
fi

echo "== libFuzzer on the readers: problems, .npy, PGM, configurations, IDX, checkpoints (clang, ASan + UBSan; ${QFLEET_FUZZ_SECONDS:-30} s per reader; $((SECONDS - start)) s)"
./scripts/fuzz.sh build-asan "${QFLEET_FUZZ_SECONDS:-30}"

echo "== all tests passed in $((SECONDS - start)) s"
