#!/usr/bin/env bash
# The meta-control app on 1 and 2 processes (docs/training.md): wall-clock per training
# iteration (the report's timings_s.per_iteration_ms), median of REPEATS runs, and the
# scaling efficiency t1 / (2 t2). Usage: bench/micro/meta_nproc.sh QFLEET_META_BINARY [ITERATIONS] [REPEATS]
set -euo pipefail
bin=${1:?usage: bench/micro/meta_nproc.sh path/to/qfleet-meta [iterations] [repeats]}
iters=${2:-30}
reps=${3:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
run() {  # nproc threads -> median ms per iteration
  for r in $(seq "$reps"); do
    "$bin" --quiet --nproc "$1" --set threads="$2" --set iterations="$iters" --set validate_every="$iters" \
      --set robust_iterations=1 --set grape_iterations=1 --out "$tmp/run" --overwrite >/dev/null
    python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['timings_s']['per_iteration_ms'])" "$tmp/run/report.json"
  done | median
}
echo "configuration: fast preset, $iters iterations, median of $reps runs; $(nproc) cores"
t11=$(run 1 1); t12=$(run 1 2); t21=$(run 2 1)
printf "%-32s %10s\n" "setting" "ms/iter"
printf "%-32s %10.2f\n" "1 process, 1 thread" "$t11" "1 process, 2 threads" "$t12" "2 processes, 1 thread each" "$t21"
python3 -c "import sys; a,b,c=map(float,sys.argv[1:]); print(f'speed-up 2 processes vs 1 process 1 thread: {a/c:.2f} (efficiency {a/(2*c):.0%}); vs 1 process 2 threads: {b/c:.2f}')" "$t11" "$t12" "$t21"
