package com.datadoghq.profiler.context;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;

import com.datadoghq.profiler.ContextSetter;
import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.ProfilerExtension;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Context in the samples: each method's samples carry the span and attributes its thread had set,
 * through the legacy API too, across a dump, and none after {@code clearTraceContext}. Sample
 * counts are checked against the CPU time each workload got (10 ms interval), never wall time.
 */
@ExtendWith(ProfilerExtension.class)
class ContextSamplingTest {
    private static final long INTERVAL_MS = 10;
    private static final long WORK_MS = 700;

    @TempDir
    Path dir;

    /**
     * At least a quarter of the intervals the CPU time holds (the host is shared), and at least 5
     * samples. Counted in weight: on a busy host a thread's timer expirations pile up while it waits
     * for a CPU and arrive as one sample weighing them all ({@code 1 + si_overrun}).
     */
    private static void assertEnough(List<RecordedEvent> samples, long cpuMillis, String what) {
        long expected = cpuMillis / INTERVAL_MS;
        long weight = samples.stream().mapToLong(e -> e.getLong("weight")).sum();
        assertTrue(samples.size() >= 5 && weight >= expected / 4,
                what + ": " + samples.size() + " samples of weight " + weight + " for " + cpuMillis + " ms of CPU");
    }

    private static List<RecordedEvent> in(List<RecordedEvent> samples, String method) {
        return samples.stream().filter(e -> JfrReader.contains(e, ContextWork.class, method)).collect(Collectors.toList());
    }

    /** An attribute field's value (an AttributeValue constant), null when unset. */
    static String attr(RecordedEvent e, String name) {
        Object v = e.getValue(name);
        if (v instanceof RecordedObject) {
            v = ((RecordedObject) v).getValue("value");
        }
        return v == null || "".equals(v) ? null : v.toString();
    }

    private static Thread worker(String name, Runnable body, AtomicLong failures) {
        Thread t = new Thread(() -> {
            try {
                body.run();
            } catch (Throwable e) {
                failures.incrementAndGet();
                e.printStackTrace();
            }
        }, name);
        t.start();
        return t;
    }

    @Test
    void eachMethodCarriesItsThreadsSpanAndAttributes(JavaProfiler profiler) throws Exception {
        Path jfr = dir.resolve("spans.jfr");
        profiler.execute("start,cpu=" + INTERVAL_MS + "ms,attributes=op;tenant,file=" + jfr);
        AtomicLong alphaCpu = new AtomicLong();
        AtomicLong betaCpu = new AtomicLong();
        AtomicLong failures = new AtomicLong();
        Thread a = worker("ctx-alpha", () -> {
            profiler.setTraceContext(101, 1001, 0, 1001, 0, "op-alpha", -1, null);
            profiler.setContextValue(1, "tenant-1");
            alphaCpu.set(ContextWork.alphaWork(WORK_MS));
            profiler.clearTraceContext();
        }, failures);
        Thread b = worker("ctx-beta", () -> {
            profiler.setTraceContext(202, 2002, 0, 2002, 0, "op-beta", 1, "tenant-2");
            betaCpu.set(ContextWork.betaWork(WORK_MS));
            profiler.clearTraceContext();
        }, failures);
        a.join();
        b.join();
        long keys = profiler.getDebugCounters().get("dictionary_context_keys");
        profiler.stop();
        assertEquals(0, failures.get());
        assertEquals(4, keys, "op-alpha, tenant-1, op-beta, tenant-2");

        List<RecordedEvent> samples = JfrReader.executionSamples(jfr);
        List<RecordedEvent> alpha = in(samples, "alphaWork");
        List<RecordedEvent> beta = in(samples, "betaWork");
        assertEnough(alpha, alphaCpu.get(), "alphaWork");
        assertEnough(beta, betaCpu.get(), "betaWork");
        for (RecordedEvent e : alpha) {
            assertEquals(1001, e.getLong("spanId"), JfrReader.describe(e));
            assertEquals(101, e.getLong("localRootSpanId"));
            assertEquals("op-alpha", attr(e, "op"));
            assertEquals("tenant-1", attr(e, "tenant"));
        }
        for (RecordedEvent e : beta) {
            assertEquals(2002, e.getLong("spanId"), JfrReader.describe(e));
            assertEquals(202, e.getLong("localRootSpanId"));
            assertEquals("op-beta", attr(e, "op"));
            assertEquals("tenant-2", attr(e, "tenant"));
        }
    }

