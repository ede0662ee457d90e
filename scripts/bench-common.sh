# Shared by the benchmark scripts (sourced, not run): picks the JDK, builds unless told not to, and
# snapshots the jars so that a rebuild during a long run cannot change what later child JVMs load.
#
#   bench_prepare NAME BUILD    (BUILD: 1 or 0) sets JAVA, BENCH_CP (benchmarks and library) and
#                               BENCH_TOOLS_CP (the tools and library: java -cp it com.datadoghq.profiler.Main
#                               convert ...); needs ROOT set.

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
  local tools_jar="$ROOT/ddprof-tools/target/ddprof-tools-0.1.0-SNAPSHOT.jar"
  local j
  for j in "$bench_jar" "$lib_jar" "$tools_jar"; do
    [ -f "$j" ] || { echo "$name: $j missing: build first (drop --no-build)" >&2; return 1; }
  done
  BENCH_SNAP="$(mktemp -d "${TMPDIR:-/tmp}/$name.XXXXXX")"
  trap 'rm -rf "$BENCH_SNAP"' EXIT
  cp "$bench_jar" "$BENCH_SNAP/ddprof-bench.jar"
  cp "$lib_jar" "$BENCH_SNAP/ddprof.jar"
  cp "$tools_jar" "$BENCH_SNAP/ddprof-tools.jar"
  BENCH_CP="$BENCH_SNAP/ddprof-bench.jar:$BENCH_SNAP/ddprof.jar"
  BENCH_TOOLS_CP="$BENCH_SNAP/ddprof-tools.jar:$BENCH_SNAP/ddprof.jar"
}

# bench_peer_deps: appends ddprof-bench's own dependencies (async-profiler's jar, JMC's parser, JMH)
# to BENCH_CP, for the children that run the peers. Ours is left out: BENCH_CP has its snapshot.
bench_peer_deps() {
  (cd "$ROOT" && mvn -q -f ddprof-bench/pom.xml dependency:build-classpath -DexcludeArtifactIds=ddprof \
    -Dmdep.outputFile="$BENCH_SNAP/deps.txt" >/dev/null) || return 1
  BENCH_CP="$BENCH_CP:$(cat "$BENCH_SNAP/deps.txt")"
}

# bench_upstream VERSION: fetches upstream java-profiler's jar (com.datadoghq:ddprof:VERSION, our
# coordinates, so not a dependency) into BENCH_SNAP and prints its path; fails if it cannot.
bench_upstream() {
  (cd "$ROOT" && mvn -q org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
    -Dartifact="com.datadoghq:ddprof:$1" -DoutputDirectory="$BENCH_SNAP" >/dev/null 2>&1) || return 1
  echo "$BENCH_SNAP/ddprof-$1.jar"
}

# bench_kotlin_cp VERSION: prints the classpath of the Kotlin compiler (kotlin-compiler-embeddable
# VERSION and its dependencies, resolved into the local Maven repository on first use), from a
# throwaway pom in BENCH_SNAP.
bench_kotlin_cp() {
  local kdir="$BENCH_SNAP/kotlin"
  mkdir -p "$kdir"
  cat > "$kdir/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>bench</groupId><artifactId>kotlin-cp</artifactId><version>1</version>
  <dependencies>
    <dependency>
      <groupId>org.jetbrains.kotlin</groupId><artifactId>kotlin-compiler-embeddable</artifactId>
      <version>$1</version>
    </dependency>
  </dependencies>
</project>
POM
  mvn -q -f "$kdir/pom.xml" dependency:build-classpath -Dmdep.outputFile="$kdir/cp.txt" >/dev/null || return 1
  cat "$kdir/cp.txt"
}

# bench_median FILE INDEX COLUMN: the median of a column over the lines of FILE whose first
# field is INDEX (one run a line, as the A/B scripts write them); "?" when there are none.
bench_median() {
  awk -v s="$2" -v c="$3" '$1 == s && $c != "" { print $c }' "$1" | sort -n |
    awk '{ v[NR] = $1 } END { if (NR == 0) print "?"; else if (NR % 2) print v[(NR + 1) / 2];
      else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# bench_snap_lib INDEX LIB: copies a native library into BENCH_SNAP (a rebuild during the run
# changes nothing) and prints the copy's path; fails, saying so, when LIB is not a file.
bench_snap_lib() {
  [ -f "$2" ] || { echo "no library $2" >&2; return 2; }
  cp "$2" "$BENCH_SNAP/lib$1.so"
  echo "$BENCH_SNAP/lib$1.so"
}

# bench_host: the JDK, CPUs, kernel, load and commit of a run, for its first line.
bench_host() {
  echo "$("$JAVA" -version 2>&1 | head -1); $(nproc) CPUs; kernel $(uname -r);" \
    "load $(cut -d' ' -f1-3 /proc/loadavg); commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
}
