#!/usr/bin/env bash
# Wall-clock sampling of a mostly idle process (issue 12, "Benchmarks"): 1,000 parked threads and 2
# busy ones at wall=50ms, ddprof with and without idle-thread skipping (every thread a candidate, and
# every thread registered as a tracer does), beside no profiler and async-profiler's wall mode, in one
# run, each in a fresh JVM, modes shuffled per round. Prints a markdown table (docs/benchmarks.md,
# "Wall clock: 1,000 idle threads").
#
#   bash scripts/bench-wall.sh [--no-build] [-Drounds=3 -Dseconds=8 -Dwarmup=3 -Didle=1000]
#
# async-profiler comes from Maven Central (tools.profiler:async-profiler, -Dap.version=4.5), fetched
# with Maven into the local repository; -Dap.jar= points at another jar, -Dap.jar= (empty) skips it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=bench-common.sh
. "$ROOT/scripts/bench-common.sh"

build=1
props=()
ap_version=4.5
ap_jar_set=0
ap_jar=""
for a in "$@"; do
  case "$a" in
    --no-build) build=0 ;;
    -Dap.version=*) ap_version="${a#-Dap.version=}" ;;
    -Dap.jar=*) ap_jar_set=1; ap_jar="${a#-Dap.jar=}" ;;
    -D*) props+=("$a") ;;
    *) echo "bench-wall.sh: unknown argument $a" >&2; exit 2 ;;
  esac
done
bench_prepare bench-wall "$build"
if [ "$ap_jar_set" = 0 ]; then
  ap_jar="$HOME/.m2/repository/tools/profiler/async-profiler/$ap_version/async-profiler-$ap_version.jar"
  if [ ! -f "$ap_jar" ]; then
    mvn -q dependency:get -Dartifact="tools.profiler:async-profiler:$ap_version" >/dev/null
  fi
fi
"$JAVA" "${props[@]}" -Dap.jar="$ap_jar" -cp "$BENCH_CP" com.datadoghq.profiler.bench.WallIdleBenchmark
