package com.datadoghq.profiler.jfr;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.CpuBurner;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.NativeMemoryGauges;
import com.datadoghq.profiler.testing.ProfilerExtension;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** getDebugCounters() reports what profiling did, under unique names that the recording repeats. */
@ExtendWith(ProfilerExtension.class)
class CountersTest {
    @TempDir
    Path dir;

    private final JavaProfiler profiler;

    CountersTest(JavaProfiler profiler) {
        this.profiler = profiler;
    }

    @Test
    void debugCountersCountCallTraces() throws Exception {
        Path file = dir.resolve("counters.jfr");
        Map<String, Long> running;
        try {
            TestEnv.start(profiler, "start,cpu=10ms,file=" + file);
            CpuBurner.burn(1000);
            running = profiler.getDebugCounters();
        } finally {
            TestEnv.stopQuietly(profiler);
        }
        assertNotNull(running);
        assertFalse(running.isEmpty(), "getDebugCounters() is empty");
        Long traces = running.get("calltrace_storage_traces");
        assertNotNull(traces, "no calltrace_storage_traces among " + new TreeSet<>(running.keySet()));
        assertTrue(traces > 0, "calltrace_storage_traces after 1 s of CPU work: " + traces);
        assertFalse(profiler.getDebugCounters().isEmpty(), "getDebugCounters() is empty after stop()");

        // The recording writes every counter once per chunk, so names must be unique there,
        // and each name getDebugCounters() knows must be among them.
        List<RecordedEvent> counters = JfrReader.events(file, JfrReader.PROFILER_COUNTER);
        Set<String> seen = new HashSet<>();
        for (RecordedEvent c : counters) {
            String name = c.getString("name");
            assertTrue(seen.add(name), "counter '" + name + "' written twice in one chunk");
        }
        Set<String> missing = new TreeSet<>(running.keySet());
        missing.removeAll(seen);
        assertTrue(missing.isEmpty(), "counters of getDebugCounters() missing from the recording: " + missing);
        assertHandlerTimes(NativeMemoryGauges.ofSingleChunk(file));
    }

    /**
     * The chunk's handler times: a median and a 99th percentile (from a histogram whose buckets are
     * within 1/16 of their values) that sit under the slowest handler, set by the dump for the chunk
     * it wrote.
     */
    private static void assertHandlerTimes(Map<String, Long> c) {
        long samples = c.getOrDefault("chunk_samples", 0L);
        long p50 = c.getOrDefault("unwinding_ns_p50", -1L);
        long p99 = c.getOrDefault("unwinding_ns_p99", -1L);
        long max = c.getOrDefault("unwinding_ns_max", -1L);
        String all = "chunk_samples " + samples + ", p50 " + p50 + ", p99 " + p99 + ", max " + max;
        assertTrue(samples >= 20, "samples of 1 s of CPU at 10 ms: " + all);
        assertTrue(p50 > 0 && p50 <= p99, all);
        assertTrue(p99 <= max * 17 / 16 + 1, "the 99th percentile beyond the slowest handler: " + all);
    }
}
