package com.datadoghq.profiler.alloc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.ProfilerExtension;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedClass;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code memory=BYTES:a}: JVMTI-sampled allocations as {@code datadog.ObjectSample}. What the
 * user relies on: the weighted bytes (weight x size) of a method's samples come close to what the
 * method really allocated (the JVM's per-thread counter), the stacks name the allocating method
 * under its caller, the class is the allocated one, and the thread's trace context is attached.
 * The work is in bytes, so the expectations hold however slow the host is.
 */
@ExtendWith(ProfilerExtension.class)
class AllocationProfilingTest {
    static final String OBJECT_SAMPLE = "datadog.ObjectSample";
    private static final long BYTES = 192L << 20;

    @TempDir
    Path dir;

    private final JavaProfiler profiler;

    AllocationProfilingTest(JavaProfiler profiler) {
        this.profiler = profiler;
    }

    /** Sum of weight x size, the bytes the samples stand for. */
    static double weighted(List<RecordedEvent> events) {
        return events.stream().mapToDouble(e -> e.getFloat("weight") * (double) e.getLong("size")).sum();
    }

    static String className(RecordedEvent e) {
        RecordedClass c = e.getValue("objectClass");
        return c == null ? null : c.getName();
    }

    private static Thread thread(String name, Runnable r) {
        Thread t = new Thread(r, name);
        t.start();
        return t;
    }

    @ParameterizedTest
    @ValueSource(strings = {"true", "lazy"})
    void weightedBytesOfEachAllocatorMatchWhatItAllocated(String fjmethodid) throws Exception {
        Path file = dir.resolve("alloc-" + fjmethodid + ".jfr");
        String reply = TestEnv.start(profiler, "start,memory=262144:a,fjmethodid=" + fjmethodid + ",file=" + file);
        assertTrue(reply.contains("Profiling started"), reply);
        AtomicLong ints = new AtomicLong();
        AtomicLong integers = new AtomicLong();
        Thread a = thread("alloc-ints", () -> ints.set(Allocators.measure(() -> Allocators.intsCaller(BYTES))));
        Thread b = thread("alloc-integers",
                () -> integers.set(Allocators.measure(() -> Allocators.integersCaller(BYTES))));
        a.join();
        b.join();
        profiler.stop();

        List<RecordedEvent> all = JfrReader.events(file, OBJECT_SAMPLE);
        assertFalse(all.isEmpty(), "no " + OBJECT_SAMPLE + " events");
        assertTrue(JfrReader.executionSamples(file).isEmpty(), "memory alone samples no CPU");
        check(all, "alloc-ints", "allocInts", "intsCaller", ints.get(), Set.of("[I", "int[]"));
        check(all, "alloc-integers", "allocIntegers", "integersCaller", integers.get(),
                Set.of("[Ljava.lang.Integer;", "java.lang.Integer[]"));
    }

    private static void check(List<RecordedEvent> all, String thread, String method, String caller, long trueBytes,
                              Set<String> classNames) {
        List<RecordedEvent> mine = JfrReader.onThread(all, thread);
        List<RecordedEvent> named = mine.stream().filter(e -> JfrReader.contains(e, Allocators.class, method))
                .collect(Collectors.toList());
        assertTrue(named.size() >= 20, thread + ": " + named.size() + " samples name " + method + " of " + mine.size()
                + JfrReader.describe(mine, 5));
        assertTrue(named.size() * 10 >= mine.size() * 9, thread + ": only " + named.size() + " of " + mine.size()
                + " samples name " + method + JfrReader.describe(mine, 5));
        long ordered = named.stream().filter(e -> {
            int m = JfrReader.indexOf(e, Allocators.class, method);
            int c = JfrReader.indexOf(e, Allocators.class, caller);
            return m >= 0 && m < c;
        }).count();
        assertEquals(named.size(), ordered, thread + ": " + method + " must sit above " + caller + " (leaf first)"
                + JfrReader.describe(named, 5));
        Set<String> classes = named.stream().map(AllocationProfilingTest::className)
                .collect(Collectors.toCollection(TreeSet::new));
        assertTrue(classNames.containsAll(classes) && !classes.isEmpty(), thread + ": classes " + classes);
        assertStandsFor(named, trueBytes, thread);
    }

    /**
     * The bytes {@code named} stand for are within four standard errors of {@code trueBytes}, and
     * never off by 2x. The standard error comes from the recorded weights themselves: each sample
     * stands for weight x size bytes, and the variance of such a sum is about the sum of their
     * squares. When the rate controller raises the interval mid-run, later samples weigh more and
     * the estimate scatters more (48 estimates under load: 0.70-1.27 of the truth, mean 1.01; one
     * virtual thread's 96 MiB on a 2-core CI host: 1.61), so a fixed share would be either too
     * tight there or too loose here.
     */
    static void assertStandsFor(List<RecordedEvent> named, long trueBytes, String who) {
        double sampled = weighted(named);
        double se = Math.sqrt(named.stream()
                .mapToDouble(e -> Math.pow(e.getFloat("weight") * (double) e.getLong("size"), 2)).sum());
        assertTrue(Math.abs(sampled - trueBytes) <= 4 * se && sampled >= trueBytes * 0.5 && sampled <= trueBytes * 2,
                who + ": samples stand for " + (long) sampled + " bytes, it allocated " + trueBytes + " ("
                        + named.size() + " samples, standard error " + (long) se + ")");
    }

    @Test
    void theRateControllerRaisesTheIntervalAndTheWeightsFollow() throws Exception {
        Path file = dir.resolve("rate.jfr");
        TestEnv.start(profiler, "start,memory=262144:a,file=" + file);
        long started = System.nanoTime();
        AtomicLong bytes = new AtomicLong();
        // 1.5 GiB: 6,000 samples at the configured 256 KiB, tens of seconds' worth at 100/s.
        Thread t = thread("alloc-heavy", () -> bytes.set(Allocators.measure(() -> Allocators.intsCaller(3L << 29))));
        t.join();
        double seconds = (System.nanoTime() - started) / 1e9;
        long interval = profiler.getDebugCounters().get("alloc_interval_bytes");
        profiler.stop();
        List<RecordedEvent> named = JfrReader.onThread(JfrReader.events(file, OBJECT_SAMPLE), "alloc-heavy").stream()
                .filter(e -> JfrReader.contains(e, Allocators.class, "allocInts")).collect(Collectors.toList());
        // About 100 per second once the first one-second window closed, a window late at each step.
        double bound = 300 * seconds + 600;
        assertTrue(named.size() <= bound, named.size() + " samples in " + seconds + " s (interval now " + interval
                + "): the controller should hold about 100/s");
        assertTrue(named.size() >= 20, "samples: " + named.size());
        // Holding the rate trades accuracy for cost: the last intervals are large, and a few
        // samples carry most of the bytes. Still the same order.
        double sampled = weighted(named);
        assertTrue(sampled >= bytes.get() / 3.0 && sampled <= bytes.get() * 3.0, "samples stand for " + (long) sampled
                + " bytes, the thread allocated " + bytes.get() + " (" + named.size() + " samples, interval now "
                + interval + ")");
        List<RecordedEvent> settings = JfrReader.events(file, JfrReader.ACTIVE_SETTING).stream()
                .filter(e -> e.getLong("id") == 103 && "interval".equals(e.getString("name")))
                .collect(Collectors.toList());
        assertFalse(settings.isEmpty(), "no ObjectSample interval setting");
    }

    @Test
    void allocationSamplesBesideCpuCarryTheThreadsSpanIds() throws Exception {
        Path file = dir.resolve("context.jfr");
        // async-profiler's spelling, as upstream's tests write it beside CPU.
        TestEnv.start(profiler, "start,cpu=10ms,alloc=256k,file=" + file);
        Thread t = thread("alloc-traced", () -> {
            profiler.setContext(0x1234, 0x5678);
            Allocators.intsCaller(64L << 20);
            profiler.clearContext();
        });
        t.join();
        profiler.stop();
        List<RecordedEvent> mine = JfrReader.onThread(JfrReader.events(file, OBJECT_SAMPLE), "alloc-traced").stream()
                .filter(e -> JfrReader.contains(e, Allocators.class, "allocInts")).collect(Collectors.toList());
        assertTrue(mine.size() >= 10, "samples of alloc-traced: " + mine.size());
        long traced = mine.stream().filter(e -> e.getLong("spanId") == 0x1234 && e.getLong("localRootSpanId") == 0x5678)
                .count();
        assertEquals(mine.size(), traced, "every allocation sample inside the span carries its ids");
        // CPU sampling ran beside it in the same recording.
        List<RecordedEvent> config = JfrReader.events(file, JfrReader.PROFILER_CONFIG);
        assertEquals(3, config.get(config.size() - 1).getInt("modeMask") & 3, "modeMask has CPU and ALLOC");
    }

    @Test
    void memoryAloneStartsASessionWithoutACpuEngine() throws Exception {
        Path file = dir.resolve("alone.jfr");
        String reply = TestEnv.start(profiler, "start,memory,file=" + file);
        assertTrue(reply.contains("Profiling started") && !reply.contains("not yet sampled"), reply);
        String status = profiler.getStatus();
        assertTrue(status.contains(TestEnv.RUNNING_LINE) && status.contains("SampledObjectAlloc"), status);
        Allocators.intsCaller(32L << 20);
        profiler.stop();
        List<RecordedEvent> config = JfrReader.events(file, JfrReader.PROFILER_CONFIG);
        RecordedEvent last = config.get(config.size() - 1);
        assertEquals("None", last.getString("cpuEngine"));
        assertEquals(2, last.getInt("modeMask"));
        assertEquals(524287L, last.getLong("allocInterval"));
        assertFalse(JfrReader.events(file, OBJECT_SAMPLE).isEmpty(), "no allocation samples");
    }

    @Test
    void virtualThreadAllocationsAreSampledWithTheirStacks() throws Exception {
        assumeTrue(TestEnv.jdk() >= 21, "virtual threads are JDK 21+");
        Path file = dir.resolve("virtual.jfr");
        TestEnv.start(profiler, "start,memory=262144:a,file=" + file);
        // The JVM's per-thread counter does not cover virtual threads: the bytes asked for.
        AtomicLong bytes = new AtomicLong(BYTES / 2);
        Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
        Runnable work = () -> Allocators.intsCaller(BYTES / 2);
        Thread vt = (Thread) Class.forName("java.lang.Thread$Builder").getMethod("start", Runnable.class)
                .invoke(builder, work);
        vt.join();
        profiler.stop();
        List<RecordedEvent> named = JfrReader.events(file, OBJECT_SAMPLE).stream()
                .filter(e -> JfrReader.contains(e, Allocators.class, "allocInts")).collect(Collectors.toList());
        assertTrue(named.size() >= 10, "samples naming allocInts from the virtual thread: " + named.size());
        assertStandsFor(named, bytes.get(), "the virtual thread");
    }
}
