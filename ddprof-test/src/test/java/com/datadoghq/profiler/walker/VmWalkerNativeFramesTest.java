package com.datadoghq.profiler.walker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Collectors;

import com.datadoghq.profiler.testing.CLibrary;
import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.WalkerProfile;
import com.datadoghq.profiler.testing.WalkerProfile.Frame;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;

/**
 * Native frames of the VMStructs walker: samples in VM or native code unwind by frame pointers
 * to their Java callers; {@code cstack=vmx} records those native frames (type Native, class "",
 * named by symbol at dump time) and gives threads without Java frames their native stack;
 * {@code cstack=vm} records those above the top Java frame and native-only stacks, none between
 * Java frames.
 */
class VmWalkerNativeFramesTest {
    private static final String WORKER = "native-worker";
    private static final Duration TIMEOUT = Duration.ofSeconds(90);

    @TempDir
    Path dir;

    /**
     * {@code new Throwable()} spends its time in libjvm below the native method
     * {@code Throwable.fillInStackTrace}: the VM's frames stand above the Java frames, named.
     */
    @Test
    void vmxShowsVmFramesAboveTheJavaFrames() throws Exception {
        WalkerProfile p = profile("throw-vmx", "vmx", "throw", 2000);
        List<List<Frame>> withNative = p.stacks.stream().filter(s -> !s.isEmpty() && s.get(0).isNative())
                .collect(Collectors.toList());
        assertTrue(withNative.size() * 2 >= p.stacks.size(),
                "samples whose leaf is a native frame: " + withNative.size() + p.show());

        // Native frames only at the top: this workload never calls back into Java.
        for (List<Frame> s : withNative) {
            int java = firstJava(s);
            for (int i = java; i >= 0 && i < s.size(); i++) {
                assertFalse(s.get(i).isNative(), "native frame below a Java frame: " + s);
            }
        }

        // The VM's frames of fillInStackTrace, then the Java frames that called it, in order.
        int proven = 0;
        for (List<Frame> s : withNative) {
            boolean vmEntry = s.stream().anyMatch(f -> f.isNative() && f.method.equals("JVM_FillInStackTrace"));
            int java = firstJava(s);
            // Only the workload's own throwables, made in deep: the JDK throws and catches some while
            // it links the thread's first lambdas (JDK 11: a NoSuchMethodError under CpuBudget.<clinit>).
            if (!vmEntry || java < 0 || indexOf(s, NativeFramesMain.class.getName(), "deep") < 0) {
                continue;
            }
            Frame caller = s.get(java);
            assertEquals("java.lang.Throwable", caller.owner, "first Java frame below JVM_FillInStackTrace: " + s);
            assertTrue(caller.method.equals("fillInStackTrace"), "first Java frame below the VM: " + s);
            int deep = indexOf(s, NativeFramesMain.class.getName(), "deep");
            int init = indexOf(s, "java.lang.Throwable", "<init>");
            assertTrue(init > java && deep > init, "Throwable.<init> then NativeFramesMain.deep below " + caller + ": " + s);
            proven++;
        }
        assertTrue(proven >= 20, "samples with JVM_FillInStackTrace above Throwable.fillInStackTrace: " + proven + p.show());

        // Names come from symbols (demangled C++), not bare addresses.
        List<Frame> natives = p.frames(Frame::isNative);
        long symbolic = natives.stream().filter(Frame::isSymbol).count();
        assertTrue(symbolic * 10 >= natives.size() * 8,
                "native frames named by a symbol: " + symbolic + " of " + natives.size() + "; names "
                        + p.names(Frame::isNative) + p.show());
        assertTrue(natives.stream().anyMatch(f -> f.method.contains("java_lang_Throwable::fill_in_stack_trace")),
                "a demangled C++ frame of the VM: " + p.names(Frame::isNative) + p.show());
        assertTrue(p.counter("walkvm_native_frames") >= natives.size(),
                "walkvm_native_frames counts every recorded native frame" + p.show());
    }

