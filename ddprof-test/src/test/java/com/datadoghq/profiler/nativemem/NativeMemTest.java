package com.datadoghq.profiler.nativemem;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.ProfilerExtension;
import com.datadoghq.profiler.testing.TestEnv;
import com.datadoghq.profiler.testing.ChildJvm;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code nativemem[=BYTES]}: malloc and friends sampled through hooked import slots, recorded as
 * {@code datadog.NativeMemoryAllocation}. What a user relies on: native allocations made by JDK
 * libraries (libzip/zlib) show up with stacks that reach the Java code that caused them; the
 * sampled bytes of a library that mallocs known sizes stand for what it really allocated; frees
 * are matched to sampled blocks; the option's value is checked; and stopping puts the hooks back.
 * The workloads are counted in allocations and bytes, never in time.
 */
@ExtendWith(ProfilerExtension.class)
class NativeMemTest {
    static final String EVENT = "datadog.NativeMemoryAllocation";
    private static boolean knownLoaded;

    @TempDir
    Path dir;

    private final JavaProfiler profiler;

    NativeMemTest(JavaProfiler profiler) {
        this.profiler = profiler;
    }

    private static List<RecordedEvent> reaching(List<RecordedEvent> events, Class<?> owner, String method) {
        return events.stream().filter(e -> JfrReader.contains(e, owner, method)).collect(Collectors.toList());
    }

    /** A C frame: type Native, no class, named by its symbol. */
    static boolean isCFrame(RecordedFrame f, String symbol) {
        return "Native".equals(f.getType()) && f.getMethod() != null && f.getMethod().getType() != null
                && f.getMethod().getType().getName().isEmpty() && symbol.equals(f.getMethod().getName());
    }

    private static Thread run(String name, Runnable r) throws InterruptedException {
        Thread t = new Thread(r, name);
        t.start();
        t.join();
        return t;
    }

    /** Every stack mode: allocation stacks come from the frame anchor whatever the CPU walker is. */
    @ParameterizedTest
    @ValueSource(strings = {"", ",cstack=vmx", ",cstack=fp"})
    void zipAllocationsReachTheirJavaCaller(String cstack) throws Exception {
        Path file = dir.resolve("zip" + cstack.replaceAll("[^a-z]", "") + ".jfr");
        String reply = TestEnv.start(profiler, "start,nativemem=64k" + cstack + ",file=" + file);
        assertTrue(reply.contains("Profiling started") && !reply.contains("not yet sampled"), reply);
        run("nmem-zip", () -> ZipWork.zipCaller(300));
        Map<String, Long> counters = profiler.getDebugCounters();
        profiler.stop();

        List<RecordedEvent> mine = JfrReader.onThread(JfrReader.events(file, EVENT), "nmem-zip");
        List<RecordedEvent> named = reaching(mine, ZipWork.class, "zipCaller");
        // 300 Deflaters of about 256 KiB each at a 64 KiB mean interval: over a thousand samples expected.
        assertTrue(named.size() >= 50, named.size() + " of " + mine.size() + " samples reach ZipWork.zipCaller"
                + JfrReader.describe(mine, 5) + "\ncounters: " + counters);
        assertTrue(named.size() * 10 >= mine.size() * 9, "only " + named.size() + " of " + mine.size()
                + " samples of the zip thread reach their caller" + JfrReader.describe(mine, 5));
        for (RecordedEvent e : named) {
            assertTrue(e.getLong("size") > 0 && e.getLong("address") != 0 && e.getFloat("weight") >= 1f,
                    JfrReader.describe(e) + " size " + e.getLong("size") + " weight " + e.getFloat("weight"));
        }
        // The Deflater/Inflater frames sit above the caller (leaf first).
        long ordered = named.stream().filter(e -> {
            int caller = JfrReader.indexOf(e, ZipWork.class, "zipCaller");
            int zip = Math.max(JfrReader.indexOf(e, java.util.zip.Deflater.class, "init"),
                    JfrReader.indexOf(e, java.util.zip.Inflater.class, "init"));
            return zip >= 0 && zip < caller;
        }).count();
        assertTrue(ordered * 10 >= named.size() * 9, ordered + " of " + named.size()
                + " stacks show Deflater.init/Inflater.init under ZipWork.zipCaller" + JfrReader.describe(named, 5));
        assertTrue(counters.get("nativemem_hooked_libraries") > 0, "counters: " + counters);
        assertTrue(counters.get("nativemem_samples") >= named.size(), "counters: " + counters);
        // end() frees every block: the sampled ones are matched.
        assertTrue(counters.get("nativemem_freed_samples") >= named.size() * 9 / 10, "counters: " + counters);

        List<RecordedEvent> config = JfrReader.events(file, JfrReader.PROFILER_CONFIG);
        assertEquals(16, config.get(config.size() - 1).getInt("modeMask") & 16, "modeMask has NATIVEMEM");
        Map<String, String> settings = JfrReader.events(file, JfrReader.ACTIVE_SETTING).stream()
                .filter(e -> e.getLong("id") == 127)
                .collect(Collectors.toMap(e -> e.getString("name"), e -> e.getString("value"), (a, b) -> b));
        assertEquals("true", settings.get("enabled"), settings.toString());
        assertEquals("65536", settings.get("nativemem"), settings.toString());
        assertEquals("65536", settings.get("samplingInterval"), settings.toString());

        // The converter reads them as the malloc kind: the Java caller appears in the collapsed stacks.
        Path collapsed = dir.resolve("zip" + cstack.replaceAll("[^a-z]", "") + ".collapsed");
        ChildJvm.Result r = new ChildJvm()
                .jvmArgs("-jar", TestEnv.toolsJar().toString(), "convert", "--to", "collapsed", "--event", "malloc",
                        file.toString(), collapsed.toString())
                .timeout(Duration.ofMinutes(3)).run(dir);
        assertEquals(0, r.exitCode, r.describe());
        String text = new String(Files.readAllBytes(collapsed), StandardCharsets.UTF_8);
        assertTrue(text.contains(ZipWork.class.getName() + ".zipCaller"), text.substring(0, Math.min(2000, text.length())));
    }

