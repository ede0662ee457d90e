#!/usr/bin/env bash
# The context-write micro-benchmarks (issue 11, "Cost"): JMH, ddprof beside an empty JNI call, a
# pure-Java baseline and upstream's published jar, on each JDK, in one run. Builds the project,
# then per JDK runs two JMH invocations back to back:
#   1. ours (com.datadoghq:ddprof, built here): com.datadoghq.profiler.bench.ContextBenchmark (setTraceContext,
#      setContextValue, clearTraceContext, the empty JNI call, the Java baseline) and
#      LegacyContextBenchmark (setContext, setContextValue(offset, encoding), clearContext);
#   2. upstream's com.datadoghq:ddprof jar (fetched with Maven) in place of ours:
#      LegacyContextBenchmark only (upstream's jar has only that API).
# Each benchmark runs in its own forked JVM (JMH @Fork); the second invocation's forks load the
# other library. Then prints one table (ns/op with JMH's 99.9% error, and the ratio to the empty
# JNI call measured on the same JDK). Results and how to read them: docs/benchmarks.md
# ("Context writes").
#
#   bash scripts/bench-context.sh [--no-build] [--jdks=/jdk/home,...] [--upstream=VERSION|none]
#                                 [--protocol] [--out=DIR] [-- extra JMH arguments]
#
# --jdks       JDK homes to run on (default: the JDK 17 and 25 of .jdks/env.sh, from
#              scripts/install-jdks.sh, else $JAVA_HOME or `java` on PATH alone)
# --upstream   the com.datadoghq:ddprof version to compare with (default 1.22.0); none skips it
# --protocol   instead, ContextProtocolBenchmark alone on each JDK: the record protocols' price through a
#              direct buffer, no profiler loaded (upstream's three stores, our valid round trip, ...)
# --out        keep JMH's CSV files there (default: a temporary directory, removed at exit)
# JMH defaults here: -wi 3 -w 500ms -i 8 -r 500ms -f 1 (about 6 s per benchmark, 12 benchmarks
# per JDK: ~2.5 minutes for two JDKs). Anything after -- goes to both JMH invocations, e.g.
# `-- -f 3 -i 10` for tighter errors or `-- -prof perfasm`.
# --no-build skips `mvn -q -DskipTests install` (uses the jars already in */target).
set -euo pipefail

