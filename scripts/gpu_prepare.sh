#!/usr/bin/env bash
# Prepares, on a machine with network and nvcc but no GPU, everything scripts/gpu_check.sh
# needs on a GPU machine that has nvcc, CMake, ninja and a python3 with PyTorch but no
# network and no Debian -dev packages, and to which at most 64 MiB travel with the source
# tree. Writes .gpu/ (ignored by git; it travels beside the tree):
#   .gpu/bin/*.xz   qfleet_tests, qfleet_cuda_tests and bench_cuda, Release, sm_90 code
#                   only (the H100 and H200), stripped and xz-compressed: the C++ GPU
#                   tests, the sanitizers and the benchmarks then need no build there
#   .gpu/debs       GoogleTest, Google Benchmark, nlohmann-json, CLI11, fmt and Eigen
#                   (Debian 12's, unpacked there into a prefix, never over /): the device
#                   build of what links that machine's PyTorch
#   .gpu/REVISION   the commit (and whether the tree had changes) the programs come from
# then checks that the tree and .gpu stay under 60 MiB, and prints the command to run.
#
#   scripts/gpu_prepare.sh [--build-dir DIR]   (default build-gpu-bin; an existing Release
#                                               build with CUDA for sm_90 is reused as is)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build-gpu-bin
case "${1:-}" in
  "") ;;
  --build-dir) [ -n "${2:-}" ] || { echo "usage: scripts/gpu_prepare.sh [--build-dir DIR]"; exit 2; }; dir=$2 ;;
  *) echo "usage: scripts/gpu_prepare.sh [--build-dir DIR]"; exit 2 ;;
esac
programs=(tests/qfleet_tests tests/qfleet_cuda_tests bench/bench_cuda)
limit_mib=60

if [ "$dir" = build-gpu-bin ]; then
  ./scripts/configure.sh gpu-bin >/dev/null
  cmake --build "$dir" -j"$(nproc)" --target qfleet_tests qfleet_cuda_tests bench_cuda
fi
[ -d "$dir" ] || { echo "gpu_prepare: no build directory '$dir'"; exit 2; }
for p in "${programs[@]}"; do  # everything checked before the old .gpu/bin goes
  [ -x "$dir/$p" ] || { echo "gpu_prepare: $dir/$p is not built (cmake --build $dir --target $(basename "$p"))"; exit 2; }
  grep -qa 'sm_90' "$dir/$p" || { echo "gpu_prepare: $dir/$p has no sm_90 code (CMAKE_CUDA_ARCHITECTURES)"; exit 2; }
done
rm -rf .gpu/bin && mkdir -p .gpu/bin
for p in "${programs[@]}"; do
  strip -o ".gpu/bin/$(basename "$p")" "$dir/$p"
  xz -9 -T0 ".gpu/bin/$(basename "$p")"
done
{ git rev-parse HEAD; git diff --quiet HEAD || echo "with uncommitted changes"; } >.gpu/REVISION 2>/dev/null ||
  echo unknown >.gpu/REVISION

if [ ! -d .gpu/debs ] || [ -z "$(ls .gpu/debs)" ]; then
  mkdir -p .gpu/debs
  lists=$(mktemp -d)
  mkdir -p "$lists/partial"
  chmod -R a+rwX "$lists" .gpu/debs  # apt fetches as its own user
  apt_opts=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 "-oDir::State::Lists=$lists")
  apt-get "${apt_opts[@]}" update -qq
  (cd .gpu/debs && apt-get "${apt_opts[@]}" download -qq libgtest-dev libgmock-dev libbenchmark-dev \
     libbenchmark1debian nlohmann-json3-dev libcli11-dev libfmt-dev libfmt9 libeigen3-dev)
  rm -rf "$lists"
fi

# What travels: the tracked and untracked-not-ignored files, and .gpu.
tree_bytes=$(git ls-files -z --cached --others --exclude-standard | xargs -0 -r du -cb 2>/dev/null | tail -n 1 | cut -f1)
gpu_bytes=$(du -sb .gpu | cut -f1)
total_mib=$(((tree_bytes + gpu_bytes) / 1048576))
echo "gpu_prepare: tree $((tree_bytes / 1048576)) MiB + .gpu $((gpu_bytes / 1048576)) MiB = $total_mib MiB (limit $limit_mib MiB)"
ls -l .gpu/bin
[ "$total_mib" -lt "$limit_mib" ] || { echo "gpu_prepare: over $limit_mib MiB: it will not travel"; exit 1; }
cat <<EOF
On the GPU machine, in the source tree with .gpu/ beside it (GPU_DEADLINE_S: the seconds
the call may take; OUT: where the summary and logs go):
  GPU_DEADLINE_S=420 OUT=\$OUT scripts/gpu_check.sh           # tests, Python suite, sanitizers
  GPU_DEADLINE_S=420 OUT=\$OUT scripts/gpu_check.sh figures   # benchmarks, ncu, comparison, apps
EOF
