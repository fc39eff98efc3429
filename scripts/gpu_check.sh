#!/usr/bin/env bash
# qfleet's GPU checks in one call that ends by a deadline, for a machine with one NVIDIA GPU
# and no network (no package registry, no Debian -dev packages). What needs no GPU is done
# before, on a machine with network, by scripts/gpu_prepare.sh: it builds the C++ test and
# benchmark programs for sm_90 and packs them with the build dependencies into the GPU
# bundle, .gpu/, which goes to the GPU machine beside the source tree, and prints the
# command to run there.
#
#   scripts/gpu_check.sh [check]   1 probe; 2 the C++ GPU tests from the bundle's programs;
#                                  3 meanwhile the device build of what links this
#                                  machine's PyTorch (on the bundle's library), then
#                                  graph mode's tests, the CUDA graph cases and the Python
#                                  CUDA-tensor suite; 4 compute-sanitizer
#   scripts/gpu_check.sh figures   1 probe; the benchmark figures (bench.json: the GPU rows
#                                  and the same workloads on every CPU core), an ncu summary
#                                  of the target kernels (ncu.txt), dynamiqs on JAX's GPU
#                                  beside the open-system rows (peers.md, with the bundle's
#                                  .gpu/wheels and .gpu/peers), and with the device build the
#                                  PyTorch comparison, a training step eager and as a CUDA
#                                  graph, and the meta-control and qGAN apps with device cuda
#                                  (apps.json: the research apps' keys, scripts/apps_figures.py)
#   scripts/gpu_check.sh apps      1 probe; with the device build the apps on cuda alone
#   scripts/gpu_check.sh check apps  check's phases with the apps before the sanitizers: one
#                                  call on check's bundle that both tests and measures the
#                                  apps
#   scripts/gpu_check.sh check figures  check's and figures' phases from check's bundle, the
#                                  GPU kept busy while the device build runs: the tests and
#                                  ncu beside the build, the sanitizers (on its
#                                  qfleet_cuda_tests) and the benchmark rows after it, on
#                                  quiet CPU cores, then the Python suite, the PyTorch
#                                  comparison, the training step and the apps as far as the
#                                  deadline allows (dynamiqs where figures' bundle is there);
#                                  a second call, `apps`, on the same machine finishes them
#
# GPU_DEADLINE_S (default 420): the call's seconds; each phase runs under `timeout`
# sized from what is left. OUT (default gpu-out/): summary.txt, one line per phase,
#   PHASE STATUS SECONDS PASSED/FAILED/SKIPPED   (STATUS: ok, FAILED, TIMEOUT, UNAVAILABLE)
# and each phase's log, written as it runs so that a killed call still leaves what ran;
# at most 8 files, so that the results are few to copy back (the logs beyond summary.txt
# and probe.txt are packed into results.tgz when there are more). Without a GPU every GPU
# phase is UNAVAILABLE and the call takes seconds (the test suite runs it so). Exit status:
# 0 when every phase is ok or UNAVAILABLE, 1 otherwise. QFLEET_GPU_BUNDLE (default .gpu):
# where the bundle's programs and dependencies are. QFLEET_GPU_DEVICE_BUILD=0: no device
# build (it takes minutes of the deadline): its phases are UNAVAILABLE.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
usage="usage: scripts/gpu_check.sh [check|figures|apps|check apps|check figures]"
mode="${*:-check}"
case $mode in check | figures | apps | "check apps" | "check figures") ;; *) echo "$usage"; exit 2 ;; esac
start=$SECONDS
deadline=$((start + ${GPU_DEADLINE_S:-420}))
out=${OUT:-$root/gpu-out}
bundle=${QFLEET_GPU_BUNDLE:-.gpu}
mkdir -p "$out"
summary=$out/summary.txt
: >"$summary"
bin=${TMPDIR:-/tmp}/qfleet-gpu-bin
deps=${TMPDIR:-/tmp}/qfleet-gpu-deps
worst=0

left() { echo $((deadline - SECONDS)); }
cap() {  # cap SECONDS: that many, or what is left of the call less 10 s for the summary
  local l=$(($(left) - 10))
  [ "$1" -lt "$l" ] && echo "$1" || echo $((l > 1 ? l : 1))
}
record() {  # record PHASE STATUS T0 COUNTS
  echo "$1 $2 $((SECONDS - $3)) ${4:--}" | tee -a "$summary"
  case $2 in ok | UNAVAILABLE) ;; *) worst=1 ;; esac
}
status_of() {  # status_of RC: ok, TIMEOUT (timeout's 124/137) or FAILED
  case $1 in 0) echo ok ;; 124 | 137) echo TIMEOUT ;; *) echo FAILED ;; esac
}

