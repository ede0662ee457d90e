#!/usr/bin/env bash
# The lazy-jmethodID benchmarks (issue 4, "Benchmarks"): builds the project, then runs, each in fresh
# child JVMs with the modes shuffled inside every round:
#   memory  com.datadoghq.profiler.bench.MemoryBenchmark       NMT deltas while 20,000 classes x 50
#                                                              methods load (none, true, false, lazy)
#   churn   com.datadoghq.profiler.bench.ClassChurnBenchmark   classes/s through short-lived loaders
#   dump    com.datadoghq.profiler.bench.DumpLatencyBenchmark  first and later dump latency, ~2,000
#                                                              sampled classes (true, false, lazy)
# Results and how to read them: docs/benchmarks.md ("Lazy method IDs").
#
#   bash scripts/bench-lazy.sh [--no-build] [--only=memory,churn,dump] [-Dkey=value ...]
#
# The JDK is $JAVA_HOME/bin/java if JAVA_HOME is set, else `java` on PATH; the children use the same
# JDK unless -Djava=/path/to/bin/java says otherwise. Options (system properties, given to all three):
#   -Drounds=3          fresh JVMs per mode (the tables show the median [min..max])
#   -Dseed=N            shuffle seed (default: time)
#   -DjvmArgs="..."     extra child JVM options (after each benchmark's own -Xms256m -Xmx256m ...)
#   -DquietWait=20 -DquietBudget=60 -DquietCpu=0.3
#                       before each child, wait up to quietWait s (quietBudget s in all, per
#                       benchmark) until the rest of the host uses < quietCpu CPUs
#   -Dmem.classes=20000 -Dmem.methods=50 -Dmem.perLoader=100 -Dmem.modes=none,true,false,lazy
#   -Dmem.settle=5500   ms the child waits before each NMT summary (HotSpot empties its arena-chunk
#                       pool every 5 s; without the wait the totals carry a few MiB of noise)
#   -Dchurn.perLoader=50 -Dchurn.methods=20 -Dchurn.warmup=1.5 -Dchurn.measure=5
#   -Dchurn.modes=none,true,false,lazy
#   -Ddump.classes=2000 -Ddump.extra=19 -Ddump.iters=200 -Ddump.depth=11 -Ddump.threads=2
#   -Ddump.measure=5 -Ddump.gap=1 -Ddump.later=3 -Ddump.interval=1ms -Ddump.modes=true,false,lazy
# --no-build skips `mvn -q -DskipTests install` (uses the jars already in */target).
# Defaults take about 6-7 minutes on a quiet 2-CPU host (memory ~3 min, churn ~2, dump ~2), plus up
# to 3 minutes of waiting for a quiet host.
set -euo pipefail

# All in one function, and the call and exit on one line: bash reads the file as it goes, so this
# keeps an edit to the file during a run from being executed.
main() {
  ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  cd "$ROOT"

  build=1
  only="memory,churn,dump"
  props=()
  for a in "$@"; do
    case "$a" in
      --no-build) build=0 ;;
      --only=*) only="${a#--only=}" ;;
      -D*) props+=("$a") ;;
      -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
      *) echo "bench-lazy.sh: unknown argument $a (try --help)" >&2; exit 2 ;;
    esac
  done

  # shellcheck disable=SC1091
  . "$ROOT/scripts/bench-common.sh"
  bench_prepare ddprof-bench-lazy "$build" || exit 1

  echo "bench-lazy.sh: $("$JAVA" -version 2>&1 | head -1); $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'));" \
    "kernel $(uname -r); load $(cut -d' ' -f1-3 /proc/loadavg);" \
    "commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo ' (dirty tree)')"
  start=$(date +%s)
  for b in ${only//,/ }; do
    case "$b" in
      memory) cls=MemoryBenchmark ;;
      churn) cls=ClassChurnBenchmark ;;
      dump) cls=DumpLatencyBenchmark ;;
      *) echo "bench-lazy.sh: unknown benchmark $b (memory, churn, dump)" >&2; exit 2 ;;
    esac
    echo
    echo "=== $b ($cls), load $(cut -d' ' -f1-3 /proc/loadavg)"
    "$JAVA" "${props[@]}" -cp "$BENCH_CP" "com.datadoghq.profiler.bench.$cls"
  done
  echo
  echo "bench-lazy.sh: done in $(( $(date +%s) - start )) s; load $(cut -d' ' -f1-3 /proc/loadavg)"
}

main "$@"; exit $?
