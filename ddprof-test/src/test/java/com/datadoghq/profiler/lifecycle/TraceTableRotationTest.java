package com.datadoghq.profiler.lifecycle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.CpuBudget;
import com.datadoghq.profiler.testing.ProfilerExtension;
import com.datadoghq.profiler.testing.TestEnv;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The call-trace table follows the working set of stacks, not the run's history: traces that no
 * sample since the previous dump referenced are gone after the dump, and after {@code stop} the
 * table is empty ({@code calltrace_storage_traces} = 0), as upstream's is. Upstream's
 * {@code linear_allocator_*} counters (read by its ContextCpuTest) measure our frame arenas: the
 * stored traces' frames, in use by one or two generations, and nothing after {@code stop}.
 */
@ExtendWith(ProfilerExtension.class)
class TraceTableRotationTest {
    private static final String TRACES = "calltrace_storage_traces";
    private static final String BYTES = "calltrace_storage_bytes";
    private static final String LINEAR_BYTES = "linear_allocator_bytes";
    private static final String LINEAR_CHUNKS = "linear_allocator_chunks";
    /** A stored trace's bytes beyond its frames: its slot (32) and its claim-list cell (4). */
    private static final long PER_TRACE = 36;
    /** Traces other threads may store between the reads of two counters: a few, 128 frames at most. */
    private static final long RACE_BYTES = 8 * 128 * 16;

    @TempDir
    Path dir;

    private final JavaProfiler profiler;

    TraceTableRotationTest(JavaProfiler profiler) {
        this.profiler = profiler;
    }

    @Test
    void tracesOfAnOldPhaseAreFreedByTheNextDumpAndAllByStop() throws Exception {
        TestEnv.start(profiler, "start,cpu=1ms,file=" + dir.resolve("main.jfr"));
        try {
            // Phase one: many distinct stacks (recursion to every depth up to 120).
            long sink = 0;
            CpuBudget many = CpuBudget.of(1200);
            for (int depth = 1; many.left(); depth = depth % 120 + 1) {
                sink += recurse(depth, 2000);
            }
            long phaseOne = counter(TRACES);
            assertTrue(phaseOne >= 40, "distinct stacks of phase one stored: " + phaseOne);
            assertArenaHoldsTheStoredFrames();
            profiler.dump(dir.resolve("one.jfr"));

            // Phase two: one stack.
            CpuBudget one = CpuBudget.of(600);
            while (one.left()) {
                sink += recurse(1, 2000);
            }
            profiler.dump(dir.resolve("two.jfr"));
            long afterTwo = counter(TRACES);
            assertTrue(afterTwo * 4 < phaseOne,
                    "after a dump that followed a phase with few stacks, the table still holds "
                            + afterTwo + " traces (phase one stored " + phaseOne + ")" + (sink & 0));
        } finally {
            profiler.stop();
        }
        assertEquals(0L, counter(TRACES), TRACES + " after stop");
        assertEquals(0L, counter(BYTES), BYTES + " after stop");
        assertEquals(0L, counter(LINEAR_BYTES), LINEAR_BYTES + " after stop");
        assertEquals(0L, counter(LINEAR_CHUNKS), LINEAR_CHUNKS + " after stop");
    }

    /**
     * While sampling: the arena bytes handed out are the stored traces' frames, which the storage
     * bytes count with each trace's slot and claim cell on top. The three counters are read one
     * after the other while other threads store traces, hence the slack.
     */
    private void assertArenaHoldsTheStoredFrames() {
        java.util.Map<String, Long> c = profiler.getDebugCounters();
        long traces = c.get(TRACES);
        long bytes = c.get(BYTES);
        long linear = c.get(LINEAR_BYTES);
        long chunks = c.get(LINEAR_CHUNKS);
        String seen = TRACES + "=" + traces + ", " + BYTES + "=" + bytes + ", " + LINEAR_BYTES + "=" + linear
                + ", " + LINEAR_CHUNKS + "=" + chunks;
        assertTrue(chunks >= 1 && chunks <= 2, "arenas in use (two generations): " + seen);
        assertEquals(0, linear % 16, "whole 16-byte frames: " + seen);
        long frames = bytes - PER_TRACE * traces;
        assertTrue(Math.abs(linear - frames) <= RACE_BYTES,
                "arena bytes differ from the stored frames' " + frames + ": " + seen);
    }

    private long counter(String name) {
        Long v = profiler.getDebugCounters().get(name);
        assertTrue(v != null, "no counter " + name);
        return v;
    }

    private static long recurse(int depth, int work) {
        if (depth > 1) {
            return recurse(depth - 1, work) + 1;
        }
        long x = work | 1;
        for (int i = 0; i < work; i++) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
        }
        return x & 1;
    }
}
