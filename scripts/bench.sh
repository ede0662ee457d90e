#!/usr/bin/env bash
# The CPU-overhead benchmark (com.datadoghq.profiler.bench.OverheadBenchmark): builds the project,
# then measures ddprof and the JDK's JFR against no profiler, each run in a fresh child JVM.
# See docs/benchmarks.md for what it measures and the latest results.
#
#   bash scripts/bench.sh [--no-build] [-Dkey=value ...]
#
# The JDK is $JAVA_HOME/bin/java if JAVA_HOME is set, else `java` on PATH; the children use the
# same JDK unless -Djava=/path/to/bin/java says otherwise. Options (system properties):
#   -Drounds=5          rounds; each round runs every (mode, threads) pair once, shuffled
#   -Dmodes=none,ddprof-10ms,ddprof-1ms,jfr-10ms,jfr-1ms
#                       modes; `none` is always added. ddprof-<interval> = start,cpu=<interval>
#                       (ctimer); ddprof-itimer-<interval> = event=itimer; jfr-<interval> = JFR with
#                       only jdk.ExecutionSample at that period
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
#   -Dbench.levelIters=500 -Dbench.leafIters=12500
#                       work per op (~50 us on a 2020s x86 core), passed on to every child
# --no-build skips `mvn -q -DskipTests install` (uses the jars already in */target).
# Defaults take about 11 minutes (5 rounds x 10 runs x ~13 s), at most ~15 on a busy host.
set -euo pipefail

# All in one function, and the call and exit on one line: bash reads the file as it goes, so this
# keeps an edit to the file during a run from being executed.
main() {
  ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  cd "$ROOT"

  build=1
  props=()
  for a in "$@"; do
    case "$a" in
      --no-build) build=0 ;;
      -D*) props+=("$a") ;;
      -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
      *) echo "bench.sh: unknown argument $a (try --help)" >&2; exit 2 ;;
    esac
  done

  # shellcheck disable=SC1091
  . "$ROOT/scripts/bench-common.sh"
  bench_prepare ddprof-bench "$build" || exit 1

  echo "bench.sh: $("$JAVA" -version 2>&1 | head -1); $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg);" \
    "commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo ' (dirty tree)')"
  "$JAVA" "${props[@]}" -cp "$BENCH_CP" com.datadoghq.profiler.bench.OverheadBenchmark
}

main "$@"; exit $?