    /**
     * {@code System.nanoTime()} from compiled code: a leaf call with no frame anchor, so the Java
     * caller is only found by unwinding the native frames. vmx records them above it.
     */
    @Test
    void vmxRecordsLeafCallsWithoutAnchorAboveTheirJavaCaller() throws Exception {
        WalkerProfile p = profile("nanotime-vmx", "vmx", "nanotime", 2000);
        assertNativeFramesAboveNanoLoop(p);
        assertTrue(p.counter("walkvm_native_recovered") > 0, "walks recovered by native unwinding" + p.show());
        // libc's clock_gettime has no frame pointer: its DWARF rule finds os::javaTimeNanos.
        assertTrue(p.counter("walkvm_native_dwarf_steps") > 0, "steps taken by DWARF rules" + p.show());
    }

    /**
     * The same workload under {@code cstack=vm}: the native frames above the top Java frame are
     * recorded as under vmx (the C code the sample is in), never any below it, and the Java frames
     * are found (before native unwinding, nearly every such sample was one unknown frame).
     */
    @Test
    void vmRecordsTheNativeFramesAboveTheTopJavaFrameOnly() throws Exception {
        WalkerProfile p = profile("nanotime-vm", "vm", "nanotime", 2000);
        assertNativeFramesAboveNanoLoop(p);
        assertNoNativeFrameBelowJava(p);
        long inLoop = p.stacks.stream().filter(s -> indexOf(s, NativeFramesMain.class.getName(), "nanoLoop") >= 0)
                .count();
        assertTrue(inLoop * 10 >= p.stacks.size() * 8,
                "samples holding NativeFramesMain.nanoLoop: " + inLoop + p.show());
        long unknown = p.stacks.stream().filter(s -> s.stream().anyMatch(f -> f.method.equals("unknown"))).count();
        assertTrue(unknown * 10 < p.stacks.size(), "samples with an unknown frame: " + unknown + p.show());
        assertTrue(p.counter("walkvm_native_recovered") * 2 >= p.stacks.size(),
                "walks that found nanoLoop through native frames" + p.show());
    }

    /** Half the samples or more have native frames (the clock's C code) above NativeFramesMain.nanoLoop. */
    private static void assertNativeFramesAboveNanoLoop(WalkerProfile p) {
        long above = p.stacks.stream().filter(s -> {
            int java = firstJava(s);
            return java > 0 && s.get(0).isNative() && s.get(java).is(NativeFramesMain.class.getName(), "nanoLoop");
        }).count();
        assertTrue(above * 2 >= p.stacks.size(),
                "samples with native frames above NativeFramesMain.nanoLoop: " + above + p.show());
    }

    /** Under cstack=vm no native frame stands below a Java frame: those between Java frames are vmx's. */
    private static void assertNoNativeFrameBelowJava(WalkerProfile p) {
        for (List<Frame> s : p.stacks) {
            int java = firstJava(s);
            for (int i = java; i >= 0 && i < s.size(); i++) {
                assertFalse(s.get(i).isNative(), "a native frame below a Java frame under cstack=vm: " + s);
            }
        }
    }

