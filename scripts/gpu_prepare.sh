#!/usr/bin/env bash
# Packs what a lent GPU machine (the workplace's `device` tool) lacks into .gpu/
# (ignored by git; name it in the call's `carry`): that machine has nvcc, CMake,
# ninja and a python3 with PyTorch but no Debian -dev packages and no network.
#   .gpu/debs    GoogleTest, Google Benchmark, nlohmann-json, CLI11, fmt, Eigen
#                (Debian 12's, unpacked there into a prefix, never over /)
#   .gpu/wheels  QuTiP for the machine's Python 3.12 (the CUDA-tensor tests' reference)
# Then, on the GPU machine: scripts/gpu_run.sh (see there). About 31 MB.
set -euo pipefail
cd "$(dirname "$0")/.."
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
