#!/usr/bin/env bash
# What a user of the published artifact sees: a scratch Maven project that depends on
# com.datadoghq:ddprof as installed in the local repository (mvn install, which scripts/test.sh
# runs first), resolved offline (-o). It checks
#
#   - the resolved dependencies are that one artifact of ours and nothing else, and its pom
#     names no parent and no dependency;
#   - the jar is the one just built (ddprof-lib/target), under 2.5 MB (the bound of the jar with both architectures), and carries the LICENSE and
#     the manifest entries (version, Enable-Native-Access);
#   - it carries linux-arm64's library beside linux-x64's, stripped, its .debug file in the
#     debuginfo artifact with the same build id;
#   - the x86_64 library in it is stripped of its DWARF and names its .debug file, which the
#     debuginfo artifact carries with the same build id, and which turns an address of the
#     stripped library into a source line (how a crash report is read: docs/debugging.md);
#   - the sources and javadoc artifacts resolve and hold the API;
#   - the jar holds the profiler, not the command-line tools: no com.datadoghq.profiler.tools class,
#     only the OTLP exporter's converting classes (com.datadoghq.profiler.export), and
#     `java -jar ddprof.jar convert` names the tools jar;
#   - the tools artifact (com.datadoghq:ddprof-tools) resolves to itself and the library, and
#     `java -jar` on it, the library beside it, converts the consumer's recording;
#   - the project's own main profiles itself with fjmethodid=lazy, reads its recording back with
#     jdk.jfr.consumer and finds samples of its own method, and getVersion() is the artifact's
#     version; on JDK 24+ (when given) with --enable-native-access=ALL-UNNAMED and no warning.
#
#   bash scripts/consumer-test.sh [JAVA_HOME ...]   (default: $JAVA_HOME or the java on PATH)
#
# Needs what the build needs (Maven with the plugins the build downloaded, binutils). Work files:
# target/consumer-test/ at the repository root.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="$ROOT/target/consumer-test"
fail() { echo "consumer-test.sh: FAIL: $*" >&2; exit 1; }
note() { echo "consumer-test.sh: $*"; }

VERSION="$(sed -n 's|^  <version>\(.*\)</version>$|\1|p' "$ROOT/pom.xml" | sed -n 1p)"
[ -n "$VERSION" ] || fail "no <version> in $ROOT/pom.xml"
BUILT="$ROOT/ddprof-lib/target/ddprof-$VERSION.jar"
[ -f "$BUILT" ] || fail "$BUILT missing: build and install first (mvn -DskipTests install)"
MAX_JAR_BYTES=2500000

