#!/usr/bin/env bash
# The CUDA kernels' PTX must hold no `trap`: nvcc compiles a device-side read of a
# host-only variable (with --expt-relaxed-constexpr, e.g. the gate catalogue's
# kGateTable at a run-time index) into a trap instead of an error, and that killed
# every circuit kernel's adjoint on the first GPU run (2026-11-24), in a build that
# had compiled and passed every CPU test. Runs without a GPU.
#   ptx_has_no_trap.sh NVCC SOURCE_DIR FILE...
# A FILE.cu (relative to SOURCE_DIR) is compiled to PTX; an object file built with
# nvcc --no-compress (scripts/configure.sh's gpu-bin tree) is read as it is: its
# fatbinary holds the PTX as text, so no second compile and no cuobjdump (which a
# minimal CUDA install lacks) are needed.
set -euo pipefail
nvcc=$1 src=$2
shift 2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
for f in "$@"; do
  case "$f" in
    *.cu)
      "$nvcc" -I"$src/src" -I"$src/include" -O3 -DNDEBUG -arch=compute_90 --expt-relaxed-constexpr -std=c++17 \
        -ptx "$src/$f" -o "$out/k.ptx"
      ptx="$out/k.ptx" ;;
    *)
      ptx=$f
      if ! grep -aq '^\.target sm_' "$f"; then
        echo "$f: no PTX text in the object (compile it with nvcc --no-compress and a compute_ architecture)"
        status=1
        continue
      fi ;;
  esac
  n=$(grep -ac 'trap;' "$ptx" || true)
  echo "$f: $n trap instructions"
  [ "$n" -eq 0 ] || status=1
done
exit $status