    /**
     * A JNI library loaded after the start, built without frame pointers: its C frames stand above
     * the native method in every mode that records native frames, unwound by the DWARF rules the profiler reads as soon as the
     * library is loaded (with frame pointers alone, the walk would skip from the leaf to the Java
     * caller), and named by their symbols.
     */
    @ParameterizedTest
    @ValueSource(strings = {"vm", "vmx", "fp", "dwarf"})
    void aJniLibraryLoadedAfterTheStartShowsItsCFrames(String cstack) throws Exception {
        Path lib = lateSpinLibrary();
        // fp and dwarf: AsyncGetCallTrace for the Java frames, our native unwinding for those above.
        String walker = cstack.startsWith("vm") ? cstack : "asgct";
        WalkerProfile p = WalkerProfile.record(dir, "latejni-" + cstack, "cpu=1ms,cstack=" + cstack, walker,
                new ChildJvm().main(NativeFramesMain.class, "latejni", "2000"), "latejni", TIMEOUT, WORKER,
                JfrReader.EXECUTION_SAMPLE, "-Dlate.lib=" + lib);
        assertTrue(p.stacks.size() >= 50, "samples on " + WORKER + ": " + p.stacks.size() + "\n" + p.child);
        String jni = "Java_com_datadoghq_profiler_walker_NativeFramesMain_lateSpin";
        long whole = p.stacks.stream().filter(s -> {
            int leaf = indexOf(s, "", "ddprof_late_leaf");
            int middle = indexOf(s, "", "ddprof_late_middle");
            int entry = indexOf(s, "", jni);
            int java = indexOf(s, NativeFramesMain.class.getName(), "lateSpin");
            return leaf == 0 && middle > leaf && entry > middle && java > entry && firstJava(s) == java;
        }).count();
        // The library is found within a fraction of a second of its loading (library_refreshes); the
        // samples before that keep the leaf alone.
        assertTrue(whole * 10 >= p.stacks.size() * 7, "samples with ddprof_late_leaf, ddprof_late_middle and "
                + jni + " above NativeFramesMain.lateSpin: " + whole + p.show());
        // Those names were read on the library watcher's thread while the samples came in, not by
        // the dump (the names above are the ones it read).
        assertTrue(p.counter("native_pcs_named_ahead") >= 3,
                "native pcs named ahead of the dump: " + p.counter("native_pcs_named_ahead") + p.show());
        // The recording's one dump (at stop) took those names by pc: it neither searched the
        // symbol tables for them nor read them from files again.
        assertTrue(p.counter("native_pc_names_kept") >= 3,
                "native pc names the dump took from the watcher: " + p.counter("native_pc_names_kept") + p.show());
        if (!cstack.equals("vmx")) {
            assertNoNativeFrameBelowJava(p);
        }
    }

    /**
     * zlib's frames unwind up to the JNI function of {@code Deflater.deflateBytes*}, which vmx shows
     * above it: by their DWARF rules (.eh_frame) where zlib is a system library without frame
     * pointers mapped at start (JDK 17 and 25 here), by frame pointers where the JDK's libzip
     * bundles a zlib built with them and loads after the start (JDK 11 and 21 here).
     */
    @Test
    void vmxUnwindsLibrariesWithoutFramePointersByDwarf() throws Exception {
        WalkerProfile p = profile("deflate-vmx", "vmx", "deflate", 2000);
        long through = p.stacks.stream().filter(s -> {
            int java = firstJava(s);
            return java >= 3 && s.get(java).owner.equals("java.util.zip.Deflater")
                    && s.get(java).method.startsWith("deflateBytes")
                    && s.get(java - 1).method.startsWith("Java_java_util_zip_Deflater_deflateBytes");
        }).count();
        assertTrue(through * 2 >= p.stacks.size(),
                "samples with at least two zlib frames above Java_java_util_zip_Deflater_deflateBytes* and "
                        + "Deflater.deflateBytes*: " + through + p.show());
    }

