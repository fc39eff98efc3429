#!/usr/bin/env bash
# Prepares, on a machine with network and nvcc but no GPU, everything scripts/gpu_check.sh
# needs on a GPU machine that has nvcc, CMake, ninja and a python3 with PyTorch and JAX
# but no network and no Debian -dev packages. Writes the GPU bundle, .gpu/ (ignored by git;
# copy it to the GPU machine beside the source tree), for one of gpu_check.sh's two modes
# (one bundle at a time keeps the copy small):
#   check (default)
#     .gpu/bin/*.xz   qfleet_tests and bench_cuda, Release, sm_90 code only (the H100 and
#                     H200), stripped and xz-compressed: the C++ GPU tests and the
#                     benchmarks then need no build there
#     .gpu/lib/libqfleet.a.xz  the library they link (14 MiB): the device build there links
#                     it (QFLEET_PREBUILT_LIBRARY) and compiles none of its kernels; it
#                     builds qfleet_cuda_tests (the CUDA graph and sanitizer cases) too
#     .gpu/wheels     PennyLane and what it needs beyond that machine's packages (~9 MiB; not
#                     lightning.qubit, which `import pennylane` does not load), for the PennyLane
#                     devices' test and comparison on cuda
#     .gpu/data/fashion-mnist  the first 1280 training and 256 test records of Debian's
#                     Fashion-MNIST (scripts/idx_subset.py, 0.7 MiB): the classifier's step
#                     breakdown on cuda
#   figures
#     .gpu/bin/bench_cuda.xz
#     .gpu/wheels     dynamiqs and what it needs beyond that machine's JAX (QuTiP, IPython,
#                     cmap; ~31 MiB, cached in ~/.cache/qfleet/gpu-wheels), for Python 3.12
#     .gpu/peers/open_ref.npz  qfleet's results on bench/compare/open_gpu_peer.py's check batch
#                     (the qfleet CLI of the build, complex128), which dynamiqs must match
#   ab REV (a same-run A/B of a kernel change, scripts/gpu_ab.sh): .gpu-ab/ instead of .gpu/,
#     beside check's bundle (a GPU machine that already has check's takes .gpu-ab alone)
#     .gpu-ab/bin/{bench_cuda,qfleet_tests}.xz  this tree's, as check's
#     .gpu-ab/old/bench_cuda.xz, old/REVISION   bench_cuda built at REV (a commit before the
#                     change) in its own checkout and tree, ${XDG_CACHE_HOME:-~/.cache}/qfleet/ab/REV,
#                     kept there so that preparing the same REV again builds nothing
#   every mode
#     .gpu/debs       GoogleTest, Google Benchmark, nlohmann-json, CLI11, fmt and Eigen
#                     (Debian 12's, unpacked there into a prefix, never over /): the
#                     benchmark program's library and the device build of what links that
#                     machine's PyTorch
#     .gpu/REVISION   the commit (and whether the tree had changes) the programs come from
# then checks that the tree and .gpu (.gpu-ab) together stay under QFLEET_GPU_BUNDLE_MAX_MIB
# (default 62; 0: no check), for a copy to the GPU machine whose size is capped, and prints
# the command to run.
#
#   scripts/gpu_prepare.sh [check|figures|ab REV] [--build-dir DIR]   (default build-gpu-bin;
#                          an existing Release build with CUDA for sm_90 is reused as is)
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: scripts/gpu_prepare.sh [check|figures|ab REV] [--build-dir DIR]"
mode=check
dir=build-gpu-bin
dest=.gpu
case "${1:-}" in
  check | figures) mode=$1; shift ;;
  ab)
    [ -n "${2:-}" ] && [ "${2#--}" = "$2" ] || { echo "$usage"; exit 2; }
    mode=ab rev=$2 dest=.gpu-ab
    shift 2
    old_rev=$(git rev-parse --verify --quiet "$rev^{commit}") || { echo "gpu_prepare: no commit '$rev' here"; exit 2; }
    ;;
esac
case "${1:-}" in
  "") ;;
  --build-dir) [ -n "${2:-}" ] && [ $# -eq 2 ] || { echo "$usage"; exit 2; }; dir=$2 ;;
  *) echo "$usage"; exit 2 ;;
esac
if [ $mode = figures ]; then
  programs=(bench/bench_cuda tools/qfleet)  # the CLI makes the peer's reference here; it stays here
  targets=(bench_cuda qfleet_cli)
else
  programs=(tests/qfleet_tests bench/bench_cuda)
  targets=(qfleet_tests bench_cuda)
