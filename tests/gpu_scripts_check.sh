#!/usr/bin/env bash
# The GPU-machine scripts, where no GPU is: they must parse, refuse what they cannot do
# before touching anything, and scripts/gpu_check.sh must run to its end in seconds,
# every GPU phase UNAVAILABLE (the dry run), or, where a GPU is seen but the GPU bundle
# (scripts/gpu_prepare.sh's .gpu/) is empty, every phase FAILED with its reason (a stand-in
# nvidia-smi).
#   tests/gpu_scripts_check.sh scripts/gpu_prepare.sh scripts/gpu_check.sh  (and scripts/gpu_ab.sh beside them)
set -u
prepare=$1 check=$2
fail() { echo "$*"; exit 1; }
expect_refusal() {  # expect_refusal TEXT COMMAND...: fails unless COMMAND fails saying TEXT
  local text=$1 out
  shift
  if out=$("$@" 2>&1); then fail "not refused: $*"; fi
  case $out in *"$text"*) ;; *) fail "refused without saying '$text': $*: $out" ;; esac
}
ab=$(dirname "$check")/gpu_ab.sh
bash -n "$prepare" && bash -n "$check" && bash -n "$ab" || exit 1
expect_refusal "usage: scripts/gpu_ab.sh BENCH_FILTER" "$ab"
expect_refusal "usage: scripts/gpu_ab.sh BENCH_FILTER" "$ab" '^Mixed/' --tests
expect_refusal "usage: scripts/gpu_ab.sh BENCH_FILTER" "$ab" '^Mixed/' --bogus x
expect_refusal "/nonexistent/bin/bench_cuda.xz is not in the bundle" env QFLEET_GPU_BUNDLE=/nonexistent OUT="$(mktemp -d)" "$ab" '^Mixed/'
expect_refusal "usage: scripts/gpu_check.sh [check|figures|apps|check apps|check figures]" "$check" chek
expect_refusal "usage: scripts/gpu_check.sh [check|figures|apps|check apps|check figures]" "$check" figures apps
expect_refusal "usage: scripts/gpu_prepare.sh [check|figures|ab REV] [--build-dir DIR]" "$prepare" --binaries
expect_refusal "usage: scripts/gpu_prepare.sh [check|figures|ab REV] [--build-dir DIR]" "$prepare" figures --build-dir
expect_refusal "no build directory '/nonexistent-build'" "$prepare" --build-dir /nonexistent-build
expect_refusal "usage: scripts/gpu_prepare.sh [check|figures|ab REV] [--build-dir DIR]" "$prepare" ab
expect_refusal "usage: scripts/gpu_prepare.sh [check|figures|ab REV] [--build-dir DIR]" "$prepare" ab --build-dir x
expect_refusal "no commit 'no-such-revision' here" "$prepare" ab no-such-revision
# what an earlier call packed is still there after a refused one
root=$(cd "$(dirname "$prepare")/.." && pwd)
before=$(ls -l "$root/.gpu/bin" 2>/dev/null)
empty=$(mktemp -d)
expect_refusal "$empty/tests/qfleet_tests is not built" "$prepare" --build-dir "$empty"
expect_refusal "$empty/bench/bench_cuda is not built" "$prepare" figures --build-dir "$empty"
[ "$(ls -l "$root/.gpu/bin" 2>/dev/null)" = "$before" ] || fail "a refused call changed .gpu/bin"

# The dry run: no GPU visible.
for mode in check figures apps "check apps" "check figures"; do
  out=$(mktemp -d)
  t0=$SECONDS
  CUDA_VISIBLE_DEVICES=-1 OUT=$out GPU_DEADLINE_S=60 QFLEET_GPU_BUNDLE=$empty "$check" $mode >"$out.log" 2>&1 ||
    fail "the $mode dry run failed: $(cat "$out.log")"
  [ $((SECONDS - t0)) -lt 60 ] || fail "the $mode dry run took $((SECONDS - t0)) s"
  grep -q '^probe UNAVAILABLE [0-9]* no GPU$' "$out/summary.txt" || fail "$mode: no probe line: $(cat "$out/summary.txt")"
  case $mode in check) phases=5 ;; apps) phases=3 ;; "check apps") phases=6 ;; "check figures") phases=11 ;; *) phases=7 ;; esac
  [ "$(grep -c ' UNAVAILABLE ' "$out/summary.txt")" -eq $phases ] || fail "$mode: not $phases phases: $(cat "$out/summary.txt")"
  grep -q '^revision: ' "$out/probe.txt" || fail "$mode: the probe names no revision"
  rm -rf "$out" "$out.log"
done

# A GPU seen (a stand-in nvidia-smi) but an empty bundle: every phase says why it failed.
fake=$(mktemp -d)
cat >"$fake/nvidia-smi" <<'EOF'
#!/bin/sh
case "$1" in -L) echo "GPU 0: stand-in (UUID: GPU-0)" ;; *) echo "stand-in, 0, 0 MiB, 0 MHz" ;; esac
EOF
chmod +x "$fake/nvidia-smi"
out=$(mktemp -d)
if env -u CUDA_VISIBLE_DEVICES PATH="$fake:$PATH" OUT=$out GPU_DEADLINE_S=60 QFLEET_GPU_BUNDLE=$empty \
   "$check" check >"$out.log" 2>&1; then
  fail "an empty bundle, yet the check passed: $(cat "$out.log")"
fi
for want in '^probe ok [0-9]* 1 GPU$' \
            '^gtest FAILED [0-9]* circuits:missing open:missing density:missing matrices:missing $' \
            '^device_build FAILED [0-9]* no bundled dependencies (.*/debs)$' '^python FAILED [0-9]* no device build$' \
            '^sanitize FAILED [0-9]* qfleet_cuda_tests neither bundled nor built$'; do
  grep -q "$want" "$out/summary.txt" || fail "no line '$want' in: $(cat "$out/summary.txt")"
