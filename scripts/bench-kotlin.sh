#!/usr/bin/env bash
# The real-workload row of the lazy-jmethodID benchmarks: native memory and dump latency of
# fjmethodid=true|false|lazy (and no profiler) while the Kotlin compiler compiles a generated source
# set repeatedly in one JVM (com.datadoghq.profiler.bench.KotlinCompileBenchmark). The compiler is
# Maven Central's org.jetbrains.kotlin:kotlin-compiler-embeddable, resolved with its dependencies into
# the local Maven repository on first use. Results: docs/benchmarks.md ("Lazy method IDs", "A real
# workload").
#
#   bash scripts/bench-kotlin.sh [--no-build] [--upstream=VERSION|none] [--main=CLASS] [-Dkey=value ...]
#
# --main runs another benchmark of the same setting (the compiler's classpath, upstream's jar):
# scripts/bench-tracer.sh is this script with --main=com.datadoghq.profiler.bench.TracerConfigBenchmark.
#
# Upstream java-profiler (com.datadoghq:ddprof:1.22.0 from Maven Central, its default method IDs) runs
# as mode `upstream` in place of ours. Options (system properties): -Drounds=3 -Dkt.files=40
# -Dkt.compiles=3 -Dkt.modes=none,true,false,lazy,upstream
# -Dkt.settle=5500 -Dkotlin.version=2.2.21 -DjvmArgs="..." -Dseed=N, and the quiet-host wait of
# bench-lazy.sh (-DquietWait=20 -DquietBudget=60 -DquietCpu=0.3).
# About 19 minutes with the defaults on a quiet 2-CPU host (15 fresh JVMs of about a minute each).
set -euo pipefail

main() {
  ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  cd "$ROOT"
  build=1
  props=()
  version=2.2.21
  upstream=1.22.0
  bench=com.datadoghq.profiler.bench.KotlinCompileBenchmark
  for a in "$@"; do
    case "$a" in
      --no-build) build=0 ;;
      --upstream=*) upstream="${a#--upstream=}" ;;
      --main=*) bench="${a#--main=}" ;;
      -Dkotlin.version=*) version="${a#-Dkotlin.version=}" ;;
      -D*) props+=("$a") ;;
      -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
      *) echo "bench-kotlin.sh: unknown argument $a (try --help)" >&2; exit 2 ;;
    esac
  done
  # shellcheck disable=SC1091
  . "$ROOT/scripts/bench-common.sh"
  bench_prepare ddprof-bench-kotlin "$build" || exit 1

  kcp="$(bench_kotlin_cp "$version")"
  if [ "$upstream" != none ]; then
    if jar="$(bench_upstream "$upstream")"; then
      props+=("-Dupstream=$jar")
    else
      echo "bench-kotlin.sh: com.datadoghq:ddprof:$upstream not available; its mode is left out" >&2
    fi
  fi

  echo "bench-kotlin.sh: kotlin-compiler-embeddable $version; $("$JAVA" -version 2>&1 | head -1); $(nproc) CPUs;" \
    "kernel $(uname -r); load $(cut -d' ' -f1-3 /proc/loadavg);" \
    "commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo ' (dirty tree)')"
  start=$(date +%s)
  "$JAVA" "${props[@]}" "-Dkotlin.cp=$kcp" -cp "$BENCH_CP" "$bench"
  echo "bench-kotlin.sh: done in $(( $(date +%s) - start )) s; load $(cut -d' ' -f1-3 /proc/loadavg)"
}

main "$@"; exit $?
