package com.datadoghq.profiler.alloc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An allocation burst that offers a chunk far more samples than its buffer holds still gets an unbiased
 * estimate: the bytes the recorded {@code datadog.ObjectSample}s stand for (weight x size) are within
 * the standard error their weights imply of what the threads really allocated (the JVM's per-thread
 * counter). Upstream's AllocationProfilerTest is this burst: its harness turns the rate controller
 * off ({@code DDPROF_TEST_DISABLE_RATE_LIMIT=1}), which is what lets samples pile up; a dropped sample
 * was once simply lost, and the estimate came out 85% low. The buffer is shrunk to 4,096 records
 * ({@code DDPROF_TEST_SAMPLE_RECORDS}) so that 4 GiB fill it four times over, where the default one
 * needs tens of GiB: the thinning is relative to the buffer's capacity, so the same code runs.
 */
class AllocationBurstTest {
    static final String OBJECT_SAMPLE = "datadog.ObjectSample";
    static final int RECORDS = 4096;
    static final int THREADS = 8;
    /** 4 GiB in all: about 16,000 samples offered at 256 KiB, four buffers' worth. */
    static final long BYTES_PER_THREAD = 512L << 20;

    @TempDir
    Path dir;

    @Test
    void aBurstThatOverflowsTheBufferIsStillEstimatedWithoutBias() throws Exception {
        ChildJvm.Result r = new ChildJvm()
                .classpath(TestEnv.libJar())
                .jvmArgs("-Xmx256m")
                .env("DDPROF_TEST_DISABLE_RATE_LIMIT", "1")
                .env("DDPROF_TEST_SAMPLE_RECORDS", Integer.toString(RECORDS))
                .main(AllocBurstMain.class, dir.toString(), "memory=262144:a", Integer.toString(THREADS),
                        Long.toString(BYTES_PER_THREAD))
                .timeout(Duration.ofMinutes(4))
                .run(dir);
        assertFalse(r.timedOut, "child JVM hung:\n" + r.describe());
        assertEquals(0, r.exitCode, "child JVM failed:\n" + r.describe());
        assertTrue(r.stdout.contains("workload done"), r.describe());
        Map<String, Long> counters = new HashMap<>();
        Map<String, Long> allocated = new HashMap<>();
        for (String line : r.stdout.split("\n")) {
            if (line.startsWith("counter ")) {
                String[] kv = line.substring(8).split("=", 2);
                counters.put(kv[0], Long.parseLong(kv[1].trim()));
            } else if (line.startsWith("allocated ")) {
                String[] kv = line.substring(10).trim().split(" ");
                allocated.put(kv[0], Long.parseLong(kv[1]));
            }
        }
        assertEquals(THREADS, allocated.size(), r.describe());

        List<RecordedEvent> all = JfrReader.events(dir.resolve("burst.jfr"), OBJECT_SAMPLE);
        long trueTotal = 0;
        List<RecordedEvent> named = all.stream().filter(e -> JfrReader.contains(e, Allocators.class, "allocInts"))
                .collect(Collectors.toList());
        // Each thread is represented (0.5-2x of its bytes); unbiasedness is checked on the whole
        // burst below. A thread's own standard error, estimated from its kept samples, is not a
        // bound: where a busy host staggers the threads, one allocates mostly at the end of the
        // burst, where a sample is kept with probability 2^-k and weighs 2^k, and a thread that
        // happened to keep none of those few heavy samples looks both low and precise (CI,
        // 2026-12-06: burst-1 at 0.55 of its bytes, "4.5 standard errors", the burst at 1.0).
        for (Map.Entry<String, Long> t : allocated.entrySet()) {
            List<RecordedEvent> mine = JfrReader.onThread(named, t.getKey());
            double share = AllocationProfilingTest.weighted(mine) / t.getValue();
            assertTrue(share >= 0.5 && share <= 2, t.getKey() + ": samples stand for " + share + " of its "
                    + t.getValue() + " bytes (" + mine.size() + " samples)");
            trueTotal += t.getValue();
        }
        assertTrue(named.size() * 10 >= all.size() * 9, named.size() + " of " + all.size()
                + " samples name allocInts" + JfrReader.describe(all, 5));
        System.out.printf("burst: %d samples stand for %.3f of the %d bytes allocated (thinned %d, dropped %d)%n",
                named.size(), AllocationProfilingTest.weighted(named) / trueTotal, trueTotal,
                counters.get("samples_thinned"), counters.get("samples_dropped_buffer_full"));
        AllocationProfilingTest.assertStandsFor(named, trueTotal, "the burst");

        // The burst offered the chunk more samples than it holds: some were left out, none was lost.
        assertTrue(counters.get("samples_thinned") > 0, "the buffer never filled: " + all.size()
                + " samples; counters: " + counters);
        assertEquals(0L, counters.get("samples_dropped_buffer_full"), "counters: " + counters);
        assertTrue(all.size() <= RECORDS, all.size() + " samples in a buffer of " + RECORDS);
        assertEquals(262144L, counters.get("alloc_interval_bytes"), "the rate controller stayed off");
    }
}
