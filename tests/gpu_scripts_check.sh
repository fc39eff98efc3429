#!/usr/bin/env bash
# The GPU-machine scripts run only where a GPU is lent: here they must at least parse, and
# refuse what they cannot do before they touch anything: gpu_run.sh an unknown step,
# gpu_prepare.sh a missing build directory, an unknown program or a build without them.
#   tests/gpu_scripts_check.sh scripts/gpu_prepare.sh scripts/gpu_run.sh
set -u
prepare=$1 run=$2
expect_refusal() {  # expect_refusal TEXT COMMAND...: fails unless COMMAND fails saying TEXT
  local text=$1 out
  shift
  if out=$("$@" 2>&1); then echo "not refused: $*"; exit 1; fi
  case $out in *"$text"*) ;; *) echo "refused without saying '$text': $*: $out"; exit 1 ;; esac
}
bash -n "$prepare" && bash -n "$run" || exit 1
expect_refusal "unknown step 'biuld'" "$run" biuld test
expect_refusal "no build directory '/nonexistent-build'" "$prepare" --binaries /nonexistent-build
# what an earlier call packed is still there after a refused one
root=$(cd "$(dirname "$prepare")/.." && pwd)
before=$(ls -l "$root/.gpu-bin" 2>/dev/null)
expect_refusal "unknown program 'qfleet_tsts'" "$prepare" --binaries . qfleet_tsts
empty=$(mktemp -d)
expect_refusal "no program to pack in $empty" "$prepare" --binaries "$empty"
rmdir "$empty"
[ "$(ls -l "$root/.gpu-bin" 2>/dev/null)" = "$before" ] || { echo "a refused call changed .gpu-bin"; exit 1; }
echo scripts-checked
