#!/usr/bin/env bash
# The wall sampler's CPU per wall sample and per registered thread (issue 36), ours beside upstream
# java-profiler (com.datadoghq:ddprof:1.22.0 from Maven Central) and no profiler: N threads registered
# with the thread filter as the tracer does (addThread() from each), half parked, half in short CPU
# bursts, the profiler started with `wall=~50m,filter=0` only, at N = 10, 100 and 1,000
# (com.datadoghq.profiler.bench.WallThreadsBenchmark). Every (mode, N) is a fresh JVM, all shuffled in
# each round. Prints every run, then a markdown table (docs/benchmarks.md, "CPU per sample and per
# registered thread, beside upstream").
#
#   bash scripts/bench-wall-threads.sh [--no-build] [--upstream=VERSION|none] [-Dkey=value ...]
#
# Options (system properties): -Drounds=3 -Dseconds=10 -Dwarmup=3 -Dthreads=10,100,1000
# -Dwall.modes=none,ours,upstream -Dburst=2 -Dload=0.05 -DjvmArgs="..." -Dseed=N, and the quiet-host
# wait (-DquietWait=20 -DquietBudget=60 -DquietCpu=0.3). About 9 fresh JVMs of ~15 s a round.
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,14p' "$0"; exit 0 ;; esac

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=bench-common.sh disable=SC1091
. "$ROOT/scripts/bench-common.sh"

build=1
upstream=1.22.0
props=()
for a in "$@"; do
  case "$a" in
    --no-build) build=0 ;;
    --upstream=*) upstream="${a#--upstream=}" ;;
    -D*) props+=("$a") ;;
    *) echo "bench-wall-threads.sh: unknown argument $a (try --help)" >&2; exit 2 ;;
  esac
done
bench_prepare bench-wall-threads "$build"
# JMC's parser reads both recordings (jdk.jfr.consumer rejects upstream's).
bench_peer_deps || { echo "bench-wall-threads.sh: cannot resolve ddprof-bench's dependencies" >&2; exit 1; }
if [ "$upstream" != none ]; then
  if jar="$(bench_upstream "$upstream")"; then
    props+=("-Dupstream=$jar")
  else
    echo "bench-wall-threads.sh: com.datadoghq:ddprof:$upstream not available; its mode is left out" >&2
  fi
fi
echo "bench-wall-threads.sh: $("$JAVA" -version 2>&1 | head -1); $(nproc) CPUs; kernel $(uname -r);" \
  "load $(cut -d' ' -f1-3 /proc/loadavg); upstream ${upstream};" \
  "commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo ' (dirty tree)')"
"$JAVA" "${props[@]}" -cp "$BENCH_CP" com.datadoghq.profiler.bench.WallThreadsBenchmark
