package com.datadoghq.profiler.alloc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
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
 * {@code generations=true} turns the live-heap tracker on whatever the memory flags say
 * (upstream's behaviour): alone (4 MiB interval, liveness at the default ratio 0.1, no
 * allocation events) and beside {@code memory=256k:a}, objects a method retains are written at
 * each dump as {@code datadog.HeapLiveObject} with their allocating stack, and their ages count
 * the GCs they survived. Without it, {@code memory=256k:a} samples the same allocations and
 * writes no live object. Each case runs {@link GenerationsMain} in a fresh JVM, so the process-wide
 * tracker starts empty, with the rate controller off so the number of samples follows the bytes
 * retained.
 */
class GenerationsTest {
    private static final String LIVE = LivenessTest.HEAP_LIVE_OBJECT;

    @TempDir
    Path dir;

    /** One child run: its files, its counters, its start reply. */
    private static final class Run {
        final Path dir;
        final Map<String, Long> counters = new HashMap<>();
        String reply = "";
        long retainedArrays;

        Run(Path dir) {
            this.dir = dir;
        }

        List<RecordedEvent> retained(String file, String type) throws Exception {
            return JfrReader.events(dir.resolve(file), type).stream()
                    .filter(e -> JfrReader.contains(e, GenerationsMain.class, "retain"))
                    .collect(Collectors.toList());
        }

        boolean gcGenerations(String file) throws Exception {
            List<RecordedEvent> cfg = JfrReader.events(dir.resolve(file), JfrReader.PROFILER_CONFIG);
            assertEquals(1, cfg.size(), "one DatadogProfilerConfig in " + file);
            return cfg.get(0).getBoolean("gcGenerations");
        }
    }

    private Run run(String name, String options, long bytes, int size, String heap) throws Exception {
        Path out = Files.createDirectories(dir.resolve(name));
        ChildJvm.Result r = new ChildJvm()
                .classpath(TestEnv.libJar())
                .jvmArgs(heap)
                .env("DDPROF_TEST_DISABLE_RATE_LIMIT", "1")
                .main(GenerationsMain.class, out.toString(), options, Long.toString(bytes), Integer.toString(size))
                .timeout(Duration.ofSeconds(120))
                .run(out);
        assertFalse(r.timedOut, "child JVM hung:\n" + r.describe());
        assertEquals(0, r.exitCode, "child JVM failed:\n" + r.describe());
        assertTrue(r.stdout.contains("workload done"), r.describe());
        Run run = new Run(out);
        for (String line : r.stdout.split("\n")) {
            if (line.startsWith("counter ")) {
                String[] kv = line.substring(8).split("=", 2);
                run.counters.put(kv[0], Long.parseLong(kv[1].trim()));
            } else if (line.startsWith("retained ")) {
                run.retainedArrays = Long.parseLong(line.substring(9).trim());
            } else if (line.startsWith("reply ")) {
                run.reply = line.substring(6);
            }
        }
        assertTrue(run.reply.contains("Profiling started") && !run.reply.contains("WARNING"),
                "generations=true is honoured, not reported as not yet sampled: " + run.reply);
        return run;
    }

    /**
     * The retained objects are live at both dumps, every one of them aged by the GCs since its
     * allocation: at least one (the System.gc before the first dump), and at least two more at
     * the second (two more System.gc). Returns how many were live at the first dump.
     */
    private static int assertLiveAndAgeing(Run run, int atLeast) throws Exception {
        List<RecordedEvent> first = run.retained("first.jfr", LIVE);
        List<RecordedEvent> second = run.retained("second.jfr", LIVE);
        assertTrue(first.size() >= atLeast && first.size() <= run.retainedArrays, first.size()
                + " retained objects live at the first dump, of " + run.retainedArrays + " arrays; at least "
                + atLeast + " expected" + JfrReader.describe(JfrReader.events(run.dir.resolve("first.jfr"), LIVE), 5));
        for (RecordedEvent e : first) {
            assertEquals("gen-keeper", JfrReader.threadName(e), "the allocating thread");
            assertTrue(e.getLong("size") > 0 && e.getFloat("weight") > 0, JfrReader.describe(e));
        }
        // Nothing was released: the same objects are live at the second dump.
        assertEquals(first.size(), second.size(), "retained objects live at the second dump");
        long min1 = first.stream().mapToLong(e -> e.getLong("age")).min().getAsLong();
        long min2 = second.stream().mapToLong(e -> e.getLong("age")).min().getAsLong();
        long max1 = first.stream().mapToLong(e -> e.getLong("age")).max().getAsLong();
        assertTrue(min1 >= 1 && min2 >= min1 + 2, "youngest age in GCs survived: " + min1 + " then " + min2);
        assertTrue(max1 >= min1, "ages " + min1 + ".." + max1);
        return first.size();
    }

