#!/usr/bin/env bash
# Packs what a lent GPU machine (the workplace's `device` tool) lacks into .gpu/
# (ignored by git; name it in the call's `carry`): that machine has nvcc, CMake,
# ninja and a python3 with PyTorch but no Debian -dev packages and no network.
#   .gpu/debs    GoogleTest, Google Benchmark, nlohmann-json, CLI11, fmt, Eigen
#                (Debian 12's, unpacked there into a prefix, never over /)
#   .gpu/wheels  QuTiP for the machine's Python 3.12 (the CUDA-tensor tests' reference)
# Then, on the GPU machine: scripts/gpu_run.sh (see there). About 31 MB.
#
#   scripts/gpu_prepare.sh --binaries   also builds, here, the C++ GPU test and bench
#                programs for sm_90 (Release) into .gpu-bin/ (stripped, gzipped, about
#                30 MB; carry ".gpu-bin" and ".gpu/debs"): gpu_run.sh's gtest, sanitize
#                and bench steps then need no `build` on the lent machine, whose build
#                costs 155-276 s of device time per call (it keeps nothing 30 s after one).
#   scripts/gpu_prepare.sh --binaries DIR [NAME...]   the programs (default: all three;
#                qfleet_tests, qfleet_cuda_tests, bench_cuda) taken from an existing build DIR
#                instead of a new build-gpu-bin: e.g. `build`, the Release build with CUDA,
#                whose sm_80 + sm_90 code makes each about 23-25 MB gzipped, so name the ones
#                the call needs (the tree and carried files travel within 64 MiB). A program
#                not built there is said and skipped; one without sm_90 code is refused.
set -euo pipefail
cd "$(dirname "$0")/.."
pack_binaries() {  # pack_binaries DIR [NAME...]: stripped, gzipped copies into .gpu-bin/
  local from=$1 n b
  shift
  [ -d "$from" ] || { echo "gpu_prepare: no build directory '$from'"; exit 2; }
  local names=("$@")
  [ ${#names[@]} -gt 0 ] || names=(qfleet_tests qfleet_cuda_tests bench_cuda)
  local found=()
  for n in "${names[@]}"; do  # everything checked before the old .gpu-bin goes
    case $n in
      qfleet_tests | qfleet_cuda_tests) b=tests/$n ;;
      bench_cuda) b=bench/$n ;;
      *) echo "gpu_prepare: unknown program '$n' (qfleet_tests, qfleet_cuda_tests, bench_cuda)"; exit 2 ;;
    esac
    if [ ! -x "$from/$b" ]; then
      echo "gpu_prepare: $from/$b not built (make -C $from $n): not packed"
      continue
    fi
    grep -qa 'sm_90' "$from/$b" || { echo "gpu_prepare: $from/$b has no sm_90 code (CMAKE_CUDA_ARCHITECTURES)"; exit 2; }
    found+=("$b")
  done
  [ ${#found[@]} -gt 0 ] || { echo "gpu_prepare: no program to pack in $from"; exit 2; }
  rm -rf .gpu-bin && mkdir -p .gpu-bin
  for b in "${found[@]}"; do strip -o ".gpu-bin/$(basename "$b")" "$from/$b"; done
  gzip -9 .gpu-bin/*
}
if [ "${1:-}" = "--binaries" ] && [ -n "${2:-}" ]; then
  shift
  pack_binaries "$@"
elif [ "${1:-}" = "--binaries" ]; then
  cmake -S . -B build-gpu-bin -G Ninja -DCMAKE_BUILD_TYPE=Release -DQFLEET_BUILD_TESTS=ON -DQFLEET_BUILD_BENCH=ON \
    -DQFLEET_BUILD_TORCH=OFF -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_FLAGS=-lineinfo >/dev/null
  cmake --build build-gpu-bin -j"$(nproc)" --target qfleet_tests qfleet_cuda_tests bench_cuda
  pack_binaries build-gpu-bin
elif [ $# -gt 0 ]; then
  echo "usage: scripts/gpu_prepare.sh [--binaries [BUILD_DIR [NAME...]]]"
  exit 2
fi
mkdir -p .gpu/debs .gpu/wheels
lists=$(mktemp -d)
mkdir -p "$lists/partial"
chmod -R a+rwX "$lists" .gpu/debs  # apt fetches as its own user
apt_opts=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 "-oDir::State::Lists=$lists")
apt-get "${apt_opts[@]}" update -qq
(cd .gpu/debs && apt-get "${apt_opts[@]}" download -qq libgtest-dev libgmock-dev libbenchmark-dev \
   libbenchmark1debian nlohmann-json3-dev libcli11-dev libfmt-dev libfmt9 libeigen3-dev)
rm -rf "$lists"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .gpu/wheels "qutip==$(sed -n 's/^qutip==//p' python/requirements.txt)"
ls -l .gpu/debs .gpu/wheels
du -sh .gpu
