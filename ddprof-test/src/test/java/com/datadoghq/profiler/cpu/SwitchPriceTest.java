package com.datadoghq.profiler.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.TestEnv;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code cpu=1ms} on a context-switch-heavy process (issue 34): perf_events stays the engine (ctimer
 * cannot deliver a finer interval than the scheduler tick), and the profiler says what it costs
 * there, measured rather than guessed: the process's context switches per CPU-second are a gauge,
 * and past the threshold the log and {@code status} warn, once. A CPU-bound process, or ctimer,
 * gets no warning. The price itself is a benchmark (docs/benchmarks.md), not a timed test.
 */
class SwitchPriceTest {
    private static final String WARNING = "CPU Engine Price : perf_events on a process making";

    @TempDir
    Path dir;

    @Test
    void perfEventsOnAnEventLoopWarnsWithTheMeasuredRate() throws Exception {
        Child c = run("switch", "cpu=1ms");
        assumePerf(c);
        assertTrue(c.rate > 5_000, "a ping-pong through pipes makes far more than 5,000 switches per CPU-second: "
                + c.rate + "\n" + c.r.describe());
        assertTrue(c.status.contains(WARNING), "status:\n" + c.status);
        assertTrue(c.r.stderr.contains("context switches per CPU-second"), "the log should warn:\n" + c.r.describe());
        assertEquals(1, count(c.r.stderr, "context switches per CPU-second"), "warned once:\n" + c.r.stderr);
    }

    @Test
    void aCpuBoundProcessIsNotWarned() throws Exception {
        Child c = run("cpu", "cpu=1ms");
        assumePerf(c);
        assertTrue(c.rate >= 0 && c.rate < 5_000, "a busy loop switches rarely: " + c.rate + "\n" + c.r.describe());
        assertFalse(c.status.contains(WARNING), "status:\n" + c.status);
        assertFalse(c.r.stderr.contains("context switches per CPU-second"), c.r.describe());
    }

    @Test
    void ctimerIsNotWarnedButTheRateIsMeasured() throws Exception {
        Child c = run("switch", "cpu=1ms,event=ctimer");
        assertTrue(c.status.contains("CPU Engine       : CTimer"), "status:\n" + c.status);
        assertTrue(c.rate > 5_000, "the gauge is measured with any engine: " + c.rate + "\n" + c.r.describe());
        assertFalse(c.status.contains(WARNING), "status:\n" + c.status);
    }

    private static final class Child {
        ChildJvm.Result r;
        String status;
        long rate = -1;
    }

    private Child run(String workload, String options) throws Exception {
        Child c = new Child();
        c.r = new ChildJvm()
                .classpath(TestEnv.libJar())
                .main(SwitchPriceMain.class, dir.toString(), workload, options)
                .timeout(Duration.ofMinutes(3))
                .run(dir);
        assertEquals(0, c.r.exitCode, c.r.describe());
        assertTrue(c.r.stdout.contains("workload done"), c.r.describe());
        c.status = new String(Files.readAllBytes(dir.resolve("status")), StandardCharsets.UTF_8);
        for (String line : c.r.stdout.split("\n")) {
            if (line.startsWith("counter cpu_switches_per_cpu_second=")) {
                c.rate = Long.parseLong(line.substring(line.indexOf('=') + 1).trim());
            }
        }
        return c;
    }

    /** Skipped where the kernel forbids unprivileged perf events; a failure where it permits them. */
    private static void assumePerf(Child c) {
        if (c.status.contains("CPU Engine       : PerfEvents")) {
            return;
        }
        int p = PerfEventsTest.paranoid();
        assumeTrue(p <= 2, "perf_events not permitted here (perf_event_paranoid=" + p + ")");
        throw new AssertionError("perf_events permitted, yet not the engine:\n" + c.status);
    }

    private static int count(String s, String needle) {
        int n = 0;
        for (int i = s.indexOf(needle); i >= 0; i = s.indexOf(needle, i + 1)) {
            n++;
        }
        return n;
    }
}