    /**
     * {@code remotesym}: a native frame in a library with a build id is left to the backend to
     * symbolize, as upstream writes it: class = the library's build id (as its jdk.NativeLibrary
     * event carries it), method {@code <remote>}, descriptor = the pc's ELF address in hex, type 7.
     * The addresses of the leaf frames lie in the library's functions on the worker's path by its own
     * symbol table ({@code nm}), nearly all in {@code ddprof_late_leaf}: a sample may also land in the
     * few instructions its callers run between calls (CI, JDK 11: 70 bytes past the leaf's end).
     */
    @ParameterizedTest
    @ValueSource(strings = {"vm", "dwarf"})
    void remotesymLeavesNativeFramesToTheBackend(String cstack) throws Exception {
        Path lib = lateSpinLibrary();
        String walker = cstack.startsWith("vm") ? cstack : "asgct";
        String name = "remotesym-" + cstack;
        WalkerProfile.record(dir, name, "cpu=1ms,remotesym=true,cstack=" + cstack, walker,
                new ChildJvm().main(NativeFramesMain.class, "latejni", "1500"), "latejni", TIMEOUT, WORKER,
                JfrReader.EXECUTION_SAMPLE, "-Dlate.lib=" + lib);
        Path jfr = dir.resolve(name + ".jfr");
        String buildId = JfrReader.events(jfr, "jdk.NativeLibrary").stream()
                .filter(e -> e.getString("name").endsWith("liblate_spin.so")).map(e -> e.getString("buildId"))
                .findFirst().orElse("");
        assertFalse(buildId.isEmpty(), "no build id for liblate_spin.so in the recording");
        long[] leafRange = CLibrary.symbolRange(lib, "ddprof_late_leaf");
        long[][] pathRanges = {leafRange, CLibrary.symbolRange(lib, "ddprof_late_middle"),
            CLibrary.symbolRange(lib, "Java_com_datadoghq_profiler_walker_NativeFramesMain_lateSpin")};
        List<jdk.jfr.consumer.RecordedEvent> samples = JfrReader.onThread(JfrReader.executionSamples(jfr), WORKER);
        assertTrue(samples.size() >= 50, "samples: " + samples.size());
        long inLeaf = 0;
        for (jdk.jfr.consumer.RecordedEvent e : samples) {
            jdk.jfr.consumer.RecordedFrame leaf = JfrReader.frames(e).get(0);
            jdk.jfr.consumer.RecordedMethod m = leaf.getMethod();
            if (!"<remote>".equals(m.getName())) {
                continue;
            }
            assertEquals("Native (remote symbolication)", leaf.getType(), JfrReader.describe(e));
            if (!buildId.equals(m.getType().getName())) {
                continue; // another library's frame (libc, libjvm), also left to the backend
            }
            long address = Long.decode(m.getDescriptor());
            if (leafRange == null) {
                inLeaf++; // no nm: the addresses cannot be checked
                continue;
            }
            assertTrue(java.util.Arrays.stream(pathRanges).anyMatch(r -> address >= r[0] && address < r[1]),
                    "0x" + Long.toHexString(address) + " is in none of ddprof_late_leaf, ddprof_late_middle, "
                            + "Java_..._lateSpin " + java.util.Arrays.deepToString(pathRanges));
            if (address >= leafRange[0] && address < leafRange[1]) {
                inLeaf++;
            }
        }
        assertTrue(inLeaf * 10 >= samples.size() * 7, "leaf frames left to the backend in liblate_spin.so: " + inLeaf
                + " of " + samples.size() + JfrReader.describe(samples, 3));
        // Java frames are named as ever.
        assertTrue(samples.stream().filter(e -> JfrReader.contains(e, NativeFramesMain.class, "lateSpin")).count() * 10
                >= samples.size() * 9, "samples holding NativeFramesMain.lateSpin" + JfrReader.describe(samples, 3));
    }

    /**
     * {@code late_spin.c} built without frame pointers (and with a build id) for the workload to load
     * after the start; skips the test without a C compiler.
     */
    private Path lateSpinLibrary() throws Exception {
        Path lib = CLibrary.compile(java.nio.file.Files.createDirectories(dir.resolve("lib")), "walker/late_spin",
                "-O2", "-fomit-frame-pointer", "-Wl,--build-id");
        Assumptions.assumeTrue(lib != null, "no C compiler (cc) to build the test library");
        return lib;
    }

