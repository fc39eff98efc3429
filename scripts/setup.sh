#!/usr/bin/env bash
# Installs what qfleet builds with on Debian 12, only what is missing. Idempotent.
# (The Python environment, with torch from PyPI, is scripts/setup_python.sh.)
set -euo pipefail
pkgs=(build-essential cmake ninja-build ccache git libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev
      libcli11-dev libfmt-dev libeigen3-dev liblbfgsb-dev python3 python3-venv python3-pip
      clang libclang-rt-14-dev libomp-14-dev  # (clang: the libFuzzer targets of the JSON readers)
      zlib1g-dev dataset-fashion-mnist  # (qfleet-classify: gzipped IDX files; Fashion-MNIST, its default data)
      doxygen)  # (the API reference, docs/api/Doxyfile)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