done
[ "$(ls "$out" | wc -l)" -le 8 ] || fail "more than 8 result files: $(ls "$out")"
rm -rf "$out" "$out.log"
# Without the device build (QFLEET_GPU_DEVICE_BUILD=0) its phases are UNAVAILABLE, not failures.
out=$(mktemp -d)
env -u CUDA_VISIBLE_DEVICES PATH="$fake:$PATH" OUT=$out GPU_DEADLINE_S=60 QFLEET_GPU_BUNDLE=$empty \
  QFLEET_GPU_DEVICE_BUILD=0 "$check" check figures >"$out.log" 2>&1
for want in '^device_build UNAVAILABLE [0-9]* QFLEET_GPU_DEVICE_BUILD=0$' '^compare UNAVAILABLE [0-9]* no device build$' \
            '^apps UNAVAILABLE [0-9]* no device build$' '^bench FAILED [0-9]* bench_cuda not bundled$' \
            '^peers UNAVAILABLE [0-9]* no bundled peers (.*/peers)$' \
            '^sanitize UNAVAILABLE [0-9]* qfleet_cuda_tests neither bundled nor built$'; do
  grep -q "$want" "$out/summary.txt" || fail "no line '$want' in: $(cat "$out/summary.txt")"
done
# The C++ tests' shards: a stand-in test program that takes 2 s and runs one test, or none
# for one filter (as a renamed test would leave it). Every shard starts at once, each
# family's line sums its shards, and the shard that ran nothing fails the phase.
bundle=$(mktemp -d)
mkdir -p "$bundle/bin"
cat >"$bundle/bin/stand-in" <<'EOF'
#!/bin/sh
sleep 2
n=1
[ "$1" = '--gtest_filter=CudaBackend.FusedRuns*' ] && n=0
echo "[==========] Running $n tests from 1 test suite."
echo "[  PASSED  ] $n tests."
EOF
xz -c "$bundle/bin/stand-in" >"$bundle/bin/qfleet_tests.xz"
out=$(mktemp -d)
TMPDIR=$(mktemp -d) env -u CUDA_VISIBLE_DEVICES PATH="$fake:$PATH" OUT=$out GPU_DEADLINE_S=60 \
  QFLEET_GPU_BUNDLE=$bundle QFLEET_GPU_DEVICE_BUILD=0 "$check" check >"$out.log" 2>&1
want='^gtest FAILED [0-9]* circuits:3/0/0 open:2/0/0 density:2/0/0 matrices:4/0/0 $'
grep -q "$want" "$out/summary.txt" || fail "no line '$want' in: $(cat "$out/summary.txt")"
s=$(sed -n 's/^gtest FAILED \([0-9]*\) .*/\1/p' "$out/summary.txt")
[ "$s" -lt 10 ] || fail "12 shards of 2 s took $s s: not run at once"
grep -q "^== circuits: --gtest_filter=CudaBackend.FusedRuns\* ran no test: FAILED$" "$out/gtest.log" ||
  fail "the shard that ran no test is not named: $(cat "$out/gtest.log")"
rm -rf "$out" "$out.log"
# The device build on the bundled library, and again without it where that fails (a
# stand-in cmake that fails whenever it is given a prebuilt library, and records its calls).
mkdir -p "$bundle/lib" "$bundle/debs" "$bundle/pkg/DEBIAN"
printf 'Package: qfleet-stand-in\nVersion: 1\nArchitecture: all\nMaintainer: qfleet\nDescription: empty\n' \
  >"$bundle/pkg/DEBIAN/control"
dpkg-deb -b "$bundle/pkg" "$bundle/debs/stand-in.deb" >/dev/null || fail "dpkg-deb could not build the stand-in package"
echo library | xz -c >"$bundle/lib/libqfleet.a.xz"
cat >"$fake/cmake" <<'EOF'
#!/bin/sh
echo "cmake $*" >>"$CMAKE_CALLS"
case "$*" in *QFLEET_PREBUILT_LIBRARY=/*) exit 1 ;; esac
EOF
chmod +x "$fake/cmake"
out=$(mktemp -d)
tmp=$(mktemp -d)
for call in 1 2; do  # (the second as a second call on the same machine: the library found unpacked)
  TMPDIR=$tmp CMAKE_CALLS=$out.calls env -u CUDA_VISIBLE_DEVICES PATH="$fake:$PATH" OUT=$out \
    GPU_DEADLINE_S=60 QFLEET_GPU_BUNDLE=$bundle "$check" apps >"$out.log" 2>&1
  grep -q '^device_build ok ' "$out/summary.txt" || fail "the device build did not fall back: $(cat "$out/summary.txt" "$out.log")"
  [ "$(grep -c -- '-DQFLEET_PREBUILT_LIBRARY=/.*/libqfleet.a ' "$out.calls")" = $call ] &&
    [ "$(grep -c -- '-DQFLEET_PREBUILT_LIBRARY= ' "$out.calls")" = $call ] &&
    [ "$(grep -c -- '--build build-gpu' "$out.calls")" = $call ] ||
    fail "call $call: not one configure on the bundled library, then one configure and one build without: $(cat "$out.calls")"
  { cat "$out/build.log" || tar xzf "$out/results.tgz" -O; } 2>/dev/null | grep -q 'the device build on the bundled library failed' ||
    fail "the build log does not say it fell back"
done
rm -rf "$out" "$out.log" "$out.calls" "$tmp" "$fake" "$empty" "$bundle"
echo scripts-checked