# --- 1. probe ------------------------------------------------------------------------
gpus=$( (nvidia-smi -L 2>/dev/null || true) | grep -c '^GPU')
case ${CUDA_VISIBLE_DEVICES-unset} in "" | -1) gpus=0 ;; esac
probe() {
  echo "revision: $(cat $bundle/REVISION 2>/dev/null || git rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "cores: $(nproc); memory: $(awk '/MemTotal/ {print int($2 / 1048576) " GiB"}' /proc/meminfo)"
  if [ "$gpus" -gt 0 ]; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
  else
    echo "GPU: none visible (nvidia-smi absent or sees no device, or CUDA_VISIBLE_DEVICES hides them)"
  fi
  echo "nvcc: $(nvcc --version 2>/dev/null | tail -n 1 || echo absent)"
  echo "torch: $(timeout 60 python3 -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available())' 2>&1 | tail -n 1)"
  echo "compute-sanitizer: $(compute-sanitizer --version 2>/dev/null | tail -n 1 || echo absent)"
  echo "ncu: $(ncu --version 2>/dev/null | tail -n 1 || echo absent)"
  echo "bundled programs: $(ls "$bundle/bin" 2>/dev/null | tr '\n' ' ')"
  echo "bundled dependencies: $(ls "$bundle/debs" 2>/dev/null | wc -l) packages, $(ls "$bundle/wheels" 2>/dev/null | wc -l) wheels"
}
t0=$SECONDS
probe >"$out/probe.txt" 2>&1
cat "$out/probe.txt"
if [ "$gpus" -gt 0 ]; then record probe ok "$t0" "$gpus GPU"; else record probe UNAVAILABLE "$t0" "no GPU"; fi

unavailable() {  # the GPU phases of this mode, when there is no GPU
  local p
  for p in "$@"; do record "$p" UNAVAILABLE "$SECONDS" "no GPU"; done
  echo "gpu_check: no GPU visible: nothing else runs ($((SECONDS - start)) s)"
  exit $worst
}
if [ "$gpus" -eq 0 ]; then
  case $mode in
    check) unavailable gtest device_build python sanitize ;;
    "check apps") unavailable gtest device_build python apps sanitize ;;
    apps) unavailable device_build apps ;;
    "check figures") unavailable gtest device_build ncu sanitize bench peers python compare train_graph apps ;;
    *) unavailable bench ncu peers compare train_graph apps ;;
  esac
fi

# --- what the phases share -------------------------------------------------------------
unxz_once() {  # unxz_once FILE.xz OUT: unpacked to OUT unless it is there already
  [ -f "$2" ] && return 0
  mkdir -p "$(dirname "$2")"
  { xz -dc "$1" 2>/dev/null ||  # (Python's lzma where xz itself is not installed)
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$1"
  } >"$2.part" && mv "$2.part" "$2"
}
prog() {  # prog NAME: a bundled program (.gpu/bin/NAME.xz, unpacked once) or build-gpu's
  local name=$1 built
  case $name in bench_cuda) built=build-gpu/bench/$name ;; *) built=build-gpu/tests/$name ;; esac
  if [ -f "$bundle/bin/$name.xz" ]; then
    unxz_once "$bundle/bin/$name.xz" "$bin/$name" && chmod +x "$bin/$name" || return 1
    echo "$bin/$name"
  elif [ -x "$built" ]; then
    echo "$built"
  else
    echo "gpu_check: no program $name (neither in the bundle, $bundle/bin, from scripts/gpu_prepare.sh, nor in build-gpu)" >&2
    return 1
  fi
}
gtest_counts() {  # gtest_counts LOG: passed/failed/skipped of one program's run
  local p f s
  p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$1" | tail -n 1)
  f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$1" | tail -n 1)
  s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$1" | tail -n 1)
  echo "${p:-0}/${f:-0}/${s:-0}"
}

