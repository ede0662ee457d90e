#!/usr/bin/env bash
# The Datadog tracer's default command string (CPU, wall-clock with the thread filter, allocation and
# live-heap sampling, a context attribute) against CPU alone, ours beside upstream java-profiler
# (com.datadoghq:ddprof:1.22.0 from Maven Central) and no profiler, on a real program: the Kotlin
# compiler compiling a generated source set 4 times in one JVM, a dump after each compile
# (com.datadoghq.profiler.bench.TracerConfigBenchmark). Prints every run, then a table: wall time and
# process CPU against `none` in the same round, first and later dump times. Results:
# docs/benchmarks.md, "The tracer's full configuration".
#
#   bash scripts/bench-tracer.sh [--no-build] [--upstream=VERSION|none] [-Dkey=value ...]
#
# Options (system properties): -Drounds=3 -Dkt.files=40 -Dkt.compiles=4
# -Dkt.modes=none,upstream-cpu,ours-cpu,upstream-tracer,ours-tracer -Dkotlin.version=2.2.21
# -DjvmArgs="..." -Dseed=N, and the quiet-host wait (-DquietWait=20 -DquietBudget=60 -DquietCpu=0.3).
# About 5 x 3 fresh JVMs of 40-80 s each on a quiet 2-CPU host: ~20 minutes with the defaults.
set -euo pipefail

main() {
  ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  cd "$ROOT"
  local build=1 version=2.2.21 upstream=1.22.0 props=()
  for a in "$@"; do
    case "$a" in
      --no-build) build=0 ;;
      --upstream=*) upstream="${a#--upstream=}" ;;
      -Dkotlin.version=*) version="${a#-Dkotlin.version=}" ;;
      -D*) props+=("$a") ;;
      -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
      *) echo "bench-tracer.sh: unknown argument $a (try --help)" >&2; exit 2 ;;
    esac
  done
  # shellcheck disable=SC1091
  . "$ROOT/scripts/bench-common.sh"
  bench_prepare ddprof-bench-tracer "$build" || exit 1

  local kcp jar
  kcp="$(bench_kotlin_cp "$version")"
  if [ "$upstream" != none ]; then
    if jar="$(bench_upstream "$upstream")"; then
      props+=("-Dupstream=$jar")
    else
      echo "bench-tracer.sh: com.datadoghq:ddprof:$upstream not available; its modes are left out" >&2
    fi
  fi
  echo "bench-tracer.sh: kotlin-compiler-embeddable $version; upstream $upstream; $(bench_host)"
  local start
  start=$(date +%s)
  "$JAVA" "${props[@]}" "-Dkotlin.cp=$kcp" -cp "$BENCH_CP" com.datadoghq.profiler.bench.TracerConfigBenchmark
  echo "bench-tracer.sh: done in $(( $(date +%s) - start )) s; load $(cut -d' ' -f1-3 /proc/loadavg)"
}

main "$@"; exit $?