    @Test
    void legacyApiReachesTheSamples(JavaProfiler profiler) throws Exception {
        Path jfr = dir.resolve("legacy.jfr");
        profiler.execute("start,cpu=" + INTERVAL_MS + "ms,attributes=region;customer,file=" + jfr);
        ContextSetter setter = new ContextSetter(profiler, Arrays.asList("region", "customer"));
        AtomicLong cpu = new AtomicLong();
        AtomicLong failures = new AtomicLong();
        Thread t = worker("ctx-legacy", () -> {
            profiler.setContext(3003, 303);
            profiler.setContextValue(setter.offsetOf("customer"), setter.encode("acme"));
            cpu.set(ContextWork.legacyWork(WORK_MS));
            setter.clearContextValue("customer");
            profiler.setContext(0, 0);
        }, failures);
        t.join();
        profiler.stop();
        assertEquals(0, failures.get());

        List<RecordedEvent> legacy = in(JfrReader.executionSamples(jfr), "legacyWork");
        assertEnough(legacy, cpu.get(), "legacyWork");
        for (RecordedEvent e : legacy) {
            assertEquals(3003, e.getLong("spanId"), JfrReader.describe(e));
            assertEquals(303, e.getLong("localRootSpanId"));
            assertEquals("acme", attr(e, "customer"));
            assertNull(attr(e, "region"));
        }
    }

    @Test
    void contextSurvivesADumpAndClearTraceContextRemovesIt(JavaProfiler profiler) throws Exception {
        Path jfr = dir.resolve("final.jfr");
        Path first = dir.resolve("first.jfr");
        profiler.execute("start,cpu=" + INTERVAL_MS + "ms,attributes=op,file=" + jfr);
        CountDownLatch phase1Done = new CountDownLatch(1);
        CountDownLatch dumped = new CountDownLatch(1);
        long[] cpu = new long[3];
        AtomicLong failures = new AtomicLong();
        Thread t = worker("ctx-dump", () -> {
            profiler.setTraceContext(404, 4004, 0, 4004, 0, "op-dump", -1, null);
            cpu[0] = ContextWork.beforeDumpWork(WORK_MS);
            phase1Done.countDown();
            try {
                dumped.await();
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            }
            cpu[1] = ContextWork.afterDumpWork(WORK_MS);
            profiler.clearTraceContext();
            cpu[2] = ContextWork.clearedWork(WORK_MS);
        }, failures);
        phase1Done.await();
        profiler.dump(first);
        dumped.countDown();
        t.join();
        profiler.stop();
        assertEquals(0, failures.get());

        List<RecordedEvent> before = in(JfrReader.executionSamples(first), "beforeDumpWork");
        assertEnough(before, cpu[0], "beforeDumpWork");
        for (RecordedEvent e : before) {
            assertEquals(4004, e.getLong("spanId"));
            assertEquals("op-dump", attr(e, "op"));
        }
        List<RecordedEvent> samples = JfrReader.executionSamples(jfr);
        List<RecordedEvent> after = in(samples, "afterDumpWork");
        List<RecordedEvent> cleared = in(samples, "clearedWork");
        assertEnough(after, cpu[1], "afterDumpWork");
        assertEnough(cleared, cpu[2], "clearedWork");
        for (RecordedEvent e : after) {
            assertEquals(4004, e.getLong("spanId"), "the context outlives the dump");
            assertEquals(404, e.getLong("localRootSpanId"));
            assertEquals("op-dump", attr(e, "op"), "and its dictionary too");
        }
        for (RecordedEvent e : cleared) {
            assertEquals(0, e.getLong("spanId"));
            assertEquals(0, e.getLong("localRootSpanId"));
            assertNull(attr(e, "op"));
        }
    }
}