fi
limit_mib=${QFLEET_GPU_BUNDLE_MAX_MIB:-62}
fm=/usr/share/datasets/fashion-mnist  # (check: its first records go into the bundle)
if [ $mode = check ] && [ ! -d $fm ]; then
  echo "gpu_prepare: no $fm (Debian's fashion-mnist package: scripts/setup.sh installs it)"
  exit 2
fi
# The wheels each mode bundles, at the versions bench/compare/constraints.txt pins:
# PennyLane and what it imports beyond the GPU machine's packages (pennylane_lightning and its
# OpenBLAS, 33 MiB, left out: `import pennylane` does not load them); dynamiqs and what it
# imports beyond that machine's JAX, equinox, diffrax, optimistix, SciPy, matplotlib, tqdm,
# Pygments and psutil.
pl_wheels=(pennylane rustworkx autograd appdirs autoray cachetools tomlkit diastatic-malt gast termcolor)
peer_wheels=(dynamiqs qutip cmap ipython ipython_pygments_lexers jedi parso matplotlib-inline pexpect ptyprocess
  prompt_toolkit wcwidth stack-data asttokens executing pure_eval traitlets)
pins() {  # pins NAME...: NAME==VERSION for each, as bench/compare/constraints.txt pins it
  local n p
  for n; do
    p=$(grep -i -m1 -E "^${n//[-_]/[-_]}==" bench/compare/constraints.txt) ||
      { echo "gpu_prepare: $n is not pinned in bench/compare/constraints.txt" >&2; return 1; }
    echo "$p"
  done
}

if [ "$dir" = build-gpu-bin ]; then
  ./scripts/configure.sh gpu-bin >/dev/null
  cmake --build "$dir" -j"$(nproc)" --target "${targets[@]}"
fi
[ -d "$dir" ] || { echo "gpu_prepare: no build directory '$dir'"; exit 2; }
for p in "${programs[@]}"; do  # everything checked before the old .gpu/bin goes
  [ -x "$dir/$p" ] || { echo "gpu_prepare: $dir/$p is not built (cmake --build $dir --target $(basename "$p"))"; exit 2; }
  grep -qa 'sm_90' "$dir/$p" || { echo "gpu_prepare: $dir/$p has no sm_90 code (CMAKE_CUDA_ARCHITECTURES)"; exit 2; }
done
[ $mode != check ] || [ -f "$dir/libqfleet.a" ] || { echo "gpu_prepare: no $dir/libqfleet.a (cmake --build $dir --target qfleet)"; exit 2; }
pack() {  # pack PROGRAM DIR: stripped and xz-compressed into DIR
  strip -o "$2/$(basename "$1")" "$1"
  xz -9 -T0 "$2/$(basename "$1")"
}
if [ $mode = ab ]; then
  # bench_cuda at REV, in a checkout and build tree of its own (ccache shares the unchanged units)
  src=${XDG_CACHE_HOME:-$HOME/.cache}/qfleet/ab/$old_rev
  [ -d "$src/.git" ] || [ -f "$src/.git" ] || git worktree add --force --detach "$src" "$old_rev" >/dev/null
  (cd "$src" && ./scripts/configure.sh gpu-bin >/dev/null && cmake --build build-gpu-bin -j"$(nproc)" --target bench_cuda) ||
    { echo "gpu_prepare: bench_cuda did not build at $rev (in $src)"; exit 1; }
  grep -qa 'sm_90' "$src/build-gpu-bin/bench/bench_cuda" || { echo "gpu_prepare: bench_cuda at $rev has no sm_90 code"; exit 1; }
fi
rm -rf "$dest/bin" "$dest/lib" "$dest/wheels" "$dest/peers" "$dest/data" && mkdir -p "$dest/bin"  # (.gpu/old stays: gpu_ab.sh)
for p in "${programs[@]}"; do
  [ "$p" != tools/qfleet ] || continue
  pack "$dir/$p" "$dest/bin"
done
if [ $mode = check ]; then
  mkdir -p "$dest/lib"
  xz -9 -T0 -c "$dir/libqfleet.a" >"$dest/lib/libqfleet.a.xz"
fi
if [ $mode = ab ]; then
  rm -rf "$dest/old" && mkdir -p "$dest/old"
  pack "$src/build-gpu-bin/bench/bench_cuda" "$dest/old"
  echo "$old_rev" >"$dest/old/REVISION"
