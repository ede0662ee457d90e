package com.datadoghq.profiler.memory;

import static com.datadoghq.profiler.testing.NativeMemoryGauges.LIVE;
import static com.datadoghq.profiler.testing.NativeMemoryGauges.MAX;
import static com.datadoghq.profiler.testing.NativeMemoryGauges.OVERHEAD;
import static com.datadoghq.profiler.testing.NativeMemoryGauges.get;
import static com.datadoghq.profiler.testing.NativeMemoryGauges.heap;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.CpuBurner;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.NativeMemoryGauges;
import com.datadoghq.profiler.testing.ProfilerExtension;
import com.datadoghq.profiler.testing.TestEnv;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The profiler's account of its own native memory, end to end in this JVM (glibc's malloc):
 * what a user reads in every chunk's {@code datadog.ProfilerCounter} events and in
 * {@code getDebugCounters()} is complete, adds up, and measures what it claims to.
 */
@ExtendWith(ProfilerExtension.class)
class NativeMemoryAccountingTest {
    @TempDir
    Path dir;

    private final JavaProfiler profiler;
    private final List<CpuBurner> burners = new ArrayList<>();
    private final List<Thread> workers = new ArrayList<>();

    NativeMemoryAccountingTest(JavaProfiler profiler) {
        this.profiler = profiler;
    }

    @AfterEach
    void cleanUp() throws InterruptedException {
        burners.forEach(CpuBurner::stop);
        for (Thread t : workers) {
            t.join();
        }
    }

    /** Threads that burn CPU (so: samples, traces, named threads) until the test ends. */
    private void startWorkers(int n) {
        for (int i = 0; i < n; i++) {
            CpuBurner b = new CpuBurner();
            Thread t = new Thread(b, "mem-worker-" + i);
            burners.add(b);
            workers.add(t);
            t.start();
        }
    }

    @Test
    void everyChunkCarriesCategoriesThatAddUpWithMeasuredOverhead() throws Exception {
        Path file = dir.resolve("main.jfr");
        List<Path> chunks = Arrays.asList(dir.resolve("dump1.jfr"), dir.resolve("dump2.jfr"), file);
        TestEnv.start(profiler, "start,cpu=1ms,file=" + file);
        startWorkers(3);
        Thread.sleep(1200);
        profiler.dump(chunks.get(0));
        Thread.sleep(1200);
        profiler.dump(chunks.get(1));
        Thread.sleep(800);
        Map<String, Long> running = profiler.getDebugCounters();
        profiler.stop();

        for (Path chunk : chunks) {
            String where = chunk.getFileName().toString();
            assertFalse(JfrReader.executionSamples(chunk).isEmpty(), where + ": no samples");
            Map<String, Long> c = NativeMemoryGauges.ofSingleChunk(chunk);
            NativeMemoryGauges.assertPartition(c, where);
            assertGlibcFacts(c, where);

            // Overhead is measured per block, so it exists wherever there are heap blocks, and
            // on glibc it is the rounding to 16 bytes plus an 8-byte header: a modest share.
            long heapLive = heap(c, LIVE);
            long heapOverhead = heap(c, OVERHEAD);
            assertTrue(heapOverhead > 0, where + ": no heap overhead with " + heapLive + " heap bytes live");
            assertTrue(heapOverhead * 4 < heapLive,
                    where + ": heap overhead " + heapOverhead + " is 25% or more of heap live " + heapLive);

            // What the workload must have used. The three worker threads are alive and named at
            // every chunk; the chunk being written holds the constant pools and the chunk bytes
            // when the gauges are read (they are written at its end); every chunk resolved the
            // workers' methods, so the method map was used at some point since start.
            assertTrue(get(c, LIVE + ".thread_info", where) > 0, where + ": thread_info is empty with 3 live threads");
            assertTrue(get(c, LIVE + ".dictionary", where) > 0, where + ": no dictionary bytes while writing pools");
            assertTrue(get(c, LIVE + ".jfr_buffers", where) > 0, where + ": no jfr_buffers bytes while writing a chunk");
            assertTrue(get(c, MAX + ".method_map", where) > 0, where + ": method_map never used while naming frames");
        }

        // getDebugCounters() exposes the same gauges, and they add up there too.
        List<String> missing = new ArrayList<>(NativeMemoryGauges.names());
        missing.removeAll(running.keySet());
        assertTrue(missing.isEmpty(), "getDebugCounters() lacks " + missing + " among " + new TreeSet<>(running.keySet()));
        NativeMemoryGauges.assertPartition(running, "getDebugCounters()");
        assertGlibcFacts(running, "getDebugCounters()");
    }

