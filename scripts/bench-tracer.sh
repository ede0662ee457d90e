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
# The setting (build, the compiler's classpath, upstream's jar) is scripts/bench-kotlin.sh's.
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,16p' "$0"; exit 0 ;; esac
exec bash "$(dirname "${BASH_SOURCE[0]}")/bench-kotlin.sh" --main=com.datadoghq.profiler.bench.TracerConfigBenchmark "$@"
