#!/usr/bin/env bash
# The CPU-overhead benchmark (com.datadoghq.profiler.bench.OverheadBenchmark): builds the project,
# then measures ddprof, the JDK's JFR, async-profiler and upstream java-profiler against no profiler,
# each run in a fresh child JVM.
# See docs/benchmarks.md for what it measures and the latest results.
#
#   bash scripts/bench.sh [--no-build] [--upstream VERSION|none] [-Dkey=value ...]
#
# The JDK is $JAVA_HOME/bin/java if JAVA_HOME is set, else `java` on PATH; the children use the
# same JDK unless -Djava=/path/to/bin/java says otherwise. Options (system properties):
#   -Drounds=5          rounds; each round runs every (mode, threads) pair once, shuffled
#   -Dmodes=none,ddprof-10ms,ddprof-1ms,jfr-10ms,jfr-1ms,asprof-{cpu,ctimer,itimer}-{10ms,1ms},upstream-{10ms,1ms}
#                       modes; `none` is always added. ddprof-<interval> = start,cpu=<interval>
#                       (ctimer at or above the tick, perf_events below); ddprof-itimer-<interval> =
#                       event=itimer; jfr-<interval> = JFR with only jdk.ExecutionSample at that
#                       period; asprof-<event>-<interval> = async-profiler 4.5 (a dependency of
#                       ddprof-bench); upstream-<interval> = upstream java-profiler, start,cpu=<interval>
#   --upstream VERSION|none
#                       upstream java-profiler's version (1.22.0), fetched from Maven Central
#   -Dthreads=1,2       busy-thread counts
#   -Dwarmup=3 -Dmeasure=8
#                       seconds of warm-up and of measurement per child JVM
#   -Dseed=N            shuffle seed (default: time)
#   -Dretries=1 -DretryBudget=10 -DminShare=0.9
#                       a run whose JVM got < minShare of the CPU it asked for (the host was busy)
#                       is run again, up to `retries` times and `retryBudget` reruns in all (that
#                       adds at most ~2 min); the attempt with most CPU counts
#   -DquietWait=30 -DquietBudget=120
#                       before each child JVM, wait up to quietWait s (quietBudget s in all) until the
#                       rest of the host uses < 0.2 CPU (/proc/stat): lets someone else's build finish
#   -DjvmArgs="-Xms256m -Xmx256m"
#                       child JVM options
#   -Dout=FILE          also write every raw run as CSV
#   -Dfrom=A.csv[,B.csv] run nothing: print the table for runs saved with -Dout (use with --no-build)
#   -DreportMinShare=0.9 leave runs that got < 0.9 of their CPU out of the table
#   -Dbench.workload=switch
#                       the context-switch-heavy workload (worker and echo thread ping-pong through
#                       pipes, tens of thousands of switches/s) in place of the CPU-bound one; add
#                       -DminShare=0 (blocked threads never ask for a whole CPU)
#   -Dbench.levelIters=500 -Dbench.leafIters=12500
#                       work per op (~50 us on a 2020s x86 core), passed on to every child
# --no-build skips `mvn -q -DskipTests install` (uses the jars already in */target).
# Defaults take about 28 minutes (5 rounds x 26 runs x ~13 s); -Drounds=3 about 17.
set -euo pipefail

# All in one function, and the call and exit on one line: bash reads the file as it goes, so this
# keeps an edit to the file during a run from being executed.
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
      -h|--help) sed -n '2,39p' "$0"; exit 0 ;;
      *) echo "bench.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
    esac
    shift
  done

  # shellcheck disable=SC1091
  . "$ROOT/scripts/bench-common.sh"
  bench_prepare ddprof-bench "$build" || exit 1
  bench_peer_deps || { echo "bench.sh: cannot resolve ddprof-bench's dependencies (the peers)" >&2; exit 1; }
  if [ "$upstream" != none ]; then
    if jar="$(bench_upstream "$upstream")"; then
      props+=("-Dupstream=$jar")
    else
      echo "bench.sh: com.datadoghq:ddprof:$upstream not available; its modes are left out" >&2
    fi
  fi

  echo "bench.sh: $("$JAVA" -version 2>&1 | head -1); $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg);" \
    "commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo ' (dirty tree)')"
  "$JAVA" "${props[@]}" -cp "$BENCH_CP" com.datadoghq.profiler.bench.OverheadBenchmark
}

main "$@"; exit $?