    /**
     * A pthread started by a JNI library after the start and never attached to the JVM: no ThreadStart
     * tells the CPU engine about it, yet it is found (the engine adopts new tasks about once a second)
     * and sampled with its native stack, under both engines.
     */
    @ParameterizedTest
    @ValueSource(strings = {"vm,cpu=1ms", "vmx,cpu=10ms"})
    void aThreadNeverAttachedToTheJvmIsSampled(String modes) throws Exception {
        String cstack = modes.substring(0, modes.indexOf(','));
        String cpu = modes.substring(modes.indexOf(',') + 1);
        Path lib = lateSpinLibrary();
        WalkerProfile p = WalkerProfile.record(dir, "nativethread-" + cstack, cpu + ",cstack=" + cstack, cstack,
                new ChildJvm().main(NativeFramesMain.class, "nativethread", "3000"), "nativethread", TIMEOUT,
                "late-native", JfrReader.EXECUTION_SAMPLE, "-Dlate.lib=" + lib);
        // 3 s of CPU at 10 ms: about 300 samples once adopted (within about a second).
        assertTrue(p.stacks.size() >= 50, "samples of the never-attached thread: " + p.stacks.size() + p.show());
        long spinning = p.stacks.stream().filter(s -> !s.isEmpty() && s.stream().allMatch(Frame::isNative)
                && indexOf(s, "", "ddprof_native_thread_spin") >= 0).count();
        assertTrue(spinning * 10 >= p.stacks.size() * 8, "native stacks through ddprof_native_thread_spin: "
                + spinning + " of " + p.stacks.size() + p.show());
    }

    /**
     * A GC storm in the default mode: most samples are of GC threads, which have no Java frame. They
     * carry their native stack (the collector's functions), almost never one bare unknown frame (as
     * every one of them did before).
     */
    @Test
    void gcThreadsCarryTheirNativeStackInTheDefaultMode() throws Exception {
        WalkerProfile p = WalkerProfile.record(dir, "gcstorm-vm", "cpu=10ms", "vm",
                new ChildJvm().main(NativeFramesMain.class, "gcstorm", "3000"), "gcstorm", TIMEOUT, WORKER,
                JfrReader.EXECUTION_SAMPLE, "-Xmx96m", "-XX:+UseParallelGC", "-XX:ParallelGCThreads=2");
        List<List<Frame>> all = p.stacksOf(t -> true);
        List<List<Frame>> gc = p.stacksOf(t -> t != null && t.contains("GC Thread"));
        assertTrue(gc.size() >= 20, "samples of GC threads: " + gc.size() + p.show());
        long bare = all.stream().filter(s -> s.size() == 1 && s.get(0).method.equals("unknown")).count();
        assertTrue(bare * 20 < all.size(), "samples that are one unknown frame: " + bare + " of " + all.size() + p.show());
        // e.g. libc, PSPromotionManager::copy_unmarked_to_survivor_space, steal_work, ScavengeRootsTask::work,
        // the worker loop, Thread::call_run, thread_native_entry: names vary with the JDK, depth does not.
        long collector = gc.stream().filter(s -> s.size() >= 3 && s.stream().allMatch(Frame::isNative)
                && s.stream().filter(Frame::isSymbol).count() >= 2).count();
        assertTrue(collector * 10 >= gc.size() * 8, "GC-thread samples that are the collector's native stack: "
                + collector + " of " + gc.size() + "; e.g. " + gc.subList(0, Math.min(3, gc.size())) + p.show());
    }

    /** Compiler threads have no Java frame at all: vm and vmx record their native stack. */
    @ParameterizedTest
    @ValueSource(strings = {"vm", "vmx"})
    void compilerThreadsGetTheirNativeStack(String cstack) throws Exception {
        WalkerProfile p = profile("xcomp-" + cstack, cstack, "throw", 500, "-Xcomp");
        List<List<Frame>> compiler = p.stacksOf(t -> t != null && t.contains("CompilerThre"));
        assertTrue(compiler.size() >= 10, "samples of compiler threads under -Xcomp: " + compiler.size() + p.show());
        long nativeStacks = compiler.stream()
                .filter(s -> !s.isEmpty() && s.stream().allMatch(Frame::isNative)
                        && s.stream().anyMatch(f -> f.method.startsWith("CompileBroker::")))
                .count();
        assertTrue(nativeStacks * 10 >= compiler.size() * 8,
                "compiler-thread samples that are native stacks through CompileBroker: " + nativeStacks + " of "
                        + compiler.size() + "; e.g. " + compiler.subList(0, Math.min(3, compiler.size())) + p.show());
        assertTrue(p.counter("walkvm_native_only_stacks") >= nativeStacks, "walkvm_native_only_stacks" + p.show());
    }