# The bundle's Debian dependencies (and wheels), unpacked once into a prefix, never over /:
# the bundled benchmark program links Google Benchmark from there, the device build all.
unpack_deps() {
  [ -f "$deps/.done" ] && return 0
  [ -d "$bundle/debs" ] || return 1
  mkdir -p "$deps"
  for f in "$bundle"/debs/*.deb; do dpkg -x "$f" "$deps" || return 1; done
  if compgen -G "$bundle/wheels/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$deps/site" "$bundle"/wheels/*.whl ||
      return 1
  fi
  touch "$deps/.done"
}
unpack_deps >"$out/deps.log" 2>&1 || echo "gpu_check: the bundled dependencies in $bundle/debs did not unpack (deps.log)"

# The device build: what must link this machine's PyTorch (the operators, the apps,
# graph mode's tests), and the CUDA graph and sanitizer cases (qfleet_cuda_tests). On the
# library in check's bundle (.gpu/lib: built for sm_90 from the same commit), it compiles
# none of the library's kernels, most of a cold build; should that fail, it builds the
# library here as well.
device_build() {
  [ -f "$deps/.done" ] || { echo "no unpacked dependencies"; return 1; }
  local lib=""
  if [ -f "$bundle/lib/libqfleet.a.xz" ]; then  # (unpacked once: a second call finds it)
    lib=$deps/libqfleet.a
    unxz_once "$bundle/lib/libqfleet.a.xz" "$lib" || { echo "== $bundle/lib/libqfleet.a.xz did not unpack"; lib=""; }
  fi
  if [ -n "$lib" ]; then
    echo "== the device build on the bundled library ($bundle/lib/libqfleet.a.xz)"
    device_build_with "$lib" && return 0
    echo "== the device build on the bundled library failed: the library is built here too"
  fi
  device_build_with ""
}
device_build_with() {  # device_build_with LIBRARY: on that prebuilt library, or none ("")
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DQFLEET_BUILD_TESTS=ON -DQFLEET_BUILD_BENCH=ON \
    -DQFLEET_BUILD_TORCH=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DTORCH_CUDA_ARCH_LIST=9.0 -DQFLEET_PREBUILT_LIBRARY="$1" \
    -DCMAKE_PREFIX_PATH="$deps/usr" -DPython3_EXECUTABLE="$(command -v python3)" || return 1
  cmake --build build-gpu -j"$(nproc)" --target qfleet_torch qfleet_graph_tests qfleet_meta qfleet_meta_cli qfleet_cli \
    qfleet_qgan_cli qfleet_classify_cli qfleet_rl_cli qfleet_rl_tests train_graph_step qfleet_cuda_tests
}
export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
build_pid=""
build_t0=$SECONDS
want_build=${QFLEET_GPU_DEVICE_BUILD:-1}
no_build() {  # the status of a phase that needs the device build when there is none
  [ "$want_build" = 0 ] && echo UNAVAILABLE || echo FAILED
}
if [ "$want_build" != 0 ] && [ -d "$bundle/debs" ]; then
  (timeout "$(cap 400)" bash -c "$(declare -f device_build device_build_with unxz_once); deps='$deps'; bundle='$bundle'; device_build" >"$out/build.log" 2>&1
   echo $? >"$out/.build_rc") &
  build_pid=$!
fi
wait_build() {  # wait_build PHASE: records the device build once; 0 when it built
  if [ -z "$build_pid" ]; then
    local why="no bundled dependencies ($bundle/debs)"
    [ "$want_build" != 0 ] || why="QFLEET_GPU_DEVICE_BUILD=0"
    [ -f "$out/.build_recorded" ] || { record device_build "$(no_build)" "$build_t0" "$why"; touch "$out/.build_recorded"; }
    return 1
  fi
  wait "$build_pid" 2>/dev/null
  local rc
  rc=$(cat "$out/.build_rc" 2>/dev/null || echo 1)
  if [ ! -f "$out/.build_recorded" ]; then
    record device_build "$(status_of "$rc")" "$build_t0"
    [ "$rc" = 0 ] || tail -n 30 "$out/build.log"
    touch "$out/.build_recorded"
  fi
  [ "$rc" = 0 ]
}
py_env() {  # the Python suite's environment on the device build
  env PYTHONPATH="$root/python:$deps/site" QFLEET_TORCH_LIBRARY="$root/build-gpu/adapters/torch/libqfleet_torch.so" \
    QFLEET_META_LIBRARY="$root/build-gpu/apps/meta_control/libqfleet_meta.so" QFLEET_CLI="$root/build-gpu/tools/qfleet" \
    QFLEET_META="$root/build-gpu/apps/meta_control/qfleet-meta" QFLEET_EXPECT_CUDA_BACKEND=1 QFLEET_EXPECT_GPU=1 \
    PYTHONUNBUFFERED=1 "$@"
}

gtest_phase() {
  # --- 2. the C++ GPU tests from the bundled programs, as shards run all at once ------------
  # (the CUDA graph cases, qfleet_cuda_tests, come from the device build: the Python phase)
  # Their time is mostly the dense CPU reference on one core (207 s one family after another
  # on the H200 of 2026-11-29, the longest test 44 s): the slow tests are shards of their
  # own, every shard starts at once with two OpenMP threads that wait passively, so the
  # phase takes about its slowest test. Each family's line sums its shards; a shard that
  # runs no test (a renamed test) fails, as does a skip where a GPU is visible.
  local shards=(
    circuits:qfleet_tests:'CudaBackend.RandomCircuits*'
    circuits:qfleet_tests:'CudaBackend.EveryPinnedShape*'
    circuits:qfleet_tests:'CudaBackend.FusedRuns*'
    circuits:qfleet_tests:'CudaBackend*:LaunchShape*:DeviceChoice*:-CudaBackend.RandomCircuits*:CudaBackend.EveryPinnedShape*:CudaBackend.FusedRuns*:DeviceChoice.CudaWithoutAGpu*'
    open:qfleet_tests:'OpenCudaBackend.EveryLaunchShape*'
    open:qfleet_tests:'OpenCudaBackend*:OpenDevice*:-OpenCudaBackend.EveryLaunchShape*:OpenDevice.WithoutAGpu*'
    density:qfleet_tests:'DmCuda.EveryPinnedBlockSize*'
    density:qfleet_tests:'DmCuda*:-DmCuda.EveryPinnedBlockSize*:DmCuda.WithoutAGpu*'
    matrices:qfleet_tests:'DmMatrix.EveryChannel*'
    matrices:qfleet_tests:'OpenMatrix*'
    matrices:qfleet_tests:'BackendMatrix.EveryGate*'
    matrices:qfleet_tests:'Executors*:BackendMatrix*:DmMatrix*:-BackendMatrix.EveryGate*:DmMatrix.EveryChannel*')
  local dir i s name p filter t r rc=0 counts="" pids=() fams=()
  local -A sums=()
  t0=$SECONDS
  : >"$out/gtest.log"
  dir=$(mktemp -d)
  i=0
  for s in "${shards[@]}"; do  # (each program unpacked here, once, before any shard starts)
    IFS=: read -r name p filter <<<"$s"
    if t=$(prog "$p" 2>>"$out/gtest.log"); then
      OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive timeout "$(cap 240)" "$t" --gtest_filter="$filter" >"$dir/$i.log" 2>&1 &
      pids[i]=$!
    else
      echo missing >"$dir/$i.rc"
    fi
    i=$((i + 1))
  done
  for i in "${!pids[@]}"; do wait "${pids[i]}"; echo $? >"$dir/$i.rc"; done
  i=0
  for s in "${shards[@]}"; do  # (in order: a family's shards stand together)
    IFS=: read -r name p filter <<<"$s"
    [ -n "${sums[$name]+set}" ] || { fams+=("$name"); sums[$name]=0/0/0; }
    r=$(cat "$dir/$i.rc")
    if [ "$r" = missing ]; then
      echo "== $name: the program $p is not in the bundle: FAILED" | tee -a "$out/gtest.log"
      sums[$name]=missing
      rc=1
    else
      echo "== $name: $p --gtest_filter=$filter" | tee -a "$out/gtest.log"
      cat "$dir/$i.log" >>"$out/gtest.log"
      if [ "$r" -ne 0 ] || grep -q '^\[  SKIPPED \]' "$dir/$i.log"; then rc=$((r ? r : 1)); fi
      if ! grep -q '^\[==========\] Running [1-9]' "$dir/$i.log"; then
        echo "== $name: --gtest_filter=$filter ran no test: FAILED" | tee -a "$out/gtest.log"
        rc=$((rc ? rc : 1))
      fi
      [ "${sums[$name]}" = missing ] || sums[$name]=$(echo "${sums[$name]} $(gtest_counts "$dir/$i.log")" |
        awk '{split($1, a, "/"); split($2, b, "/"); print a[1] + b[1] "/" a[2] + b[2] "/" a[3] + b[3]}')
    fi
    i=$((i + 1))
  done
  for name in "${fams[@]}"; do counts+="$name:${sums[$name]} "; done
  rm -rf "$dir"
  record gtest "$(status_of $rc)" "$t0" "$counts"
  grep -E '^\[  (FAILED|SKIPPED) \]' "$out/gtest.log" | head -n 20
}

python_phase() {  # python_phase [CAP]: the pytest run's seconds at most (default 300)
  # --- 3. graph mode and the Python CUDA-tensor suite on the device build ------------------
  local log rc t
  t0=$SECONDS
  if wait_build; then
    log=$(mktemp)
    {
      echo "== TrainGraph: build-gpu/tests/qfleet_graph_tests"
      timeout "$(cap 120)" build-gpu/tests/qfleet_graph_tests >"$log.graph" 2>&1
      rc=$?
      cat "$log.graph"
      echo "rc $rc"
      # The engine's calls on device buffers captured in CUDA graphs (a skip fails here).
      echo "== CudaGraph: qfleet_cuda_tests"
      { t=$(prog qfleet_cuda_tests) && timeout "$(cap 120)" "$t" --gtest_filter='CudaGraph*'; } >"$log.cg" 2>&1
      rc=$?
      cat "$log.cg"
      grep -q '^\[  SKIPPED \]' "$log.cg" && rc=1
      echo "rc $rc"
      # The RL environments stepped as tensors on cuda against the same tensors on the CPU
      # (a skip here means no GPU was seen: a failure on this machine).
      echo "== RlTensorEnvs: build-gpu/tests/qfleet_rl_tests"
      timeout "$(cap 120)" build-gpu/tests/qfleet_rl_tests --gtest_filter='RlTensorEnvs.*' >"$log.rl" 2>&1
      rc=$?
      cat "$log.rl"
      grep -q '^\[  SKIPPED \]' "$log.rl" && rc=1
      echo "rc $rc"
      echo "== pytest tests/python/test_cuda_tensors.py test_meta_control.py, the PennyLane devices on cuda" \
        "(QFLEET_EXPECT_GPU=1: a skip fails)"
      (cd "$(mktemp -d)" && py_env timeout "$(cap "${1:-300}")" python3 -m pytest -q -p no:cacheprovider -rs \
        "$root/tests/python/test_cuda_tensors.py" "$root/tests/python/test_meta_control.py" \
        "$root/tests/python/test_pennylane_device.py::test_engine_device_option" 2>&1)
      echo "rc $?"
    } | tee "$log" >"$out/python.log"
    rc=0
    grep -q '^rc [1-9]' "$log" && rc=1
    grep -q '^rc 12[4-9]\|^rc 137' "$log" && rc=124
    record python "$(status_of $rc)" "$t0" "graph:$(gtest_counts "$log.graph") cuda_graph:$(gtest_counts "$log.cg") rl:$(gtest_counts "$log.rl") pytest:$(sed -n 's/^=* *\(.*passed.*\) in .*/\1/p' "$log" | tail -n 1 | tr ' ,' '_')"
    rm -f "$log" "$log.graph" "$log.cg" "$log.rl"
  else
    record python "$(no_build)" "$t0" "no device build"
  fi
}

