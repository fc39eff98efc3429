#!/usr/bin/env bash
# Runs the JSON readers', the .npy reader's, the PGM reader's, the rl configuration's, the apps' configuration reader's, the IDX reader's and the training checkpoint reader's libFuzzer targets (tests/fuzz) for a bounded time each:
#   scripts/fuzz.sh BUILD_DIR [SECONDS=60]
# BUILD_DIR is a clang build with -DQFLEET_FUZZ=ON (scripts/test.sh builds them in build-asan).
# Each reader starts from its seeds (tests/fuzz/seeds/<kind>) and keeps what it
# finds in BUILD_DIR/corpus-<kind>, so a later run goes on from there. A crash,
# sanitizer report, leak, timeout (10 s per input) or out-of-memory (4 GiB) fails
# the run and leaves the input in BUILD_DIR/crash-*; the last lines of each run
# (executions, coverage) are printed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build=${1:?usage: scripts/fuzz.sh BUILD_DIR [SECONDS]}
seconds=${2:-60}
build=$(cd "$build" && pwd)
# The readers run side by side, one per core (each libFuzzer process is one thread).
run_one() {
  local target=$1 kind=${1%_json}
  local corpus="$build/corpus-$kind" log="$build/fuzz-$kind.log"
  mkdir -p "$corpus"
  # (detect_container_overflow=0: the checkpoint reader's containers are also filled by the
  # uninstrumented LibTorch; scripts/test.sh says why)
  if (cd "$build" && ASAN_OPTIONS=detect_leaks=1:detect_container_overflow=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "$build/tests/fuzz/fuzz_${target}" "$corpus" "$root/tests/fuzz/seeds/$kind" \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -max_len=8192 -print_final_stats=1 \
        >"$log" 2>&1); then
    echo "fuzz $kind: no crash in $seconds s; $(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}') inputs run, corpus $(ls "$corpus" | wc -l) files" >"$log.result"
  else
    { echo "fuzz $kind: FAILED (log $log)"; tail -n 60 "$log"; } >"$log.result"
    return 1
  fi
}
targets=(circuit_json lindblad_json npy pgm rl_config app_config idx)
# (the training checkpoint reader where the tree builds the PyTorch adapter)
[ -x "$build/tests/fuzz/fuzz_checkpoint" ] && targets+=(checkpoint)
jobs=$(nproc)
rc=0
running=0
for target in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || rc=1
    running=$((running - 1))
  fi
  run_one "$target" &
  running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
  wait -n || rc=1
  running=$((running - 1))
done
for target in "${targets[@]}"; do
  cat "$build/fuzz-${target%_json}.log.result"
done
exit $rc