    @Test
    void bareNativememSamplesEveryAllocationWithWeightOne() throws Exception {
        Path file = dir.resolve("every.jfr");
        TestEnv.start(profiler, "start,nativemem,file=" + file);
        run("nmem-every", () -> ZipWork.zipCaller(20));
        profiler.stop();
        List<RecordedEvent> named = reaching(JfrReader.onThread(JfrReader.events(file, EVENT), "nmem-every"),
                ZipWork.class, "zipCaller");
        // Each Deflater and Inflater makes several blocks: all of them are there.
        assertTrue(named.size() >= 20 * 4, named.size() + " samples");
        assertTrue(named.stream().allMatch(e -> e.getFloat("weight") == 1f), "weights: "
                + named.stream().map(e -> e.getFloat("weight")).distinct().collect(Collectors.toList()));
        Map<String, String> settings = JfrReader.events(file, JfrReader.ACTIVE_SETTING).stream()
                .filter(e -> e.getLong("id") == 127)
                .collect(Collectors.toMap(e -> e.getString("name"), e -> e.getString("value"), (a, b) -> b));
        assertEquals("0", settings.get("samplingInterval"), settings.toString());
    }

    @Test
    void besideCpuAndJavaAllocationSampling() throws Exception {
        Path file = dir.resolve("combined.jfr");
        TestEnv.start(profiler, "start,cpu=10ms,memory=256k:a,nativemem=64k,file=" + file);
        run("nmem-combined", () -> {
            ZipWork.zipCaller(100);
            long sum = 0;
            for (int i = 0; i < 20_000; i++) {
                sum += new int[256].length;
            }
            if (sum == 42) {
                throw new AssertionError();
            }
        });
        profiler.stop();
        List<RecordedEvent> natives = reaching(JfrReader.onThread(JfrReader.events(file, EVENT), "nmem-combined"),
                ZipWork.class, "zipCaller");
        assertTrue(natives.size() >= 10, natives.size() + " native samples");
        assertFalse(JfrReader.onThread(JfrReader.events(file, "datadog.ObjectSample"), "nmem-combined").isEmpty(),
                "no Java allocation samples beside the native ones");
        List<RecordedEvent> config = JfrReader.events(file, JfrReader.PROFILER_CONFIG);
        assertEquals(1 | 2 | 16, config.get(config.size() - 1).getInt("modeMask") & (1 | 2 | 16));
    }