sanitize_phase() {
  # --- 4. compute-sanitizer on the small dedicated cases ---------------------------------
  local p rc
  t0=$SECONDS
  wait_build >/dev/null  # (the device build makes qfleet_cuda_tests where the bundle has none)
  if ! p=$(prog qfleet_cuda_tests 2>/dev/null); then
    record sanitize "$(no_build)" "$t0" "qfleet_cuda_tests neither bundled nor built"
    return
  fi
  if ! command -v compute-sanitizer >/dev/null; then
    record sanitize UNAVAILABLE "$t0" "no compute-sanitizer on this machine"
    return
  fi
  : >"$out/sanitize.log"
  local tool results="" worst_tool=0
  for tool in memcheck racecheck initcheck synccheck; do
    if [ "$(left)" -lt 25 ]; then results+="$tool:TIMEOUT "; worst_tool=124; continue; fi
    echo "== compute-sanitizer --tool $tool" >>"$out/sanitize.log"
    timeout "$(cap 60)" compute-sanitizer --tool "$tool" --error-exitcode 1 "$p" --gtest_brief=1 \
      --gtest_filter='SanitizerCases.*' >>"$out/sanitize.log" 2>&1
    rc=$?
    results+="$tool:$(status_of $rc) "
    [ $rc -eq 0 ] || { [ $worst_tool -ne 0 ] || worst_tool=$rc; }
  done
  record sanitize "$(status_of $worst_tool)" "$t0" "$results"
}

