package com.datadoghq.profiler.lifecycle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.TestEnv;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A start that fails leaves nothing running: whichever source fails (the CPU engine, the wall-clock
 * sampler, allocation sampling, native memory hooks; made to fail by the test-only
 * {@code DDPROF_TEST_START_FAIL}), the start reports it, the perf map and jitdump started before it stop
 * growing, no sample is taken, status says idle, and the same start made again works. And a stop after that
 * full start stops every source: CPU and wall samples, the wall sampler's rounds, allocation and native memory
 * samples, perf map and jitdump all move while it runs and stand still after it.
 */
class FailedStartTest {
    @TempDir
    java.nio.file.Path dir;

    @ParameterizedTest
    @ValueSource(strings = {"cpu", "wall", "alloc", "nativemem"})
    void aFailedStartLeavesNothingRunning(String part) throws Exception {
        ChildJvm.Result r = new ChildJvm()
                .classpath(TestEnv.libJar())
                .env("DDPROF_TEST_START_FAIL", part)
                .main(FailedStartMain.class, dir.toString())
                .timeout(Duration.ofSeconds(120))
                .run(dir);
        String pid = value(r, "pid");
        Files.deleteIfExists(Paths.get("/tmp/perf-" + pid + ".map"));
        assertFalse(r.timedOut, "child JVM hung:\n" + r.describe());
        assertEquals(0, r.exitCode, "child JVM failed:\n" + r.describe());
        assertTrue(r.stdout.contains("workload done: failed start"), r.describe());

        assertTrue(value(r, "failure").contains(part + " start failed"), "the start did not report the failure of "
                + part + ":\n" + r.describe());
        assertEquals("false", value(r, "running after failure"), r.describe());
        String[] map = value(r, "map").split(" -> ");
        assertEquals(map[0], map[1], "the perf map grew after the failed start (bytes):\n" + r.describe());
        String[] jit = value(r, "jitdump").split(" -> ");
        assertEquals(jit[0], jit[1], "the jitdump grew after the failed start (bytes):\n" + r.describe());
        String[] samples = value(r, "samples").split(" -> ");
        assertEquals(samples[0], samples[1], "samples taken after the failed start:\n" + r.describe());
        assertEquals("false", value(r, "map names chainC before the valid start"), r.describe());

        assertEquals("true", value(r, "running after valid start"), r.describe());
        // The method compiled while nothing was meant to run exists: the map that stood still would
        // have grown had the code map been left on.
        assertEquals("true", value(r, "map names chainC after the valid start"), r.describe());

        // The same work moves every count while the sources run, so standing still after stop says they stopped.
        for (String moved : value(r, "while running").split(" ")) {
            String[] n = moved.substring(moved.indexOf('=') + 1).split("->");
            assertTrue(Long.parseLong(n[1]) > Long.parseLong(n[0]), moved + " did not move while running:\n"
                    + r.describe());
        }
        for (String still : value(r, "after stop").split(" ")) {
            String[] n = still.substring(still.indexOf('=') + 1).split("->");
            assertEquals(n[0], n[1], still + " moved after stop:\n" + r.describe());
        }
        String[] mapAfter = value(r, "map after stop").split(" -> ");
        assertEquals(mapAfter[0], mapAfter[1], "the perf map grew after stop (bytes):\n" + r.describe());
        String[] jitAfter = value(r, "jitdump after stop").split(" -> ");
        assertEquals(jitAfter[0], jitAfter[1], "the jitdump grew after stop (bytes):\n" + r.describe());
        assertEquals("false", value(r, "map names a method compiled after stop"), r.describe());
    }

    private static String value(ChildJvm.Result r, String key) {
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(key) + ": (.*)$").matcher(r.stdout);
        assertTrue(m.find(), "no '" + key + "' line:\n" + r.describe());
        return m.group(1).trim();
    }
}