    @Test
    void knownSizesAreEstimatedAndTheirFreesMatched() throws Exception {
        assumeTrue(loadKnown(), "no C compiler (cc) to build the test library");
        Path file = dir.resolve("known.jfr");
        TestEnv.start(profiler, "start,nativemem=256k,file=" + file);
        int count = 200_000;
        int size = 1000;
        run("nmem-known", () -> KnownMalloc.knownCaller(count, size));
        Map<String, Long> counters = profiler.getDebugCounters();
        profiler.stop();

        List<RecordedEvent> named = reaching(JfrReader.onThread(JfrReader.events(file, EVENT), "nmem-known"),
                KnownMalloc.class, "knownCaller");
        long trueBytes = (long) count * size;
        // 200 MB at 256 KiB: about 760 samples expected.
        assertTrue(named.size() >= 200, named.size() + " samples; counters: " + counters);
        for (RecordedEvent e : named) {
            assertEquals(size, e.getLong("size"), JfrReader.describe(e));
        }
        // The stacks start at the hook's caller, the JNI function that called malloc, with the
        // Java method it implements right below it: none of the profiler's own frames on top.
        long fromC = named.stream().filter(e -> {
            List<RecordedFrame> frames = JfrReader.frames(e);
            return frames.size() > 1 && isCFrame(frames.get(0), "Java_com_datadoghq_profiler_nativemem_KnownMalloc_allocate")
                    && JfrReader.isMethod(frames.get(1), KnownMalloc.class, "allocate");
        }).count();
        assertTrue(fromC * 10 >= named.size() * 9, fromC + " of " + named.size()
                + " stacks start at the JNI function that called malloc" + JfrReader.describe(named, 5));
        double sampled = named.stream().mapToDouble(e -> e.getFloat("weight") * (double) e.getLong("size")).sum();
        assertTrue(sampled >= trueBytes * 0.5 && sampled <= trueBytes * 1.5,
                "samples stand for " + (long) sampled + " bytes; the library allocated " + trueBytes + " ("
                        + named.size() + " samples)");
        // Every block was freed right away: the frees of the sampled ones were matched, so none of them is
        // still counted live beyond what the rest of the JVM keeps.
        assertTrue(counters.get("nativemem_freed_samples") >= named.size(), "counters: " + counters);
    }

    @Test
    void theRateControllerHoldsAMallocHeavyThreadNearItsTarget() throws Exception {
        assumeTrue(loadKnown(), "no C compiler (cc) to build the test library");
        Path file = dir.resolve("rate.jfr");
        TestEnv.start(profiler, "start,nativemem=16k,file=" + file);
        int size = 1000;
        AtomicLong blocks = new AtomicLong();
        // Three seconds of this thread's CPU (more wall time on a busy host): a thousand blocks of
        // 1 KB a millisecond or so, thousands of samples a second at 16 KiB.
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        run("nmem-rate", () -> {
            long until = mx.getCurrentThreadCpuTime() + 3_000_000_000L;
            while (mx.getCurrentThreadCpuTime() < until) {
                KnownMalloc.knownCaller(10_000, size);
                blocks.addAndGet(10_000);
            }
        });
        Map<String, Long> counters = profiler.getDebugCounters();
        profiler.stop();

        List<RecordedEvent> named = reaching(JfrReader.onThread(JfrReader.events(file, EVENT), "nmem-rate"),
                KnownMalloc.class, "knownCaller");
        assertTrue(counters.get("nativemem_interval_bytes") > 16384, "the interval was raised: " + counters);
        // The first window (a second) is recorded whole; from then on about 100 a second.
        List<Instant> times = named.stream().map(RecordedEvent::getStartTime).sorted().collect(Collectors.toList());
        assertFalse(times.isEmpty(), "no samples; counters: " + counters);
        Instant settled = times.get(0).plusMillis(1500);
        double span = Duration.between(settled, times.get(times.size() - 1)).toNanos() / 1e9;
        long late = times.stream().filter(t -> t.isAfter(settled)).count();
        assertTrue(span >= 1, "the samples span " + span + " s past the first window");
        assertTrue(late <= 300 * span + 50 && late >= 20 * span, late + " samples in the " + span
                + " s after the first window: the controller should hold about 100 a second; counters: " + counters);
        // The weights follow the interval: the samples still stand for the bytes allocated.
        long trueBytes = blocks.get() * size;
        double sampled = named.stream().mapToDouble(e -> e.getFloat("weight") * (double) e.getLong("size")).sum();
        assertTrue(sampled >= trueBytes * 0.5 && sampled <= trueBytes * 2, "samples stand for " + (long) sampled
                + " bytes; the library allocated " + trueBytes + " (" + named.size() + " samples)");
    }

