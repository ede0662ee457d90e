#!/usr/bin/env bash
# Soak benchmark (issue 10): one JVM profiled at cpu=1ms for 30 minutes on stacks that keep
# changing, a dump every second; RSS, native_mem_* and the call-trace table must plateau.
#
#   bash scripts/bench-soak.sh [--no-build] [--minutes=30] [--interval=10] [--threads=2] [--threshold=2] [...]
#
# Every --interval seconds a row (elapsed, VmRSS, native_mem_live_bytes and its largest heap
# categories, the calltrace mapping's resident bytes, calltrace_storage_traces/_bytes/_inserts, dump
# time, samples); at the end the growth of each gauge over the first and second half and the verdict.
# Other options: see `SoakBenchmark --help` (--paths, --phaseSeconds, --genSeconds, --mode, ...).
# The JDK is $JAVA_HOME/bin/java if JAVA_HOME is set, else `java` on PATH; JVM options in $SOAK_JVM_ARGS
# (default -Xms256m -Xmx256m -XX:+AlwaysPreTouch, so that the Java heap is resident from the start).
set -euo pipefail

main() {
  ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  cd "$ROOT"
  build=1
  args=()
  for a in "$@"; do
    case "$a" in
      --no-build) build=0 ;;
      -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
      --*=*) args+=("$a") ;;
      *) echo "bench-soak.sh: unknown argument $a (try --help)" >&2; exit 2 ;;
    esac
  done
  # shellcheck disable=SC1091
  . "$ROOT/scripts/bench-common.sh"
  bench_prepare ddprof-bench-soak "$build" || exit 1
  # shellcheck disable=SC2206
  jvm=(${SOAK_JVM_ARGS:--Xms256m -Xmx256m -XX:+AlwaysPreTouch})
  echo "bench-soak.sh: $("$JAVA" -version 2>&1 | head -1); $(nproc) CPUs; $(uname -r); $(date -u +%Y-%m-%dT%H:%MZ);" \
    "commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo ' (dirty tree)');" \
    "load $(cut -d' ' -f1-3 /proc/loadavg); JVM ${jvm[*]}"
  "$JAVA" "${jvm[@]}" -cp "$BENCH_CP" com.datadoghq.profiler.bench.SoakBenchmark "${args[@]}"
}

main "$@"; exit $?