    /**
     * {@code Math.sin}/{@code Math.cos} from compiled code run in HotSpot's intrinsic stubs
     * ({@code libmSin}/{@code libmCos} on JDK 11-21, {@code dsin}/{@code dcos} on 25): code in the
     * code cache that no nmethod and no library symbol describes. Both VM walker modes name the stub
     * as the leaf, directly above the Java method that called it, with no bare address between
     * (the stub opens a frame of its own, so its return address is found through rbp, not at sp).
     */
    @ParameterizedTest
    @ValueSource(strings = {"vm", "vmx"})
    void intrinsicStubsAreNamedAboveTheirJavaCaller(String cstack) throws Exception {
        WalkerProfile p = profile("trig-" + cstack, cstack, "trig", 2000);
        long inStub = 0;
        long stopped = 0;
        for (List<Frame> s : p.stacks) {
            if (s.size() < 2 || !isTrigStub(s.get(0))) {
                continue;
            }
            inStub++;
            // A walk may stop at the stub (`unknown`, a pc none of the stub rules could unwind):
            // rare, and never a wrong caller.
            if (s.get(1).owner.isEmpty() && "unknown".equals(s.get(1).method)) {
                stopped++;
                continue;
            }
            assertTrue(s.get(1).is(NativeFramesMain.class.getName(), "trigLoop"),
                    "the frame below a trig stub is its Java caller: " + s + p.show());
        }
        assertTrue(inStub * 10 >= p.stacks.size() * 3,
                "samples whose leaf is a named sin/cos stub: " + inStub + " of " + p.stacks.size() + p.show());
        assertTrue(stopped * 50 <= inStub, "walks that stopped at the stub: " + stopped + " of " + inStub + p.show());
        long bare = p.stacks.stream().filter(s -> s.stream().anyMatch(f -> f.method.startsWith("0x"))).count();
        assertTrue(bare * 20 <= p.stacks.size(), "samples with a bare address frame: " + bare + p.show());
    }

    private static boolean isTrigStub(Frame f) {
        String m = f.method.toLowerCase(java.util.Locale.ROOT);
        return f.owner.isEmpty() && "Native".equals(f.type) && (m.endsWith("sin") || m.endsWith("cos"));
    }

    private static int firstJava(List<Frame> s) {
        for (int i = 0; i < s.size(); i++) {
            if (!s.get(i).isNative()) {
                return i;
            }
        }
        return -1;
    }

    private static int indexOf(List<Frame> s, String owner, String method) {
        for (int i = 0; i < s.size(); i++) {
            if (s.get(i).is(owner, method)) {
                return i;
            }
        }
        return -1;
    }

    /** Runs NativeFramesMain {@code mode} under the agent with the given cstack. */
    private WalkerProfile profile(String name, String cstack, String mode, long millis, String... jvmOptions)
            throws Exception {
        WalkerProfile p = WalkerProfile.record(dir, name, cstack, NativeFramesMain.class, mode, millis, TIMEOUT,
                WORKER, jvmOptions);
        boolean workerRuns = !"-Xcomp".equals(jvmOptions.length > 0 ? jvmOptions[0] : "");
        if (workerRuns) {
            assertTrue(p.stacks.size() >= 50, "samples on " + WORKER + ": " + p.stacks.size() + "\n" + p.child);
        }
        return p;
    }
}