    /** What this machine's malloc (glibc 2.33+ with mallinfo2) must report. */
    private static void assertGlibcFacts(Map<String, Long> c, String where) {
        assertEquals(1L, get(c, "malloc_is_glibc", where), where + ": glibc's malloc serves this JVM");
        // Probed: malloc chunks of glibc on x86_64 carry an 8-byte size field beyond the usable size.
        assertEquals(8L, get(c, "malloc_chunk_header_bytes", where), where + ": glibc's chunk header");
        for (String a : NativeMemoryGauges.ARENA) {
            assertTrue(get(c, a, where) >= 0, where + ": " + a + " = " + c.get(a) + " on glibc with mallinfo2");
        }
        // One mallinfo2() call feeds all of them: glibc computes in-use as arena minus free,
        // and the trimmable top chunk is one of the free chunks. Catches crossed fields.
        long arena = c.get("malloc_arena_bytes");
        long free = c.get("malloc_free_held_bytes");
        assertTrue(arena > 0, where + ": no arena bytes in a running JVM");
        assertEquals(arena, c.get("malloc_in_use_bytes") + free, where + ": in use + free held != arena");
        assertTrue(c.get("malloc_trimmable_bytes") <= free, where + ": trimmable above free held");
    }

    @Test
    void peaksStartAgainAtStart() throws Exception {
        TestEnv.start(profiler, "start,cpu=1ms,file=" + dir.resolve("first.jfr"));
        startWorkers(2);
        Thread.sleep(600);
        // A dump builds pools and chunk bytes, then frees them: the peak stays above live.
        profiler.dump(dir.resolve("first-dump.jfr"));
        Map<String, Long> before = profiler.getDebugCounters();
        profiler.stop();
        long heapBefore = heap(before, MAX);
        long transientBefore = before.get(MAX) - before.get(LIVE);
        assertTrue(transientBefore > 16 * 1024,
                "precondition: a dump should leave the peak well above live: peak " + before.get(MAX)
                        + ", live " + before.get(LIVE));

        TestEnv.start(profiler, "start,cpu=1ms,file=" + dir.resolve("second.jfr"));
        Map<String, Long> after = profiler.getDebugCounters();
        long transientAfter = after.get(MAX) - after.get(LIVE);
        // "About" live: start itself allocates and frees a little before we can read.
        assertTrue(transientAfter >= 0 && transientAfter * 4 < transientBefore,
                "native_mem_max_bytes not reset by start: peak - live was " + transientBefore
                        + " before stop, " + transientAfter + " after start (peak " + after.get(MAX)
                        + ", live " + after.get(LIVE) + ")");
        long jfrPeakBefore = before.get(MAX + ".jfr_buffers");
        long jfrPeakAfter = after.get(MAX + ".jfr_buffers");
        assertTrue(jfrPeakAfter < jfrPeakBefore,
                "the jfr_buffers peak of the previous session survived start: " + jfrPeakAfter
                        + " (was " + jfrPeakBefore + ")");
        System.out.println("peak-reset: heap peak before " + heapBefore + ", transient before " + transientBefore
                + ", after " + transientAfter + ", jfr_buffers peak " + jfrPeakBefore + " -> " + jfrPeakAfter);
    }
}
