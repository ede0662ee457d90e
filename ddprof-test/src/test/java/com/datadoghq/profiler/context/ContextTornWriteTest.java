package com.datadoghq.profiler.context;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import com.datadoghq.profiler.ContextSetter;
import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.CpuBudget;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.ProfilerExtension;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Samples taken in the middle of context writes never carry a torn context: threads do nothing but
 * write (a new span every call, a new root every fourth, the operation attribute following the
 * root, a clear now and then) while {@code cpu=1ms} interrupts them, and every sample's span, root
 * and attribute must be a combination that one call wrote whole. Most of these writes take the
 * writer's shortcuts (only the span changes: one store, no {@code valid} round trip); the others
 * take the full protocol. Both APIs, since the released tracers use the older one.
 */
@ExtendWith(ProfilerExtension.class)
class ContextTornWriteTest {
    private static final long WORK_MS = 800;
    private static final String[] OPS = {"op-0", "op-1", "op-2", "op-3"};
    private static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();

    @TempDir
    Path dir;

    /** The root of span {@code span}: one root for four consecutive spans. */
    private static long rootOf(long span) {
        return span >>> 2;
    }

    /** The operation that goes with root {@code root}. */
    private static String opOf(long root) {
        return OPS[(int) (root & 3)];
    }

    @Test
    void samplesNeverSeeAHalfWrittenContext(JavaProfiler profiler) throws Exception {
        Path jfr = dir.resolve("torn.jfr");
        profiler.execute("start,cpu=1ms,attributes=op,file=" + jfr);
        ContextSetter setter = new ContextSetter(profiler, Arrays.asList("op"));
        int[] encodings = new int[OPS.length];
        for (int i = 0; i < OPS.length; i++) {
            encodings[i] = setter.encode(OPS[i]);
        }
        AtomicLong failures = new AtomicLong();
        AtomicLong writes = new AtomicLong();
        AtomicLong cpuNanos = new AtomicLong();
        List<Thread> threads = new ArrayList<>();
        for (int t = 1; t <= 4; t++) {
            final long base = (long) t << 40;
            final boolean legacy = t > 2;
            Thread th = new Thread(() -> {
                try {
                    long n = 0;
                    long cpu0 = MX.getCurrentThreadCpuTime();
                    CpuBudget budget = CpuBudget.of(WORK_MS);
                    while (budget.left()) {
                        for (int k = 0; k < 1000; k++) {
                            long span = base | ++n;
                            long root = rootOf(span);
                            if (n % 61 == 0) {
                                if (legacy) {
                                    profiler.setContext(0, 0);
                                } else {
                                    profiler.clearTraceContext();
                                }
                            } else if (legacy) {
                                // Two calls: between them a sample may see the new ids beside the
                                // previous root's value, which is no tear; the ids are checked.
                                profiler.setContext(span, root);
                                profiler.setContextValue(0, encodings[(int) (root & 3)]);
                            } else {
                                profiler.setTraceContext(root, span, 0, span, 0, opOf(root), -1, null);
                            }
                        }
                        writes.addAndGet(1000);
                    }
                    profiler.clearTraceContext();
                    cpuNanos.addAndGet(MX.getCurrentThreadCpuTime() - cpu0);
                } catch (Throwable e) {
                    failures.incrementAndGet();
                    e.printStackTrace();
                }
            }, (legacy ? "torn-legacy-" : "torn-trace-") + t);
            threads.add(th);
            th.start();
        }
        for (Thread th : threads) {
            th.join();
        }
        profiler.stop();
        assertEquals(0, failures.get());

        int withSpan = 0;
        int withoutSpan = 0;
        List<String> torn = new ArrayList<>();
        for (RecordedEvent e : JfrReader.executionSamples(jfr)) {
            String thread = JfrReader.threadName(e);
            if (thread == null || !thread.startsWith("torn-")) {
                continue;
            }
            long span = e.getLong("spanId");
            long root = e.getLong("localRootSpanId");
            String op = ContextSamplingTest.attr(e, "op");
            if (span == 0) {
                withoutSpan++;
                // Cleared (or not yet set): no root; a legacy clear keeps the attribute.
                if (root != 0 || (thread.startsWith("torn-trace-") && op != null)) {
                    torn.add(thread + ": span 0, root " + root + ", op " + op);
                }
                continue;
            }
            withSpan++;
            boolean idsTogether = root == rootOf(span);
            boolean opTogether = thread.startsWith("torn-legacy-") || opOf(root).equals(op);
            if (!idsTogether || !opTogether) {
                torn.add(thread + ": span " + Long.toHexString(span) + ", root " + Long.toHexString(root) + ", op " + op);
            }
        }
        assertTrue(torn.isEmpty(), torn.size() + " torn samples, e.g. " + torn.subList(0, Math.min(10, torn.size())));
        // About one sample per ms of the writers' CPU time; an eighth of that (timer expirations
        // merge into one weighted sample on a loaded host) still makes hundreds taken mid-write.
        long cpuMillis = cpuNanos.get() / 1_000_000L;
        assertTrue(withSpan >= cpuMillis / 8 && withSpan >= 100, withSpan + " samples with a span, "
                + withoutSpan + " without, for " + cpuMillis + " ms of CPU and " + writes.get() + " writes");
    }
}