javas=("$@")
if [ ${#javas[@]} = 0 ]; then
  javas=("${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")}")
fi

rm -rf "$WORK"
mkdir -p "$WORK/app/src/main/java/consumer"
cd "$WORK/app"

# Plugin versions are the build's own (root pom.xml), so that -o finds them in the local repository.
plugin_version() { sed -n "s|^ *<$1.version>\(.*\)</$1.version>$|\1|p" "$ROOT/pom.xml" | sed -n 1p; }
# A scratch project's pom up to its plugins: pom_head ARTIFACT_ID DEPENDENCY (com.datadoghq's, this version).
pom_head() {
  cat <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0"
         xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 https://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>
  <groupId>example</groupId>
  <artifactId>$1</artifactId>
  <version>1</version>
  <properties>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
    <maven.compiler.release>11</maven.compiler.release>
  </properties>
  <dependencies>
    <dependency>
      <groupId>com.datadoghq</groupId>
      <artifactId>$2</artifactId>
      <version>$VERSION</version>
    </dependency>
  </dependencies>
  <build>
    <plugins>
EOF
}
{ pom_head ddprof-consumer ddprof; cat <<EOF; } >pom.xml
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-resources-plugin</artifactId>
        <version>$(plugin_version maven-resources-plugin)</version>
      </plugin>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-compiler-plugin</artifactId>
        <version>$(plugin_version maven-compiler-plugin)</version>
      </plugin>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-dependency-plugin</artifactId>
        <version>$(plugin_version maven-dependency-plugin)</version>
        <configuration>
          <!-- dependency:list, dependency:build-classpath -->
          <includeScope>runtime</includeScope>
          <outputAbsoluteArtifactFilename>true</outputAbsoluteArtifactFilename>
          <!-- dependency:copy: the artifact's companions -->
          <artifactItems>
            <artifactItem><groupId>com.datadoghq</groupId><artifactId>ddprof</artifactId><version>$VERSION</version><classifier>debuginfo</classifier></artifactItem>
            <artifactItem><groupId>com.datadoghq</groupId><artifactId>ddprof</artifactId><version>$VERSION</version><classifier>sources</classifier></artifactItem>
            <artifactItem><groupId>com.datadoghq</groupId><artifactId>ddprof</artifactId><version>$VERSION</version><classifier>javadoc</classifier></artifactItem>
          </artifactItems>
          <outputDirectory>$WORK/companions</outputDirectory>
        </configuration>
      </plugin>
    </plugins>
  </build>
</project>
EOF

cat >src/main/java/consumer/App.java <<'EOF'
package consumer;

import com.datadoghq.profiler.JavaProfiler;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Path;
import java.nio.file.Paths;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordingFile;

/** Profiles itself with the published jar and reads its own recording. Args: file, version. */
public final class App {
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        Path jfr = Paths.get(args[0]).toAbsolutePath();
        JavaProfiler profiler = JavaProfiler.getInstance();
        System.out.println("start: " + profiler.execute("start,cpu=10ms,fjmethodid=lazy,file=" + jfr).trim());
        // 1.5 s of this thread's CPU time, however busy the host is.
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long until = threads.getCurrentThreadCpuTime() + 1_500_000_000L;
        while (threads.getCurrentThreadCpuTime() < until) {
            burn();
        }
        profiler.stop();

        long samples = 0;
        long ours = 0;
        try (RecordingFile in = new RecordingFile(jfr)) {
            while (in.hasMoreEvents()) {
                RecordedEvent e = in.readEvent();
                if (!e.getEventType().getName().equals("datadog.ExecutionSample")) {
                    continue;
                }
                samples++;
                if (e.getStackTrace() == null) {
                    continue;
                }
                for (RecordedFrame f : e.getStackTrace().getFrames()) {
                    if (f.getMethod() != null && f.getMethod().getType().getName().equals(App.class.getName())
                            && f.getMethod().getName().equals("burn")) {
                        ours++;
                        break;
                    }
                }
            }
        }
        String version = profiler.getVersion();
        System.out.println("version=" + version + " samples=" + samples + " in App.burn=" + ours);
        if (!version.equals(args[1])) {
            System.out.println("FAIL: getVersion() is " + version + ", the artifact's version " + args[1]);
            System.exit(1);
        }
        if (ours == 0) {
            System.out.println("FAIL: no datadog.ExecutionSample in App.burn");
            System.exit(1);
        }
    }

    private static void burn() {
        long x = sink;
        for (int i = 0; i < 100_000; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        sink = x;
    }
}
EOF

# One offline Maven run: compile the program, list and print its dependencies, fetch the companions.
note "mvn -o compile dependency:list dependency:build-classpath dependency:copy (log: $WORK/mvn.log)"
if ! mvn -o -B -Dstyle.color=never compile dependency:list dependency:build-classpath dependency:copy \
    -DoutputFile="$WORK/deps.txt" -Dmdep.outputFile="$WORK/cp.txt" >"$WORK/mvn.log" 2>&1; then
  tail -30 "$WORK/mvn.log" >&2
  fail "the consumer project does not build offline: is com.datadoghq:ddprof:$VERSION installed (mvn install)?"
fi

# 1. The dependency tree: our one artifact.
deps="$(grep -E '^ +[^ ]+:[^ ]+:' "$WORK/deps.txt" | sed 's/^ *//; s/ -- .*//' || true)"
note "resolved dependencies: $(echo "$deps" | sed 's/:[^:]*$//' | paste -sd' ' -)"
[ "$(echo "$deps" | grep -c .)" = 1 ] || fail "expected one dependency, got: $deps"
grep -q "^com.datadoghq:ddprof:jar:$VERSION:compile:" <<< "$deps" || fail "the dependency is not com.datadoghq:ddprof:jar:$VERSION: $deps"
JAR="${deps#*:compile:}"
[ -f "$JAR" ] || fail "resolved jar $JAR does not exist"
[ "$(cat "$WORK/cp.txt")" = "$JAR" ] || fail "the class path is not just $JAR: $(cat "$WORK/cp.txt")"
POM="${JAR%.jar}.pom"
! grep -q "<parent>" "$POM" || fail "$POM names a parent pom (a consumer would need it)"
! grep -q "<dependency>" "$POM" || fail "$POM declares dependencies"
cmp -s "$JAR" "$BUILT" || fail "$JAR is not $BUILT: the local repository holds another build (run mvn install again)"

# 2. The jar.
size=$(stat -c %s "$JAR")
note "jar $(basename "$JAR"): $size bytes (limit $MAX_JAR_BYTES)"
[ "$size" -lt "$MAX_JAR_BYTES" ] || fail "the jar is $size bytes, not under $MAX_JAR_BYTES"
mkdir -p "$WORK/jar"
(cd "$WORK/jar" && unzip -q "$JAR")
[ -f "$WORK/jar/META-INF/LICENSE" ] && grep -q "Apache License" "$WORK/jar/META-INF/LICENSE" || fail "no Apache LICENSE in META-INF"
manifest="$(tr -d '\r' <"$WORK/jar/META-INF/MANIFEST.MF")"
grep -qx "Implementation-Version: $VERSION" <<< "$manifest" || fail "manifest Implementation-Version is not $VERSION"
grep -qx "Enable-Native-Access: ALL-UNNAMED" <<< "$manifest" || fail "manifest lacks Enable-Native-Access: ALL-UNNAMED"
grep -qx "version=$VERSION" "$WORK/jar/com/datadoghq/profiler/ddprof-version.properties" || fail "ddprof-version.properties is not $VERSION"

# 3. The native library: stripped, with its debug info in the debuginfo artifact.
LIB="$WORK/jar/META-INF/native-libs/linux-x64/libjavaProfiler.so"
[ -f "$LIB" ] || fail "no META-INF/native-libs/linux-x64/libjavaProfiler.so in the jar"
sections="$(readelf -SW "$LIB")"
! grep -q '\.debug_' <<< "$sections" || fail "the bundled library still has DWARF sections"
grep -q '\.symtab' <<< "$sections" || fail "the bundled library lost its symbol table"
debuglink="$(readelf -p .gnu_debuglink "$LIB" 2>/dev/null | sed -n 's/^ *\[ *0\] *//p')"
[ "$debuglink" = "libjavaProfiler.so.debug" ] || fail "the bundled library's .gnu_debuglink is '$debuglink'"
build_id() { readelf -n "$1" | sed -n 's/^ *Build ID: *//p'; }
mkdir -p "$WORK/debuginfo"
(cd "$WORK/debuginfo" && unzip -q "$WORK/companions/ddprof-$VERSION-debuginfo.jar")
DEBUG="$WORK/debuginfo/META-INF/native-libs/linux-x64/libjavaProfiler.so.debug"
[ -f "$DEBUG" ] || fail "the debuginfo jar has no META-INF/native-libs/linux-x64/libjavaProfiler.so.debug"
[ -n "$(build_id "$LIB")" ] && [ "$(build_id "$LIB")" = "$(build_id "$DEBUG")" ] \
  || fail "build ids differ: library $(build_id "$LIB"), debug file $(build_id "$DEBUG")"
# The aarch64 library (scripts/build-native-arm64.sh), split the same way.
ARM_LIB="$WORK/jar/META-INF/native-libs/linux-arm64/libjavaProfiler.so"
ARM_DEBUG="$WORK/debuginfo/META-INF/native-libs/linux-arm64/libjavaProfiler.so.debug"
# scripts/test.sh sets DDPROF_ARM64=auto only when it could not get the Rust target: then the
# build warned and the jar lacks it, and so does this check (loudly).
if [ ! -f "$ARM_LIB" ] && [ "${DDPROF_ARM64:-required}" = auto ]; then
  echo "consumer-test: WARNING: no linux-arm64 library in the jar (built without the aarch64 target)" >&2
else
[ -f "$ARM_LIB" ] || fail "no META-INF/native-libs/linux-arm64/libjavaProfiler.so in the jar"
readelf -hW "$ARM_LIB" | grep -q 'Machine: *AArch64' || fail "linux-arm64/libjavaProfiler.so is not an AArch64 file"
! readelf -SW "$ARM_LIB" | grep -q '\.debug_' || fail "the bundled arm64 library still has DWARF sections"
[ -f "$ARM_DEBUG" ] || fail "the debuginfo jar has no META-INF/native-libs/linux-arm64/libjavaProfiler.so.debug"
[ -n "$(build_id "$ARM_LIB")" ] && [ "$(build_id "$ARM_LIB")" = "$(build_id "$ARM_DEBUG")" ] \
  || fail "arm64 build ids differ: library $(build_id "$ARM_LIB"), debug file $(build_id "$ARM_DEBUG")"
fi
# An address of the stripped library, as a crash report gives it, to a source line.
symbol=Java_com_datadoghq_profiler_JavaProfiler_getVersion0
addr="$(nm "$LIB" | awk -v s="$symbol" '$3 == s { print $1 }')"
[ -n "$addr" ] || fail "$symbol is not in the bundled library's symbol table"
line="$(addr2line -f -e "$DEBUG" "0x$addr" | tail -1)"
note "$symbol at 0x$addr: $line (addr2line -e libjavaProfiler.so.debug)"
case "$line" in *natives.rs:[0-9]*) ;; *) fail "the debug file does not name natives.rs for $symbol: $line" ;; esac
if command -v gdb >/dev/null 2>&1; then
  # gdb finds the .debug file through .gnu_debuglink once it lies beside the library.
  mkdir -p "$WORK/gdb"
  cp "$LIB" "$WORK/gdb/"
  alone="$(timeout 120 gdb -nx -batch -ex "info line $symbol" "$WORK/gdb/libjavaProfiler.so" 2>&1 | tail -1)"
  cp "$DEBUG" "$WORK/gdb/"
  linked="$(timeout 120 gdb -nx -batch -ex "info line $symbol" "$WORK/gdb/libjavaProfiler.so" 2>&1 | tail -1)"
  case "$alone" in *"No line number information"*) ;; *) fail "gdb found line numbers in the stripped library alone: $alone" ;; esac
  case "$linked" in *natives.rs*) ;; *) fail "gdb did not follow .gnu_debuglink to the .debug file: $linked" ;; esac
  note "gdb, .debug beside the library: ${linked%% starts at*}"
