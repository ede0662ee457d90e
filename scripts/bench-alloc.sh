#!/usr/bin/env bash
# Allocation profiling's cost (com.datadoghq.profiler.bench.AllocBenchmark): an allocation-heavy
# workload against no profiler, for ddprof's memory=524287:a (default and lazy method IDs, with
# liveness), the JDK's jdk.ObjectAllocationSample and async-profiler's alloc (4.5, from Maven
# Central). See docs/benchmarks.md, "Allocation profiling".
#
#   bash scripts/bench-alloc.sh [--no-build] [-Drounds=5 -Dthreads=1 -Dwarmup=3 -Dmeasure=6 -Dmodes=...]
#
# -Dworkload=nativemem: native allocations (java.util.zip's zlib state) against no profiler, for
# ddprof's and async-profiler's nativemem at every allocation and at 1 MiB (docs/benchmarks.md,
# "Native memory profiling").
set -euo pipefail

main() {
  ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  cd "$ROOT"
  build=1
  props=()
  for a in "$@"; do
    case "$a" in
      --no-build) build=0 ;;
      -D*) props+=("$a") ;;
      *) echo "bench-alloc.sh: unknown argument $a" >&2; exit 2 ;;
    esac
  done
  # shellcheck disable=SC1091
  . "$ROOT/scripts/bench-common.sh"
  bench_prepare bench-alloc "$build" || exit 1
  asprof_dir="$BENCH_SNAP/asprof"
  mkdir -p "$asprof_dir"
  if mvn -q dependency:copy -Dartifact=tools.profiler:async-profiler:4.5 -DoutputDirectory="$asprof_dir" >/dev/null 2>&1 \
      && (cd "$asprof_dir" && unzip -q -o async-profiler-4.5.jar 'linux-x64/libasyncProfiler.so'); then
    props+=("-Dasprof=$asprof_dir/linux-x64/libasyncProfiler.so")
  else
    echo "bench-alloc.sh: async-profiler not available; its mode is left out" >&2
  fi
  echo "bench-alloc.sh: $("$JAVA" -version 2>&1 | head -1); $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg);" \
    "commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  "$JAVA" "${props[@]}" -Djava="$JAVA" -cp "$BENCH_CP" com.datadoghq.profiler.bench.AllocBenchmark
}

main "$@"; exit $?
