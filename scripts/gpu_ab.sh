#!/usr/bin/env bash
# A same-run A/B of a kernel change on a machine with one NVIDIA GPU and no network (the
# machine of scripts/gpu_check.sh): the benchmark program before the change against the
# one after it, alternated by bench/micro/ab.py, after the GPU tests and sanitizers that cover
# the change, and an ncu reading of one row of the new program.
#
#   scripts/gpu_ab.sh BENCH_FILTER [--tests GTEST_FILTER] [--sanitize CASE] [--ncu ROW]
#
# The GPU bundle it reads (scripts/gpu_prepare.sh, then the earlier .gpu/bin/bench_cuda.xz
# copied to .gpu/old/bench_cuda.xz before it): .gpu/bin/bench_cuda.xz (after),
# .gpu/old/bench_cuda.xz (before), .gpu/debs, and with --tests .gpu/bin/qfleet_tests.xz; or
# `scripts/gpu_prepare.sh ab REV` with QFLEET_GPU_BUNDLE=.gpu-ab: the same layout with
# bench_cuda built at REV as the before. --sanitize runs qfleet_cuda_tests, which
# gpu_check.sh's device build makes on the machine (build-gpu/tests/), or
# .gpu/bin/qfleet_cuda_tests.xz where the bundle has one. OUT (default gpu-out/): check.txt (tests, sanitizers), ab.txt and
# ab.json (bench/micro/ab.py: 5 rounds of 0.2 s), ncu.txt. GPU_DEADLINE_S (default 300) bounds
# each step. Exit status: 1 when a test or a sanitizer failed, else bench/micro/ab.py's.
set -uo pipefail
cd "$(dirname "$0")/.."
usage="usage: scripts/gpu_ab.sh BENCH_FILTER [--tests GTEST_FILTER] [--sanitize CASE] [--ncu ROW]"
[ $# -ge 1 ] && [ "${1#--}" = "$1" ] || { echo "$usage"; exit 2; }
filter=$1
shift
tests="" sanitize="" ncu_row=""
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || { echo "$usage"; exit 2; }
  case $1 in
    --tests) tests=$2 ;;
    --sanitize) sanitize=$2 ;;
    --ncu) ncu_row=$2 ;;
    *) echo "$usage"; exit 2 ;;
  esac
  shift 2
done
out=${OUT:-$PWD/gpu-out}
bundle=${QFLEET_GPU_BUNDLE:-.gpu}
limit=${GPU_DEADLINE_S:-300}
bin=${TMPDIR:-/tmp}/qfleet-gpu-ab
mkdir -p "$out" "$bin"
unpack() {  # unpack FILE.xz NAME
  [ -f "$1" ] || { echo "gpu_ab: $1 is not in the bundle"; exit 2; }
  xz -dc "$1" >"$bin/$2" 2>/dev/null ||
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$1" >"$bin/$2"
  chmod +x "$bin/$2"
}
unpack "$bundle/bin/bench_cuda.xz" after
unpack "$bundle/old/bench_cuda.xz" before
[ -z "$tests" ] || unpack "$bundle/bin/qfleet_tests.xz" qfleet_tests
if [ -n "$sanitize" ]; then  # bundled, or from gpu_check.sh's device build earlier on this machine
  if [ -f "$bundle/bin/qfleet_cuda_tests.xz" ]; then
    unpack "$bundle/bin/qfleet_cuda_tests.xz" qfleet_cuda_tests
  elif [ -x build-gpu/tests/qfleet_cuda_tests ]; then
    cp build-gpu/tests/qfleet_cuda_tests "$bin/qfleet_cuda_tests"
  else
    echo "gpu_ab: --sanitize needs qfleet_cuda_tests: $bundle/bin/qfleet_cuda_tests.xz, or build-gpu/tests/ from" \
      "scripts/gpu_check.sh's device build on this machine"
    exit 2
  fi
fi
deps=$bin/deps
mkdir -p "$deps"
for f in "$bundle"/debs/*.deb; do dpkg -x "$f" "$deps" || exit 2; done
export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

t0=$SECONDS
failed=0
{
  echo "after: $(cat "$bundle/REVISION" 2>/dev/null || echo unknown); before: $(cat "$bundle/old/REVISION" 2>/dev/null || echo unknown)"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  if [ -n "$tests" ]; then
    echo "== qfleet_tests --gtest_filter=$tests"
    timeout "$limit" "$bin/qfleet_tests" --gtest_filter="$tests" 2>&1 | grep -E '^\[ *(OK|FAILED|PASSED|SKIPPED) |Failure'
    [ "${PIPESTATUS[0]}" -eq 0 ] || failed=1
  fi
  if [ -n "$sanitize" ]; then
    for tool in memcheck racecheck initcheck synccheck; do
      echo "== compute-sanitizer --tool $tool qfleet_cuda_tests --gtest_filter=$sanitize"
      timeout "$limit" compute-sanitizer --tool $tool --error-exitcode 1 "$bin/qfleet_cuda_tests" --gtest_brief=1 \
        --gtest_filter="$sanitize" 2>&1 | tail -n 3
      [ "${PIPESTATUS[0]}" -eq 0 ] || failed=1
    done
  fi
  echo "checks: $((SECONDS - t0)) s, failed: $failed"
} >"$out/check.txt" 2>&1
cat "$out/check.txt"
grep -q 'failed: 0$' "$out/check.txt" || failed=1
timeout "$limit" python3 bench/micro/ab.py "$bin/before" "$bin/after" --filter "$filter" --rounds 5 --min-time 0.2 \
  --json "$out/ab.json" >"$out/ab.txt" 2>&1
rc=$?
cat "$out/ab.txt"
if [ -n "$ncu_row" ]; then
  timeout "$limit" ncu --clock-control none --launch-count 2 --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis "$bin/after" \
    --benchmark_filter="^$ncu_row/manual_time\$" --benchmark_min_time=0.01 >"$out/ncu.txt" 2>&1
  echo "ncu: $(grep -c Duration "$out/ncu.txt") kernels"
fi
echo "gpu_ab: $((SECONDS - t0)) s"
[ $failed -eq 0 ] || exit 1
exit $rc