    @Test
    void leaksAreTheBlocksNotFreedAndFreedBlocksAreNot() throws Exception {
        assumeTrue(loadKnown(), "no C compiler (cc) to build the test library");
        Path file = dir.resolve("leak.jfr");
        TestEnv.start(profiler, "start,nativemem=128k,file=" + file);
        int kept = 50_000;
        int size = 1000;
        try {
            run("nmem-leak", () -> {
                KnownMalloc.knownCaller(100_000, size);
                KnownMalloc.keepCaller(kept, size);
            });
            profiler.stop();
        } finally {
            KnownMalloc.release();
        }
        Path collapsed = dir.resolve("leak.collapsed");
        ChildJvm.Result r = new ChildJvm()
                .jvmArgs("-jar", TestEnv.toolsJar().toString(), "convert", "--to", "collapsed", "--leak",
                        file.toString(), collapsed.toString())
                .timeout(Duration.ofMinutes(3)).run(dir);
        assertEquals(0, r.exitCode, r.describe());
        long keptBytes = 0;
        for (String line : Files.readAllLines(collapsed, StandardCharsets.UTF_8)) {
            assertFalse(line.contains(KnownMalloc.class.getName() + ".knownCaller"),
                    "a block freed right away is reported as a leak: " + line);
            if (line.contains(KnownMalloc.class.getName() + ".keepCaller")) {
                keptBytes += Long.parseLong(line.substring(line.lastIndexOf(' ') + 1));
            }
        }
        // The kept blocks and the array of their pointers.
        long trueBytes = (long) kept * size + (long) kept * 8;
        assertTrue(keptBytes >= trueBytes * 0.5 && keptBytes <= trueBytes * 1.5,
                "leaks of keepCaller stand for " + keptBytes + " bytes; it kept " + trueBytes);
    }

    @Test
    void aLibraryLoadedAfterStartIsHookedAtTheNextDump() throws Exception {
        Path lib = LateMalloc.build(Files.createTempDirectory(TestEnv.scratchDir(), "late"));
        assumeTrue(lib != null, "no C compiler (cc) to build the test library");
        Path file = dir.resolve("late.jfr");
        TestEnv.start(profiler, "start,nativemem=64k,file=" + file);
        long before = profiler.getDebugCounters().get("nativemem_hooked_libraries");
        System.load(lib.toString());
        profiler.dump(dir.resolve("first.jfr"));
        long after = profiler.getDebugCounters().get("nativemem_hooked_libraries");
        run("nmem-late", () -> LateMalloc.lateCaller(20_000, 1000));
        profiler.stop();
        assertTrue(after > before, "hooked libraries: " + before + " before the dump, " + after + " after");
        List<RecordedEvent> named = reaching(JfrReader.onThread(JfrReader.events(file, EVENT), "nmem-late"),
                LateMalloc.class, "lateCaller");
        // 20 MB at 64 KiB: about 300 samples expected.
        assertTrue(named.size() >= 50, named.size() + " samples reach LateMalloc.lateCaller");
    }

    @Test
    void aMalformedIntervalIsRejectedAndChangesNothing() throws Exception {
        Path file = dir.resolve("bad.jfr");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> profiler.execute("start,nativemem=abc,file=" + file));
        assertTrue(e.getMessage().contains("nativemem"), e.getMessage());
        assertFalse(TestEnv.isRunning(profiler), profiler.getStatus());
        assertEquals(0L, profiler.getDebugCounters().getOrDefault("nativemem_hooked_slots", 0L));
    }

    @Test
    void stopPutsTheHooksBackAndARestartSamplesAgain() throws Exception {
        for (int round = 0; round < 2; round++) {
            Path file = dir.resolve("restart-" + round + ".jfr");
            TestEnv.start(profiler, "start,nativemem=64k,file=" + file);
            assertTrue(profiler.getDebugCounters().get("nativemem_hooked_slots") > 0);
            String thread = "nmem-restart-" + round;
            run(thread, () -> ZipWork.zipCaller(100));
            profiler.stop();
            assertEquals(0L, profiler.getDebugCounters().get("nativemem_hooked_slots"),
                    "the slots are put back at stop");
            // Hooks gone: native allocations go on untouched.
            ZipWork.zipCaller(20);
            List<RecordedEvent> named = reaching(JfrReader.onThread(JfrReader.events(file, EVENT), thread),
                    ZipWork.class, "zipCaller");
            assertTrue(named.size() >= 10, "round " + round + ": " + named.size() + " samples");
        }
    }

    private static synchronized boolean loadKnown() throws Exception {
        if (!knownLoaded) {
            Path lib = KnownMalloc.build(TestEnv.scratchDir());
            if (lib == null) {
                return false;
            }
            System.load(lib.toString());
            // Link the native method now, not under a test's profiler: the JVM looks it up with
            // dlsym, and on JDK 25 a failed lookup's dlerror() mallocs its message (134 bytes)
            // under knownCaller, a block of another size in the sampled stacks.
            KnownMalloc.knownCaller(1, 16);
            knownLoaded = true;
        }
        return true;
    }
}
