package com.datadoghq.profiler.memory;

import static com.datadoghq.profiler.testing.NativeMemoryGauges.get;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.NativeMemoryGauges;
import com.datadoghq.profiler.testing.TestEnv;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Under an {@code LD_PRELOAD}ed jemalloc, glibc is still loaded (and {@code __GLIBC__} still
 * defined), but it is not glibc's malloc that serves the process. The profiler must say so:
 * not glibc, no probed header (jemalloc has none), and every arena figure unavailable (-1)
 * rather than glibc's idle arenas. The accounting itself still adds up, and profiling works.
 */
class NativeMemoryJemallocTest {
    /** Debian's libjemalloc2; {@code .ci/run} installs it. */
    static final Path JEMALLOC = Paths.get("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2");

    @TempDir
    Path dir;

    @Test
    void underPreloadedJemallocTheArenaFiguresAreUnavailableAndTheCategoriesStillAddUp() throws Exception {
        if (!Files.isRegularFile(JEMALLOC)) {
            // Not a skip: without it the allocator detection goes untested.
            fail(JEMALLOC + " is missing: install Debian's libjemalloc2 (apt-get install libjemalloc2; .ci/run does)");
        }
        Path file = dir.resolve("jemalloc.jfr");
        Path dump = dir.resolve("jemalloc-dump.jfr");
        ChildJvm.Result r = new ChildJvm()
                .classpath(TestEnv.libJar())
                .env("LD_PRELOAD", JEMALLOC.toString())
                .main(NativeMemoryMain.class, file.toString(), dump.toString(), "2000")
                .timeout(Duration.ofSeconds(90))
                .run(dir);
        assertEquals(0, r.exitCode, r.describe());
        // The preload took effect (else this test would only repeat the glibc one).
        assertTrue(r.stdout.contains("allocator-mapped=" + JEMALLOC.toString())
                        || r.stdout.contains("allocator-mapped=" + JEMALLOC.toRealPath()),
                "jemalloc is not mapped in the child:\n" + r.describe());

        for (Path chunk : Arrays.asList(dump, file)) {
            String where = chunk.getFileName().toString();
            assertFalse(JfrReader.executionSamples(chunk).isEmpty(), where + ": no samples\n" + r.describe());
            Map<String, Long> c = NativeMemoryGauges.ofSingleChunk(chunk);
            NativeMemoryGauges.assertPartition(c, where);
            assertEquals(0L, get(c, "malloc_is_glibc", where), where + ": jemalloc taken for glibc's malloc");
            assertEquals(0L, get(c, "malloc_chunk_header_bytes", where), where + ": jemalloc has no per-chunk header");
            for (String a : NativeMemoryGauges.ARENA) {
                assertEquals(-1L, get(c, a, where), where + ": " + a + " must read unavailable (-1) under jemalloc");
            }
            // The rounding is still measured (malloc_usable_size is jemalloc's, through the
            // PLT): its size classes round most requests up, so some overhead shows.
            long heapLive = NativeMemoryGauges.heap(c, NativeMemoryGauges.LIVE);
            long heapOverhead = NativeMemoryGauges.heap(c, NativeMemoryGauges.OVERHEAD);
            assertTrue(heapLive > 0 && heapOverhead > 0,
                    where + ": heap live " + heapLive + ", overhead " + heapOverhead + " under jemalloc");
        }
    }
}