bench_phase() {
  # --- the benchmark rows of docs/benchmarks.md, medians of 5 ------------------------------
  local p rc
  t0=$SECONDS
  # the GPU targets' rows (Target, Shape/n4/B100, Layer/n4/B1000000, Shape/n10/B10000,
  # Open/d2/B100000, OpenShape/d4, Mixed, MixedShape) and the smaller batches beside them, and every */cpu row
  local rows='^(Target/|Layer/n4/B(100|10000|1000000)/|Open/d2/B(100|100000)/|Mixed/|MixedShape/|OpenShape/d(2|4)/|Shape/n4/B100/|Shape/n10/B10000/)|/cpu/real_time$'
  if p=$(prog bench_cuda 2>>"$out/bench.log"); then
    timeout "$(cap 200)" "$p" --benchmark_filter="$rows" --benchmark_repetitions=5 \
      --benchmark_min_time=0.2 --benchmark_report_aggregates_only=true --benchmark_out="$out/bench.json" --benchmark_out_format=json \
      2>&1 | tee -a "$out/bench.log"
    rc=${PIPESTATUS[0]}
    [ -s "$out/bench.json" ] || rc=1
    record bench "$(status_of $rc)" "$t0" "$(grep -c '_median' "$out/bench.log") medians"
  else
    record bench FAILED "$t0" "bench_cuda not bundled"
  fi
}