fi
grep -q 'com/datadoghq/profiler/JavaProfiler.java' <<< "$(unzip -l "$WORK/companions/ddprof-$VERSION-sources.jar")" || fail "sources jar lacks JavaProfiler.java"
grep -q 'com/datadoghq/profiler/export/OtlpExporter.java' <<< "$(unzip -l "$WORK/companions/ddprof-$VERSION-sources.jar")" || fail "sources jar lacks the java11 sources"
grep -q 'com/datadoghq/profiler/JavaProfiler.html' <<< "$(unzip -l "$WORK/companions/ddprof-$VERSION-javadoc.jar")" || fail "javadoc jar lacks JavaProfiler.html"

# The profiler only: the tools are their own artifact (checked in 5.); the exporter's classes stay.
tools_in_jar="$(unzip -Z1 "$JAR" | grep -E '^com/datadoghq/profiler/tools/|flamegraph\.html$' || true)"
[ -z "$tools_in_jar" ] || fail "the library jar carries tools classes: $(echo "$tools_in_jar" | paste -sd' ' -)"
[ -f "$WORK/jar/com/datadoghq/profiler/export/OtlpExporter.class" ] || fail "the library jar lacks the OTLP exporter (com/datadoghq/profiler/export/OtlpExporter.class)"
note "library jar: no com/datadoghq/profiler/tools/ classes; $(unzip -Z1 "$JAR" | grep -c '^com/datadoghq/profiler/export/.*\.class$') exporter classes (com/datadoghq/profiler/export/)"