fi
bundle_wheels() {  # bundle_wheels PIN...: those wheels for Python 3.12 into .gpu/wheels (cached)
  local cache=${XDG_CACHE_HOME:-$HOME/.cache}/qfleet/gpu-wheels w name version
  mkdir -p "$cache" .gpu/wheels
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$cache" "$@"
  for w in "$@"; do  # exactly the pinned ones, whatever else the cache holds
    name=${w%%==*} version=${w##*==}
    cp "$cache"/$(echo "$name" | tr - _)-"$version"-*.whl .gpu/wheels/ 2>/dev/null ||
      cp "$cache"/"$name"-"$version"-*.whl .gpu/wheels/
  done
}
if [ $mode = check ]; then
  wheels=$(pins "${pl_wheels[@]}") || exit 2
  bundle_wheels $wheels
  python3 scripts/idx_subset.py $fm .gpu/data/fashion-mnist 1280 256
elif [ $mode = figures ]; then
  wheels=$(pins "${peer_wheels[@]}") || exit 2
  bundle_wheels $wheels
  mkdir -p .gpu/peers
  "$(scripts/setup_python.sh)/bin/python" bench/compare/open_gpu_peer.py reference --qfleet "$dir/tools/qfleet" \
    --out .gpu/peers/open_ref.npz
fi
{ git rev-parse HEAD; git diff --quiet HEAD || echo "with uncommitted changes"; } >"$dest/REVISION" 2>/dev/null ||
  echo unknown >"$dest/REVISION"

if [ ! -d "$dest/debs" ] || [ -z "$(ls "$dest/debs")" ]; then
  mkdir -p "$dest/debs"
  lists=$(mktemp -d)
  mkdir -p "$lists/partial"
  # apt fetches as its sandbox user (_apt): that user, not everyone, may write there, so
  # nobody else can swap a package between its download and its unpacking on the GPU machine.
  if [ "$(id -u)" = 0 ] && id _apt >/dev/null 2>&1; then
    chown _apt "$lists" "$lists/partial" "$dest/debs"
  fi
  apt_opts=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 "-oDir::State::Lists=$lists")
  apt-get "${apt_opts[@]}" update -qq
  (cd "$dest/debs" && apt-get "${apt_opts[@]}" download -qq libgtest-dev libgmock-dev libbenchmark-dev \
     libbenchmark1debian nlohmann-json3-dev libcli11-dev libfmt-dev libfmt9 libeigen3-dev)
  rm -rf "$lists"
  chown -R "$(id -u):$(id -g)" "$dest/debs"
  chmod -R go-w "$dest/debs"
fi

# What goes to the GPU machine: the tracked and untracked-not-ignored files, and .gpu (.gpu-ab).
tree_bytes=$(git ls-files -z --cached --others --exclude-standard | xargs -0 -r du -cb 2>/dev/null | tail -n 1 | cut -f1)
gpu_bytes=$(du -sb "$dest" | cut -f1)
total_mib=$(((tree_bytes + gpu_bytes) / 1048576))
echo "gpu_prepare: tree $((tree_bytes / 1048576)) MiB + $dest $((gpu_bytes / 1048576)) MiB = $total_mib MiB (QFLEET_GPU_BUNDLE_MAX_MIB $limit_mib)"
for d in "$dest/bin" "$dest/lib" "$dest/old"; do [ ! -d "$d" ] || ls -l "$d"; done
[ ! -d "$dest/wheels" ] || echo "gpu_prepare: $(ls "$dest/wheels" | wc -l) wheels, $(du -sh "$dest/wheels" | cut -f1)"
[ "$limit_mib" = 0 ] || [ "$total_mib" -lt "$limit_mib" ] ||
  { echo "gpu_prepare: over $limit_mib MiB (QFLEET_GPU_BUNDLE_MAX_MIB; 0 turns the check off)"; exit 1; }
cat <<EOF
On the GPU machine, in the source tree with $dest/ beside it (GPU_DEADLINE_S: the seconds
the call may take; OUT: where the summary and logs go):
EOF
if [ $mode = ab ]; then
  echo "  QFLEET_GPU_BUNDLE=.gpu-ab GPU_DEADLINE_S=240 OUT=\$OUT scripts/gpu_ab.sh BENCH_FILTER [--tests GTEST_FILTER] [--ncu ROW]"
  echo "      # bench_cuda at $rev against this tree's, alternated, after the tests of the change"
elif [ $mode = check ]; then
  echo "  GPU_DEADLINE_S=420 OUT=\$OUT scripts/gpu_check.sh           # tests, Python suite, sanitizers"
  echo "  GPU_DEADLINE_S=570 OUT=\$OUT scripts/gpu_check.sh check apps  # the same and the apps on cuda (~6 min)"
  echo "  GPU_DEADLINE_S=570 OUT=\$OUT scripts/gpu_check.sh check figures  # tests, ncu, sanitizers, benchmark rows,"
  echo "      # Python suite, comparison, apps as time allows; then \`gpu_check.sh apps\` on the same machine"
else
  echo "  GPU_DEADLINE_S=420 OUT=\$OUT scripts/gpu_check.sh figures   # benchmarks, ncu, peers, comparison, apps"
fi