ncu_phase() {
  # --- ncu: duration, occupancy, stalls, memory throughput, registers of the targets -------
  # (ncu replays each kernel alone and reads the device's counters: a build on the CPU cores
  # beside it changes the call's seconds, not the figures)
  local p row rc_ncu=0
  t0=$SECONDS
  if p=$(prog bench_cuda 2>/dev/null) && command -v ncu >/dev/null; then
    : >"$out/ncu.txt"
    # the first three kernels of each target row (a forward + adjoint call launches two or more)
    for row in 'Target/n10_g30_B100/fwd\+bwd/c64' 'Open/d2/B100000/fwd\+grad/c64' 'Layer/n4/B10000/fwd\+bwd/c64' \
               'Mixed/n4/B10000/fwd\+bwd/c64'; do
      echo "== $row" >>"$out/ncu.txt"
      timeout "$(cap 45)" ncu --clock-control none --launch-count 3 --section SpeedOfLight --section Occupancy \
        --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis "$p" \
        --benchmark_filter="^$row/manual_time\$" --benchmark_min_time=0.01 >>"$out/ncu.txt" 2>&1 || rc_ncu=$?
    done
    record ncu "$(status_of $rc_ncu)" "$t0" "$(grep -c 'Duration' "$out/ncu.txt") kernels"
  else
    record ncu UNAVAILABLE "$t0" "no ncu or no bench_cuda"
  fi
}

peers_phase() {
  # --- dynamiqs on JAX's GPU beside the open-system rows, checked against qfleet first --------
  local rc
  t0=$SECONDS
  if [ ! -f "$bundle/peers/open_ref.npz" ]; then
    record peers UNAVAILABLE "$t0" "no bundled peers ($bundle/peers)"
  else
    (PYTHONPATH="$deps/site" PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false timeout "$(cap 180)" \
      python3 bench/compare/open_gpu_peer.py run --reference "$bundle/peers/open_ref.npz" --bench-json "$out/bench.json" \
      --require-gpu) >"$out/peers.md" 2>&1
    rc=$?
    record peers "$(status_of $rc)" "$t0" "$(grep -c '^| Open/' "$out/peers.md") rows"
    [ $rc -eq 0 ] || tail -n 5 "$out/peers.md"
  fi
}

torch_phase() {
  # --- with the device build: PyTorch on the same GPU, and a training step as a CUDA graph ---
  t0=$SECONDS
  if wait_build; then
    (py_env timeout "$(cap 150)" python3 bench/compare/torch_batched.py --device cuda) >"$out/compare.md" 2>&1
    record compare "$(status_of $?)" "$t0"
    t0=$SECONDS
    timeout "$(cap 90)" build-gpu/bench/train_graph_step >"$out/train_graph.json" 2>&1
    record train_graph "$(status_of $?)" "$t0" "$(sed -n 's/.*"eager_over_graph": \([0-9.]*\).*/eager\/graph=\1/p' "$out/train_graph.json")"
  else
    record compare "$(no_build)" "$t0" "no device build"
    record train_graph "$(no_build)" "$t0" "no device build"
  fi
}

