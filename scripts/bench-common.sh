# Shared by the benchmark scripts (sourced, not run): picks the JDK, builds unless told not to, and
# snapshots the two jars so that a rebuild during a long run cannot change what later child JVMs load.
#
#   bench_prepare NAME BUILD    (BUILD: 1 or 0) sets JAVA and BENCH_CP; needs ROOT set.

bench_prepare() {
  local name="$1" build="$2"
  if [ -n "${JAVA_HOME:-}" ]; then
    JAVA="$JAVA_HOME/bin/java"
  else
    JAVA="$(command -v java)"
  fi
  if [ "$build" = 1 ]; then
    (cd "$ROOT" && mvn -q -DskipTests install)
  fi
  local bench_jar="$ROOT/ddprof-bench/target/ddprof-bench-0.1.0-SNAPSHOT.jar"
  local lib_jar="$ROOT/ddprof-lib/target/ddprof-0.1.0-SNAPSHOT.jar"
  local j
  for j in "$bench_jar" "$lib_jar"; do
    [ -f "$j" ] || { echo "$name: $j missing: build first (drop --no-build)" >&2; return 1; }
  done
  BENCH_SNAP="$(mktemp -d "${TMPDIR:-/tmp}/$name.XXXXXX")"
  trap 'rm -rf "$BENCH_SNAP"' EXIT
  cp "$bench_jar" "$BENCH_SNAP/ddprof-bench.jar"
  cp "$lib_jar" "$BENCH_SNAP/ddprof.jar"
  BENCH_CP="$BENCH_SNAP/ddprof-bench.jar:$BENCH_SNAP/ddprof.jar"
}