    @Test
    void generationsAloneTracksRetainedObjectsAndTheirAges() throws Exception {
        // 4 MiB interval and 1 sample in 10 tracked: 512 MiB retained give about 128 samples and
        // 13 tracked objects (none tracked: probability 0.9^128, about 1e-6).
        long bytes = 512L << 20;
        Run run = run("alone", "generations=true", bytes, 128 << 10, "-Xmx1g");
        assertLiveAndAgeing(run, 1);
        // The tracked objects' weights, with the bytes of the samples the subsampling rejected,
        // stand for what was retained: so the samples were taken at the 4 MiB interval (at 256
        // KiB they would stand for the same bytes, but there would be about 16x more of them).
        List<RecordedEvent> live = run.retained("first.jfr", LIVE);
        double weighted = AllocationProfilingTest.weighted(live);
        assertTrue(weighted >= bytes * 0.4 && weighted <= bytes * 1.6, live.size() + " live objects stand for "
                + (long) weighted + " bytes; " + bytes + " were retained");
        assertTrue(live.size() <= bytes / (4 << 20), live.size() + " tracked: more than one per 4 MiB retained");
        // No `a`: the samples feed the tracker only.
        assertTrue(run.retained("first.jfr", AllocationProfilingTest.OBJECT_SAMPLE).isEmpty(),
                "generations=true alone writes no ObjectSample");
        assertTrue(run.gcGenerations("first.jfr"), "the recording says gcGenerations");
    }

    @Test
    void generationsAddsLiveObjectsToAllocationSampling() throws Exception {
        long bytes = 64L << 20;
        Run run = run("with-a", "memory=256k:a,generations=true", bytes, 32 << 10, "-Xmx256m");
        long samples = run.counters.get("alloc_samples");
        // 256 samples expected at 256 KiB; about 26 of them tracked.
        assertTrue(samples >= 128, "samples of " + (bytes >> 20) + " MiB at 256 KiB: " + samples);
        assertLiveAndAgeing(run, 5);
        assertTrue(run.retained("first.jfr", AllocationProfilingTest.OBJECT_SAMPLE).size() >= samples / 2,
                "`a` still writes the allocation samples");
        assertTrue(run.gcGenerations("first.jfr"), "the recording says gcGenerations");
    }

    @Test
    void withoutGenerationsAllocationsOnlyWriteNoLiveObjects() throws Exception {
        long bytes = 64L << 20;
        Run run = run("a-only", "memory=256k:a", bytes, 32 << 10, "-Xmx256m");
        // The same allocations were sampled and written...
        List<RecordedEvent> sampled = run.retained("first.jfr", AllocationProfilingTest.OBJECT_SAMPLE);
        assertTrue(sampled.size() >= 128, "allocation samples of the retained arrays: " + sampled.size());
        // ...and no live object, in any of the three chunks.
        for (String f : new String[] {"first.jfr", "second.jfr", "last.jfr"}) {
            assertTrue(JfrReader.events(run.dir.resolve(f), LIVE).isEmpty(), "HeapLiveObject without liveness in " + f);
        }
        assertEquals(0L, run.counters.getOrDefault("live_heap_tracked", 0L), run.counters.toString());
        assertFalse(run.gcGenerations("first.jfr"), "the recording says no gcGenerations");
    }
}
