package com.datadoghq.profiler.alloc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
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
 * Allocation profiling under {@code fjmethodid=lazy} in a fresh JVM ({@link AllocLazyMain}): the
 * allocation stacks are walked by our walker from the callback as raw, tagged frames, so sampling
 * creates no jmethodID (upstream's {@code GetStackTrace} makes one per sampled frame). Until the
 * recording is written no class has had IDs made for it; the dump then names the frames through
 * the lazy checks, for the sampled classes only.
 */
class AllocationLazyModeTest {
    @TempDir
    Path dir;

    @Test
    void allocationSamplingCreatesNoJmethodIdsAndItsFramesAreNamedAtTheDump() throws Exception {
        ChildJvm.Result r = new ChildJvm()
                .classpath(TestEnv.libJar())
                .jvmArgs("-Xmx256m")
                .main(AllocLazyMain.class, dir.toString())
                .timeout(Duration.ofSeconds(90))
                .run(dir);
        assertFalse(r.timedOut, "child JVM hung:\n" + r.describe());
        assertEquals(0, r.exitCode, "child JVM failed:\n" + r.describe());
        assertTrue(r.stdout.contains("workload done") && !r.stdout.contains("WARNING"), r.describe());
        Map<String, Long> before = r.values("before ");
        Map<String, Long> after = r.values("after ");
        assertEquals(0L, before.get("fjmethodid_lazy_fallback"), before.toString());
        long samples = before.get("alloc_samples");
        assertTrue(samples >= 50, "allocation samples: " + samples);
        // Every sample's Allocators frames were recorded raw: no jmethodID existed, none was made.
        assertTrue(before.get("walkvm_frames_raw") >= 2 * samples, "raw frames " + before.get("walkvm_frames_raw")
                + " for " + samples + " samples");
        assertEquals(0L, before.get("method_resolve_lazy_jmethodids_created"), "IDs made before any dump: " + before);
        assertEquals(0L, before.get("classes_preloaded"), before.toString());
        // The dump checked and named them from metadata, making no ID.
        assertTrue(after.get("method_resolve_lazy_metadata") >= 1, after.toString());
        assertEquals(0L, after.get("method_resolve_lazy_jmethodids_created"), "IDs made by the dump: " + after);

        List<RecordedEvent> events = JfrReader.events(dir.resolve("lazy.jfr"), AllocationProfilingTest.OBJECT_SAMPLE);
        List<RecordedEvent> mine = JfrReader.onThread(events, "lazy-allocator");
        List<RecordedEvent> named = mine.stream().filter(e -> JfrReader.contains(e, Allocators.class, "allocInts")
                || JfrReader.contains(e, Allocators.class, "allocIntegers")).collect(Collectors.toList());
        assertTrue(named.size() * 10 >= mine.size() * 9 && named.size() >= 50, named.size() + " of " + mine.size()
                + " samples name their allocator" + JfrReader.describe(mine, 5));
        double weighted = AllocationProfilingTest.weighted(named);
        long asked = (96L + 48L) << 20;
        assertTrue(weighted >= asked * 0.5 && weighted <= asked * 1.5, "samples stand for " + (long) weighted
                + " bytes of " + asked);
    }
}