# 4. The user's program, on each JDK.
cp="target/classes:$(cat "$WORK/cp.txt")"
for home in "${javas[@]}"; do
  java="$home/bin/java"
  feature="$("$java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')"
  flags=()
  if [ "${feature%%.*}" -ge 24 ] 2>/dev/null; then flags=(--enable-native-access=ALL-UNNAMED); fi
  out="$WORK/jdk$feature"
  if ! timeout 300 "$java" "${flags[@]}" -cp "$cp" consumer.App "$out.jfr" "$VERSION" >"$out.out" 2>"$out.err"; then
    cat "$out.out" "$out.err" >&2
    fail "the consumer's main failed on JDK $feature"
  fi
  if grep -qi "warning.*\(restricted method\|native access\)" "$out.err"; then
    cat "$out.err" >&2
    fail "JDK $feature warned about native access with ${flags[*]:-no flag}"
  fi
  note "JDK $feature${flags[*]:+ ${flags[*]}}: $(tail -1 "$out.out")"
  if [ ${#flags[@]} -gt 0 ]; then
    # java -jar: the manifest's Enable-Native-Access stands in for the flag.
    timeout 300 "$java" -jar "$JAR" "start,cpu=10ms,file=$out-jar.jfr" >"$out-jar.out" 2>"$out-jar.err" \
      || { cat "$out-jar.out" "$out-jar.err" >&2; fail "java -jar ddprof.jar start failed on JDK $feature"; }
    ! grep -qi "warning.*\(restricted method\|native access\)" "$out-jar.err" \
      || { cat "$out-jar.err" >&2; fail "JDK $feature warned about native access under java -jar"; }
    note "JDK $feature java -jar ddprof.jar start: $(head -1 "$out-jar.out"), no native-access warning"
  fi
done

# 5. The tools: a project that depends on com.datadoghq:ddprof-tools gets it and the library, and
# the two jars in one directory run (the tools jar's manifest: Main-Class, Class-Path ddprof-VERSION.jar).
mkdir -p "$WORK/tools-app"
{ pom_head ddprof-tools-consumer ddprof-tools; cat <<EOF; } >"$WORK/tools-app/pom.xml"
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-dependency-plugin</artifactId>
        <version>$(plugin_version maven-dependency-plugin)</version>
        <configuration>
          <includeScope>runtime</includeScope>
          <outputDirectory>$WORK/tools</outputDirectory>
        </configuration>
      </plugin>
    </plugins>
  </build>
</project>
EOF
note "mvn -o dependency:list dependency:copy-dependencies for com.datadoghq:ddprof-tools (log: $WORK/tools-mvn.log)"
if ! (cd "$WORK/tools-app" && mvn -o -B -Dstyle.color=never dependency:list dependency:copy-dependencies \
    -DoutputFile="$WORK/tools-deps.txt" >"$WORK/tools-mvn.log" 2>&1); then
  tail -30 "$WORK/tools-mvn.log" >&2
  fail "com.datadoghq:ddprof-tools:$VERSION does not resolve offline: is it installed (mvn install)?"
fi
tools_deps="$(grep -E '^ +[^ ]+:[^ ]+:' "$WORK/tools-deps.txt" | sed 's/^ *//; s/ -- .*//' | LC_ALL=C sort | paste -sd' ' -)"
note "ddprof-tools resolves to: $tools_deps"
[ "$tools_deps" = "com.datadoghq:ddprof-tools:jar:$VERSION:compile com.datadoghq:ddprof:jar:$VERSION:compile" ] \
  || fail "com.datadoghq:ddprof-tools should bring itself and com.datadoghq:ddprof only: $tools_deps"
TOOLS_JAR="$WORK/tools/ddprof-tools-$VERSION.jar"
cmp -s "$TOOLS_JAR" "$ROOT/ddprof-tools/target/ddprof-tools-$VERSION.jar" \
  || fail "$TOOLS_JAR is not the one just built: the local repository holds another build (run mvn install again)"
cmp -s "$WORK/tools/ddprof-$VERSION.jar" "$BUILT" || fail "ddprof-tools brought another ddprof-$VERSION.jar than $BUILT"
java="${javas[0]}/bin/java"
recording="$(ls "$WORK"/jdk*.jfr | head -1)"
timeout 300 "$java" -jar "$TOOLS_JAR" convert --to collapsed "$recording" "$WORK/tools/app.collapsed" >"$WORK/tools/convert.out" 2>&1 \
  || { cat "$WORK/tools/convert.out" >&2; fail "java -jar ddprof-tools-$VERSION.jar convert failed"; }
grep -q 'App\.burn' "$WORK/tools/app.collapsed" || fail "the converted stacks lack App.burn: $(head -3 "$WORK/tools/app.collapsed")"
note "java -jar ddprof-tools-$VERSION.jar convert --to collapsed: $(wc -l <"$WORK/tools/app.collapsed") stacks, App.burn among them"
rc=0
"$java" -jar "$JAR" convert --to collapsed "$recording" >"$WORK/lib-convert.out" 2>"$WORK/lib-convert.err" || rc=$?
[ "$rc" = 2 ] && grep -q "ddprof-tools-$VERSION.jar" "$WORK/lib-convert.err" \
  || fail "java -jar ddprof.jar convert: expected exit 2 naming the tools jar, got $rc: $(cat "$WORK/lib-convert.err")"
note "java -jar ddprof.jar convert: exit 2, $(cat "$WORK/lib-convert.err")"
note "OK: com.datadoghq:ddprof:$VERSION and com.datadoghq:ddprof-tools:$VERSION as a consumer sees them"