apps_phase() {
  # --- the research apps on cuda (and the meta-control app on this machine's CPU cores) ----
  local rc gpu_name
  t0=$SECONDS
  if ! wait_build; then
    record apps "$(no_build)" "$t0" "no device build"
    return
  fi
  rm -rf /tmp/qfleet-gpu-apps
  {
    # The meta-control app's paper preset and meta_batch = 4096 on cuda and on this
    # machine's CPU cores (apps.json's keys, scripts/apps_figures.py), short budgets (the paper
    # preset's 40 iterations spread graph mode's warm-up and capture, on its 4th, thinly); then
    # device = automatic at both sizes (its choice and both timings: the report's device.why).
    for run in paper-gpu:cuda:40:32 paper-cpu:cpu:40:32 4096-gpu:cuda:3:4096 4096-cpu:cpu:3:4096 \
               paper-auto:automatic:1:32 4096-auto:automatic:1:4096; do
      IFS=: read -r name dev iters batch <<<"$run"
      timeout "$(cap 60)" build-gpu/apps/meta_control/qfleet-meta --preset paper --set device=$dev \
        --set iterations=$iters --set meta_batch=$batch --set robust_iterations=2 --set grape_iterations=2 --quiet \
        --out /tmp/qfleet-gpu-apps/meta-$name &&
        python3 -c "import json; r = json.load(open('/tmp/qfleet-gpu-apps/meta-$name/report.json')); \
print('meta $name', r['device']['used'], r['timings_s']['per_iteration_ms'], 'ms per iteration;', r['device']['why'], \
'; meta_step', r['device'].get('meta_step'), r['device'].get('graph'))"
      echo "rc $?"
    done
    # The RL environments stepped as tensors on cuda: 2^20 qubit_x environments, random actions.
    timeout "$(cap 60)" build-gpu/apps/rl/qfleet-rl bench-env --env num_envs=1048576 --env device=cuda \
      --steps 30 --repeats 5 --json >/tmp/qfleet-gpu-apps/rl_env_gpu.json && cat /tmp/qfleet-gpu-apps/rl_env_gpu.json
    echo "rc $?"
    timeout "$(cap 90)" build-gpu/apps/qgan/qfleet-qgan train --device cuda --epochs 50 --quiet \
      --out /tmp/qfleet-gpu-apps/qgan && python3 -c "import json; r = json.load(open('/tmp/qfleet-gpu-apps/qgan/report.json')); \
print('qgan', r['timing']['device'], r['timing']['device_reason'], r['timing']['epoch_ms'], 'ms per epoch')"
    echo "rc $?"
    # The device classifier's training loop on cuda beside the same network and records in
    # plain PyTorch (bfloat16 autocast, pinned DataLoader), logits checked equal first.
    py_env env QFLEET_BUILD_DIR="$root/build-gpu" timeout "$(cap 120)" python3 bench/compare/qgan_classifier.py \
      --device cuda --epochs 5 --json /tmp/qfleet-gpu-apps/classifier_compare.json
    echo "rc $?"
    # The hybrid classifier's step breakdown on cuda (its quantum layer's share), on the bundled
    # records of Fashion-MNIST (check's bundle; the step's time does not depend on which images).
    if [ -d "$bundle/data/fashion-mnist" ]; then
      timeout "$(cap 90)" build-gpu/apps/classify/qfleet-classify --set device=cuda \
        --set data="$bundle/data/fashion-mnist" --set epochs=3 --quiet --out /tmp/qfleet-gpu-apps/classify
      echo "rc $?"
    else
      echo "qfleet-classify on cuda: not run, no $bundle/data/fashion-mnist (scripts/gpu_prepare.sh check bundles them)"
    fi
    # PennyLane (the bundled wheels: check's bundle) on the same GPU: a TorchLayer at batch 1024 on
    # qfleet.qubit with device="cuda" beside default.qubit's backprop, and the 12-qubit qGAN's epoch
    # and generator step with qfleet's layer and with default.qubit's backprop.
    if py_env python3 -c "import pennylane" 2>/dev/null; then
      py_env timeout "$(cap 90)" python3 bench/compare/pennylane_device.py --device cuda --repeats 5 --number 3 \
        --json /tmp/qfleet-gpu-apps/pennylane_cuda.json
      echo "rc $?"
      py_env timeout "$(cap 120)" python3 bench/compare/qgan.py --device cuda --threads "$(nproc)" \
        --json /tmp/qfleet-gpu-apps/qgan12_cuda.json
      echo "rc $?"
    else
      echo "pennylane_device.py and qgan.py --device cuda: not run, PennyLane is not in the bundle" \
        "(scripts/gpu_prepare.sh check bundles it)"
    fi
    # PPO beside per-task GRAPE with the rollout on cuda and on this machine's CPU cores: the
    # wall time until its validation mean comes within 0.002 of GRAPE's (compare.json).
    for dev in cuda cpu; do
      QFLEET_META="$root/build-gpu/apps/meta_control/qfleet-meta" timeout "$(cap 90)" build-gpu/apps/rl/qfleet-rl \
        compare --set device=$dev --set total_steps=128000 --meta-iterations 20 --quiet --out /tmp/qfleet-gpu-apps/ppo-$dev &&
        python3 -c "import json; c = json.load(open('/tmp/qfleet-gpu-apps/ppo-$dev/compare.json')); \
r = json.load(open('/tmp/qfleet-gpu-apps/ppo-$dev/report.json')); \
print('ppo $dev', c['reached_within_0.002'], c['gap_grape_minus_ppo'], c['ppo_wall_s'], 's;', \
      'rollout mode:', r['devices']['rollout_mode'])"
      echo "rc $?"
    done
    gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
    python3 scripts/apps_figures.py "$out/apps.json" --gpu "$gpu_name" \
      --meta-paper-gpu /tmp/qfleet-gpu-apps/meta-paper-gpu --meta-paper-cpu /tmp/qfleet-gpu-apps/meta-paper-cpu \
      --meta4096-gpu /tmp/qfleet-gpu-apps/meta-4096-gpu --meta4096-cpu /tmp/qfleet-gpu-apps/meta-4096-cpu \
      --qgan-gpu /tmp/qfleet-gpu-apps/qgan --qgan-classifier-compare /tmp/qfleet-gpu-apps/classifier_compare.json \
      --pennylane-cuda /tmp/qfleet-gpu-apps/pennylane_cuda.json --qgan-pennylane-cuda /tmp/qfleet-gpu-apps/qgan12_cuda.json \
      --classify-gpu /tmp/qfleet-gpu-apps/classify --rl-env-gpu /tmp/qfleet-gpu-apps/rl_env_gpu.json \
      --ppo-gpu /tmp/qfleet-gpu-apps/ppo-cuda --ppo-cpu /tmp/qfleet-gpu-apps/ppo-cpu
    echo "rc $?"
  } >"$out/apps.log" 2>&1
  rc=0
  grep -q '^rc [1-9]' "$out/apps.log" && rc=1
  record apps "$(status_of $rc)" "$t0"
}

