#!/usr/bin/env bash
# Native memory of allocation profiling over thousands of distinct allocating methods
# (com.datadoghq.profiler.bench.AllocMethodsBenchmark): no profiler, ddprof memory=262144:a with
# fjmethodid=lazy and with the default method IDs, and upstream's com.datadoghq:ddprof (1.22.0,
# from Maven Central; it takes allocation stacks through JVMTI GetStackTrace). NMT committed
# deltas against no profiler. See docs/benchmarks.md, "Allocation profiling".
#
#   bash scripts/bench-alloc-methods.sh [--no-build] [--upstream VERSION|none]
#        [-Drounds=3 -Dclasses=20 -Dmethods=500 -DperMethod=524288 -Dmodes=...]
set -euo pipefail

main() {
  ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  cd "$ROOT"
  build=1
  upstream=1.22.0
  props=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --no-build) build=0 ;;
      --upstream) upstream="$2"; shift ;;
      -D*) props+=("$1") ;;
      *) echo "bench-alloc-methods.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
  done
  # shellcheck disable=SC1091
  . "$ROOT/scripts/bench-common.sh"
  bench_prepare bench-alloc-methods "$build" || exit 1
  if [ "$upstream" != none ]; then
    if jar="$(bench_upstream "$upstream")"; then
      props+=("-Dupstream=$jar")
    else
      echo "bench-alloc-methods.sh: com.datadoghq:ddprof:$upstream not available; its mode is left out" >&2
    fi
  fi
  echo "bench-alloc-methods.sh: $("$JAVA" -version 2>&1 | head -1); $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg);" \
    "commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo ' (dirty tree)')"
  "$JAVA" "${props[@]}" -Djava="$JAVA" -cp "$BENCH_CP" com.datadoghq.profiler.bench.AllocMethodsBenchmark
}

main "$@"; exit $?
