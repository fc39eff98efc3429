#!/usr/bin/env bash
# Configures a CMake build tree the way the scripts want it:
#   configure.sh release [cmake arguments...]   build/, the Release tree of both
#       scripts/main.sh and scripts/test.sh. It is one configuration (warnings are
#       errors, tests, benchmarks and the PyTorch adapter on), so the test command adds
#       the tests and benchmarks to what the first command built instead of compiling
#       it again. The CUDA backend is decided afresh each time, by CMakeLists.txt (a GPU
#       visible), unless QFLEET_CUDA=on|off says.
#   configure.sh gpu-bin [cmake arguments...]   build-gpu-bin/, the CUDA backend for
#       sm_90 (the H100 and H200) without the PyTorch adapter: scripts/test.sh compiles
#       its CUDA code there where build/ has none (a machine with nvcc and no GPU), and
#       scripts/gpu_prepare.sh builds the GPU machine's programs from the same objects.
#       The fatbinaries keep their PTX as text (--no-compress) for
#       tests/cuda/ptx_has_no_trap.sh; -lineinfo for compute-sanitizer's and ncu's reports.
#   configure.sh DIR [cmake arguments...]       any other tree
# - Ninja when it is installed (scripts/setup.sh installs it): it starts a target's
#   objects before its dependencies are linked, which Make does not, so both cores
#   stay busy.
# - ccache as the compiler launcher when it is installed, with its cache outside the
#   checkout (~/.cache/ccache), paths taken relative to the checkout (CCACHE_BASEDIR:
#   a fresh clone elsewhere hits the same entries) and the sloppiness precompiled
#   headers need (pch_defines,time_macros: ccache's manual, "Precompiled headers"). A
#   second build of the same sources compiles nothing again; a clean machine compiles
#   everything, as without it.
# A directory configured earlier with another generator is configured afresh
# (CMake refuses to switch generators in place); its objects are rebuilt.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir=$1
shift
preset=()
if [ "$dir" = release ]; then
  dir=build
  venv=$("$root/scripts/setup_python.sh")
  # (-U SKBUILD*: scripts/test.sh's wheel build, in this tree, leaves scikit-build-core's variables.)
  preset=(-U 'SKBUILD*' -DCMAKE_BUILD_TYPE=Release -DQFLEET_BUILD_TESTS=ON -DQFLEET_BUILD_BENCH=ON -DQFLEET_WERROR=ON
          -DQFLEET_BUILD_TORCH=ON -DPython3_EXECUTABLE="$venv/bin/python")
  case "${QFLEET_CUDA:-}" in
    on | ON | 1) preset+=(-DQFLEET_ENABLE_CUDA=ON) ;;
    off | OFF | 0) preset+=(-DQFLEET_ENABLE_CUDA=OFF) ;;
    # (and the architectures: LibTorch's config caches its own default where nvcc is found)
    "") preset+=(-U QFLEET_ENABLE_CUDA -U CMAKE_CUDA_ARCHITECTURES) ;;
    *) echo "configure: QFLEET_CUDA must be on or off, not '$QFLEET_CUDA'" >&2; exit 2 ;;
  esac
elif [ "$dir" = gpu-bin ]; then
  dir=build-gpu-bin
  preset=(-DCMAKE_BUILD_TYPE=Release -DQFLEET_BUILD_TESTS=ON -DQFLEET_BUILD_BENCH=ON -DQFLEET_WERROR=ON
          -DQFLEET_BUILD_TORCH=OFF -DQFLEET_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90
          "-DCMAKE_CUDA_FLAGS=-lineinfo --no-compress")
fi
gen=("-G" "Unix Makefiles")
command -v ninja >/dev/null && gen=("-G" "Ninja")
if [ -f "$dir/CMakeCache.txt" ]; then
  have=$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$dir/CMakeCache.txt")
  if [ "$have" != "${gen[1]}" ]; then
    echo "configure: $dir was configured with '$have'; configuring it afresh with '${gen[1]}'" >&2
    rm -rf "$dir/CMakeCache.txt" "$dir/CMakeFiles"
  fi
fi
launch=()
if command -v ccache >/dev/null; then
  ccache_cmd="env;CCACHE_BASEDIR=$root;CCACHE_SLOPPINESS=pch_defines,time_macros;ccache"
  launch=(-DCMAKE_C_COMPILER_LAUNCHER="$ccache_cmd" -DCMAKE_CXX_COMPILER_LAUNCHER="$ccache_cmd"
          -DCMAKE_CUDA_COMPILER_LAUNCHER="$ccache_cmd")
fi
exec cmake -S "$root" -B "$dir" "${gen[@]}" "${launch[@]}" "${preset[@]}" "$@"