case $mode in
  check) gtest_phase; python_phase; sanitize_phase ;;
  "check apps") gtest_phase; python_phase 200; apps_phase; sanitize_phase ;;
  apps) apps_phase ;;
  figures) bench_phase; ncu_phase; peers_phase; torch_phase; apps_phase ;;
  "check figures")  # the tests and ncu beside the device build; the sanitizers (on what it
    # builds) and the timed rows (on quiet CPU cores) after it, then the phases that need it
    gtest_phase; ncu_phase; sanitize_phase; wait_build; bench_phase; peers_phase; python_phase 200; torch_phase
    apps_phase ;;
esac
[ -z "$build_pid" ] || { kill "$build_pid" 2>/dev/null; wait "$build_pid" 2>/dev/null; }
rm -f "$out/.build_rc" "$out/.build_recorded"
# At most 8 files in OUT, few to copy back: the logs beyond the summary and the probe go into results.tgz.
mapfile -t files < <(cd "$out" && ls -1)
if [ ${#files[@]} -gt 8 ]; then
  (cd "$out" && tar czf results.tgz $(ls -1 | grep -v -e '^summary.txt$' -e '^probe.txt$') &&
   find . -maxdepth 1 -type f ! -name summary.txt ! -name probe.txt ! -name results.tgz -delete)
fi
echo "gpu_check: $mode done in $((SECONDS - start)) s; summary:"
cat "$summary"
exit $worst