main() {
  ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  cd "$ROOT"

  build=1
  jdks=""
  upstream="1.22.0"
  protocol=0
  out=""
  jmh_extra=()
  local flag_value
  while [ $# -gt 0 ]; do
    case "$1" in
      --no-build) build=0 ;;
      --jdks=*) jdks="${1#--jdks=}" ;;
      --upstream=*) upstream="${1#--upstream=}" ;;
      --protocol) protocol=1 ;;
      --out=*) out="${1#--out=}" ;;
      --) shift; jmh_extra=("$@"); break ;;
      -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
      *) echo "bench-context.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
    esac
    shift
  done

  if [ -z "$jdks" ]; then
    if [ -f "$ROOT/.jdks/env.sh" ]; then
      # shellcheck disable=SC1091
      . "$ROOT/.jdks/env.sh"
    fi
    if [ -n "${JDK17:-}" ] && [ -n "${JDK25:-}" ]; then
      jdks="$JDK17,$JDK25"
    elif [ -n "${JAVA_HOME:-}" ]; then
      jdks="$JAVA_HOME"
    else
      jdks="$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")"
    fi
  fi

  # shellcheck disable=SC1091
  . "$ROOT/scripts/bench-common.sh"
  bench_prepare ddprof-bench-context "$build" || exit 1
  if [ -n "$out" ]; then
    mkdir -p "$out"
  else
    out="$BENCH_SNAP"
  fi

  # JMH and its dependencies (jopt-simple, commons-math3), without our jar: the snapshot's
  # or upstream's jar goes in its place.
  mvn -q -pl ddprof-bench dependency:build-classpath -Dmdep.includeScope=runtime \
    -Dmdep.outputFile="$BENCH_SNAP/jmh.cp" >/dev/null
  jmh_cp="$(tr ':' '\n' <"$BENCH_SNAP/jmh.cp" | grep -v -e '/com/datadoghq/ddprof/' -e '/ddprof-lib/target/' | paste -sd: -)"
  ours_cp="$BENCH_SNAP/ddprof-bench.jar:$BENCH_SNAP/ddprof.jar:$jmh_cp"
  ours_pattern='com\.datadoghq\.profiler\.bench\.(Legacy)?ContextBenchmark\.'
  if [ "$protocol" = 1 ]; then
    upstream=none
    ours_pattern='com\.datadoghq\.profiler\.bench\.ContextProtocolBenchmark\.'
  fi
  if [ "$upstream" != none ]; then
    mvn -q org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
      -Dartifact="com.datadoghq:ddprof:$upstream" -DoutputDirectory="$BENCH_SNAP" >/dev/null
    upstream_cp="$BENCH_SNAP/ddprof-bench.jar:$BENCH_SNAP/ddprof-$upstream.jar:$jmh_cp"
  fi

  # The defaults, less those the extra arguments give (JMH refuses an option given twice).
  jmh_opts=()
  local flag value
  for flag_value in "-wi 3" "-w 500ms" "-i 8" "-r 500ms" "-f 1" "-foe true"; do
    flag="${flag_value%% *}"
    value="${flag_value#* }"
    case " ${jmh_extra[*]} " in *" $flag "*) ;; *) jmh_opts+=("$flag" "$value") ;; esac
  done
  jmh_opts+=("${jmh_extra[@]}")
  echo "bench-context.sh: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'));" \
    "kernel $(uname -r); load $(cut -d' ' -f1-3 /proc/loadavg);" \
    "commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo ' (dirty tree)');" \
    "JMH ${jmh_opts[*]}"
  start=$(date +%s)
  results=()
  for home in ${jdks//,/ }; do
    java="$home/bin/java"
    [ -x "$java" ] || { echo "bench-context.sh: $java not found" >&2; exit 1; }
    version="$("$java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.runtime.version = //p')"
    tag="$(echo "$version" | tr -c 'A-Za-z0-9.\n' '_')"
    echo
    echo "=== JDK $version ($home): ddprof, load $(cut -d' ' -f1-3 /proc/loadavg)"
    "$java" -cp "$ours_cp" org.openjdk.jmh.Main "${jmh_opts[@]}" -jvm "$java" \
      -rf csv -rff "$out/ddprof-$tag.csv" \
      "$ours_pattern" | grep -E '^(Benchmark|Context|Legacy|# (Benchmark|VM version):)' || true
    [ -s "$out/ddprof-$tag.csv" ] || { echo "bench-context.sh: no results from the ddprof run" >&2; exit 1; }
    results+=("$version|ddprof|$out/ddprof-$tag.csv")
    if [ "$upstream" != none ]; then
      echo "=== JDK $version ($home): upstream ddprof $upstream, load $(cut -d' ' -f1-3 /proc/loadavg)"
      "$java" -cp "$upstream_cp" org.openjdk.jmh.Main "${jmh_opts[@]}" -jvm "$java" \
        -rf csv -rff "$out/upstream-$tag.csv" \
        'com\.datadoghq\.profiler\.bench\.LegacyContextBenchmark\.' | grep -E '^(Benchmark|Context|Legacy|# (Benchmark|VM version):)' || true
      [ -s "$out/upstream-$tag.csv" ] || { echo "bench-context.sh: no results from the upstream run" >&2; exit 1; }
      results+=("$version|upstream $upstream|$out/upstream-$tag.csv")
    fi
  done

  echo
  echo "| JDK | library | call | ns/op | ± (99.9%) | / empty JNI |"
  echo "|---|---|---|---|---|---|"
  for r in "${results[@]}"; do
    IFS='|' read -r version lib csv <<<"$r"
    # The empty JNI call of this JDK (from the ddprof run, which precedes upstream's).
    case "$lib" in ddprof) jni="$(awk -F, '$1 ~ /emptyJni"$/ {print $5}' "$csv")" ;; esac
    awk -F, -v jdk="$version" -v lib="$lib" -v jni="${jni:-0}" '
      NR > 1 {
        name = $1; gsub(/"/, "", name); sub(/^com\.datadoghq\.profiler\.bench\./, "", name)
        ratio = jni > 0 ? sprintf("%.2f", $5 / jni) : "—"
        printf "| %s | %s | %s | %.2f | %.2f | %s |\n", jdk, lib, name, $5, $6, ratio
      }' "$csv"
  done
  echo
  echo "bench-context.sh: done in $(( $(date +%s) - start )) s; load $(cut -d' ' -f1-3 /proc/loadavg)"
}

main "$@"; exit $?
