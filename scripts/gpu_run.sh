#!/usr/bin/env bash
# The CUDA checks on a lent GPU machine (the workplace's `device` tool), in steps that
# fit its 10-minute calls. Run scripts/gpu_prepare.sh here first, then e.g.
#
#   run(command="scripts/gpu_run.sh build test", carry=[".gpu"], timeout_s=600)
#   run(command="scripts/gpu_run.sh build bench:Target/ bench:Open/d2/ compare", carry=[".gpu"])
#
# Steps, in the order given (logs land in $OUT: build.log, test.log, sanitize.log, bench.log
# with bench_FILTER.json per filter, compare.md; at most 8 files come back from a call):
#   configure         only the configuration below (a check of the carried dependencies)
#   build             configure build-gpu (Release, sm_90 only, tests, benchmarks, torch) and
#   build:T1,T2       build everything, or only the named targets (build:bench_cuda,qfleet_torch);
#                     build-gpu is kept only while the machine stays warm (30 s after a call)
#   test              every ctest entry but the Python one (GPU tests included), then the
#                     CUDA-tensor Python tests and the meta-control app's against QuTiP
#   gtest             only the C++ GPU tests (CudaBackend*, OpenCudaBackend*, MixedCuda*, CudaGraph*, and
#                     qfleet_graph_tests: qfleet::train's graph mode, build:qfleet_graph_tests)
#   sanitize          compute-sanitizer memcheck and racecheck over the CUDA tests
#                     (gtest, sanitize and bench take build-gpu's programs, or without a
#                     build the ones scripts/gpu_prepare.sh --binaries left in .gpu-bin:
#                     carry ".gpu-bin" and ".gpu/debs" and skip `build`)
#   bench:FILTER      bench_cuda, the benchmarks matching FILTER, 5 repetitions, medians
#   compare           bench/device_compare.py --device cuda (PyTorch on the same GPU)
#   py:FILE,FILE      only those Python test files (under tests/python) with the test step's settings;
#                     with GPU_RUN_WRAP set (e.g. "cuda-gdb -batch -ex run -ex bt --args") under it
#   meta              the meta-control app end to end with device = cpu and cuda (the fast preset,
#                     then meta_batch = 4096 for 20 iterations); the timings of each report
# Exits non-zero when a step fails, after running the rest (a failed build stops at once).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
for s in "$@"; do  # a typo must not cost a build on borrowed time
  case $s in
    configure | build | build:?* | test | gtest | sanitize | bench:?* | compare | meta | py:?*) ;;
    *) echo "gpu_run: unknown step '$s' (configure, build, build:TARGETS, test, gtest, sanitize, bench:FILTER, compare, meta, py:FILES)"
       exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "usage: scripts/gpu_run.sh STEP... (see the top of this file)"; exit 2; }
out=${OUT:-$root/gpu-out}
mkdir -p "$out"
jobs=$(nproc)

