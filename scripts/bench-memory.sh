#!/usr/bin/env bash
# The profiler's own native memory per category (issue 5): the budget table of docs/footprint.md,
# from the profiler's native_mem_* gauges, in one JVM per mode (about 30 s each).
#
#   bash scripts/bench-memory.sh [--no-build] [mode=lazy] [threads=200] [classes=10000] [sampled=2000] [seconds=8]
#
# Prints, per category: after start, per thread, per loaded class, and the dump's peak per distinct
# sampled method; then the RSS figures and the profiler's lower and upper bound of its share.
# The JDK is $JAVA_HOME/bin/java if JAVA_HOME is set, else `java` on PATH.
set -euo pipefail

main() {
  ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  cd "$ROOT"
  build=1
  args=()
  for a in "$@"; do
    case "$a" in
      --no-build) build=0 ;;
      -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
      *=*) args+=("$a") ;;
      *) echo "bench-memory.sh: unknown argument $a (try --help)" >&2; exit 2 ;;
    esac
  done
  # shellcheck disable=SC1091
  . "$ROOT/scripts/bench-common.sh"
  bench_prepare ddprof-bench-memory "$build" || exit 1
  echo "bench-memory.sh: $("$JAVA" -version 2>&1 | head -1); glibc $(ldd --version | head -1 | awk '{print $NF}');" \
    "commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo ' (dirty tree)')"
  "$JAVA" -Xms256m -Xmx256m -cp "$BENCH_CP" com.datadoghq.profiler.bench.MemoryBudgetBenchmark "${args[@]}"
}

main "$@"; exit $?
