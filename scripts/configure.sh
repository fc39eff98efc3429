#!/usr/bin/env bash
# Configures a CMake build directory the way scripts/main.sh and scripts/test.sh
# both want it, so that either can reuse the other's build/:
#   configure.sh BUILD_DIR [cmake arguments...]
# - Ninja when it is installed (scripts/setup.sh installs it): it starts a target's
#   objects before its dependencies are linked, which Make does not, so both cores
#   stay busy beside the long CUDA translation units.
# - ccache as the compiler launcher when it is installed, with its cache outside the
#   checkout (~/.cache/ccache, beside the Python environment of setup_python.sh): a
#   second build of the same sources on the same machine, a fresh clone included,
#   compiles nothing again; a clean machine compiles everything, as without it.
# A directory configured earlier with another generator is configured afresh
# (CMake refuses to switch generators in place); its objects are rebuilt.
set -euo pipefail
dir=$1
shift
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
  launch=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
          -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
exec cmake -S "$(dirname "$0")/.." -B "$dir" "${gen[@]}" "${launch[@]}" "$@"