# What the machine lacks, from .gpu (scripts/gpu_prepare.sh): into a prefix, never over /.
deps=/opt/qfleet-deps
if [ ! -f "$deps/.done" ]; then
  [ -d .gpu/debs ] || { echo "gpu_run: no .gpu/debs: run scripts/gpu_prepare.sh and carry .gpu"; exit 2; }
  mkdir -p "$deps"
  for f in .gpu/debs/*.deb; do dpkg -x "$f" "$deps"; done
  if compgen -G ".gpu/wheels/*.whl" >/dev/null; then  # not carried for the C++-only steps
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$deps/site" \
      .gpu/wheels/*.whl || exit 2
  fi
  touch "$deps/.done"
fi
export CMAKE_PREFIX_PATH="$deps/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
py_path="$root/python:$deps/site"
torch_lib="$root/build-gpu/adapters/torch/libqfleet_torch.so"

# A C++ program: build-gpu's, else the one carried gzipped in .gpu-bin (unpacked once).
prog() {
  local name=$1 built
  case $name in bench_cuda) built=build-gpu/bench/$name ;; *) built=build-gpu/tests/$name ;; esac
  if [ -x "$built" ]; then
    echo "$built"
  elif [ -f ".gpu-bin/$name.gz" ]; then
    mkdir -p /tmp/qfleet-bin
    [ -x "/tmp/qfleet-bin/$name" ] || { gunzip -c ".gpu-bin/$name.gz" >"/tmp/qfleet-bin/$name" && chmod +x "/tmp/qfleet-bin/$name"; }
    echo "/tmp/qfleet-bin/$name"
  else
    echo "gpu_run: no $name: run the build step, or carry .gpu-bin (scripts/gpu_prepare.sh --binaries)" >&2
    return 1
  fi
}
export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:/usr/local/cuda/lib64:/usr/local/cuda/lib"

exec 3>&1  # the terminal, for what a step shows beside its log
failed=()
step() {  # step NAME LOG COMMAND...: runs and logs one step, remembers a failure
  local name=$1 log=$2
  shift 2
  local t0=$SECONDS
  echo "== $name"
  if "$@" >>"$out/$log" 2>&1; then
    echo "   ok in $((SECONDS - t0)) s ($log)"
  else
    echo "   FAILED in $((SECONDS - t0)) s ($log); its end:"
    tail -n 40 "$out/$log"
    failed+=("$name")
  fi
}

configure() {
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv || true
  nvcc --version | tail -n 2
  python3 -c "import torch; print('torch', torch.__version__, torch.cuda.is_available() and torch.cuda.get_device_name(0))"
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DQFLEET_BUILD_TESTS=ON -DQFLEET_BUILD_BENCH=ON \
    -DQFLEET_BUILD_TORCH=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DTORCH_CUDA_ARCH_LIST=9.0 \
    -DPython3_EXECUTABLE="$(command -v python3)"
}

build() {  # build [comma-separated targets]
  configure || return 1
  if [ -n "${1:-}" ]; then
    cmake --build build-gpu -j"$jobs" --target ${1//,/ }
  else
    cmake --build build-gpu -j"$jobs"
  fi
}

run_tests() {  # every part runs; the step fails when one did
  local rc=0
  ctest --test-dir build-gpu -j8 --output-on-failure -E '^python_tests$' || rc=1
  gpu_gtests || rc=1
  py_tests test_cuda_tensors.py,test_meta_control.py || rc=1
  return $rc
}

py_tests() {  # py_tests FILE,FILE (under tests/python): the CUDA-tensor settings, optionally under $GPU_RUN_WRAP
  local files=() f
  for f in ${1//,/ }; do files+=("$root/tests/python/$f"); done
  # shellcheck disable=SC2086
  (cd "$(mktemp -d)" && PYTHONPATH="$py_path" QFLEET_TORCH_LIBRARY="$torch_lib" \
    QFLEET_META_LIBRARY="$root/build-gpu/apps/meta_control/libqfleet_meta.so" \
    QFLEET_CLI="$root/build-gpu/tools/qfleet" QFLEET_META="$root/build-gpu/apps/meta_control/qfleet-meta" \
    QFLEET_EXPECT_CUDA_BACKEND=1 ${GPU_RUN_WRAP:-} python3 -m pytest -q -p no:cacheprovider -rs "${files[@]}")
}

gpu_gtests() {  # the C++ GPU tests, which must run here, not skip
  local t c log rc=0
  t=$(prog qfleet_tests) || return 1
  # MixedCuda.WithoutAGpu* skips by design where a GPU is visible; both programs run even when one
  # fails, and a qfleet_cuda_tests not carried fails the step after qfleet_tests has run
  log=$("$t" --gtest_filter='CudaBackend*:OpenCudaBackend*:LaunchShape*:MixedCuda*:-MixedCuda.WithoutAGpu*' 2>&1) || rc=1
  if c=$(prog qfleet_cuda_tests); then log+=$'\n'$("$c" 2>&1) || rc=1; else rc=1; fi
  # qfleet::train's graph mode (issue 20): capture and replay against eager, the fallback
  if g=$(prog qfleet_graph_tests); then log+=$'\n'$("$g" 2>&1) || rc=1; fi
  echo "$log" | grep -E '^\[ +(OK|SKIPPED|FAILED) +\]'
  if echo "$log" | grep -q '^\[  SKIPPED \]'; then echo "GPU tests skipped on a GPU machine"; rc=1; fi
  return $rc
}

sanitize() {  # what never ran under the sanitizer first (the open-system tests); RandomCircuits, bound by its
              # dense reference, is left out (the whole list under memcheck ran past 200 s on an H100)
  local t c
  t=$(prog qfleet_tests) && c=$(prog qfleet_cuda_tests) || return 1
  compute-sanitizer --tool memcheck --error-exitcode 1 "$t" --gtest_brief=1 --gtest_filter='OpenCudaBackend*:MixedCuda*' || return 1
  compute-sanitizer --tool racecheck --error-exitcode 1 "$t" --gtest_brief=1 \
    --gtest_filter='OpenCudaBackend.EveryLaunchShape*:CudaBackend.EveryPinnedShape*' || return 1
  compute-sanitizer --tool memcheck --error-exitcode 1 "$c" --gtest_brief=1 || return 1
  # the circuit tests last and bounded: the whole list ran past 200 s once (a timeout is reported, not hidden)
  timeout "${GPU_SANITIZE_CIRCUITS_S:-150}" compute-sanitizer --tool memcheck --error-exitcode 1 "$t" --gtest_brief=1 \
    --gtest_filter='CudaBackend*:-CudaBackend.RandomCircuits*'
}

meta() {  # the app's report timings, cpu beside cuda
  local m=build-gpu/apps/meta_control/qfleet-meta dev keys rc=0
  [ -x "$m" ] || { echo "gpu_run: no $m: build it"; return 1; }
  for keys in "" "--set meta_batch=4096 --set iterations=20 --set robust_iterations=20 --set grape_iterations=20"; do
    for dev in cpu cuda; do
      rm -rf /tmp/qfleet-meta-run
      # shellcheck disable=SC2086
      "$m" $keys --set device=$dev --out /tmp/qfleet-meta-run --quiet || { rc=1; continue; }
      python3 -c "import json,sys; r=json.load(open('/tmp/qfleet-meta-run/report.json')); \
print(sys.argv[1], sys.argv[2] or 'fast preset', 'device used', r['device']['used'], 'timings_s', json.dumps(r['timings_s']), \
'val_after', r['validation'].get('mean_after', r['validation']))" "$dev" "$keys"
    done
  done
  return $rc
}

bench() {  # bench FILTER LABEL (the table is printed too)
  local b
  b=$(prog bench_cuda) || return 1
  "$b" --benchmark_filter="$1" --benchmark_repetitions=5 \
    --benchmark_report_aggregates_only=true --benchmark_out="$out/bench_$2.json" --benchmark_out_format=json |
    tee /dev/fd/3
  [ -s "$out/bench_$2.json" ]  # nothing measured is a failure here
}

compare() {
  PYTHONUNBUFFERED=1 PYTHONPATH="$py_path" QFLEET_TORCH_LIBRARY="$torch_lib" \
    python3 bench/device_compare.py --device cuda
}

for s in "$@"; do
  case $s in
    configure) step configure build.log configure ;;
    build) step build build.log build ;;
    build:*) step "$s" build.log build "${s#build:}" ;;
  esac
  case ${failed[*]:-} in
    *build* | *configure*) echo "gpu_run: the build failed; nothing else runs"; exit 1 ;;
  esac
  case $s in
    test) step test test.log run_tests ;;
    gtest) step gtest test.log gpu_gtests ;;
    sanitize) step sanitize sanitize.log sanitize ;;
    bench:*)
      label=$(printf %s "${s#bench:}" | tr -c 'A-Za-z0-9._-' '_')
      step "$s" bench.log bench "${s#bench:}" "$label" ;;
    compare) step compare compare.md compare && cat "$out/compare.md" ;;
    meta) step meta meta.log meta && cat "$out/meta.log" ;;
    py:*) step "$s" py.log py_tests "${s#py:}" ;;
  esac
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "gpu_run: failed: ${failed[*]}"
  exit 1
fi
echo "gpu_run: all steps passed"
