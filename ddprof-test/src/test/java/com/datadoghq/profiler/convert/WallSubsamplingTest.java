package com.datadoghq.profiler.convert;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.zip.GZIPInputStream;

import com.datadoghq.profiler.convert.pprof.ProfileProto;
import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.TestEnv;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * pprof's wall time accounts for the threads each tick chose from (issue 37): with 12 threads in
 * the filter and {@code walltpt=4}, a tick samples 4 of them, so each sample stands for 3 threads'
 * interval; summed as samples x interval, every thread showed a third of its time. The converter
 * scales each wall sample by {@code samplePoolSize / numSuccessfulSamples} of the
 * {@code datadog.WallClockSamplingEpoch} it falls in. Checked as the ratio of the nanoseconds to
 * samples x interval, which a busy host (late ticks) leaves as it is.
 */
class WallSubsamplingTest {
    static final int THREADS = 12;
    static final int PER_TICK = 4;
    static final long INTERVAL_NS = 20_000_000L;

    @TempDir
    Path dir;

    @Test
    void wallNanosecondsStandForEveryThreadOfThePool() throws Exception {
        Path jfr = dir.resolve("wall.jfr");
        ChildJvm.Result child = new ChildJvm().classpath(TestEnv.libJar())
                .main(WallPoolMain.class, Integer.toString(THREADS), Integer.toString(PER_TICK), jfr.toString())
                .timeout(Duration.ofMinutes(2)).run(dir);
        assertEquals(0, child.exitCode, child.describe());
        assertTrue(child.stdout.contains("workload done"), child.describe());

        Path out = dir.resolve("wall.pb.gz");
        ChildJvm.Result r = new ChildJvm().jvmArgs("-jar", TestEnv.toolsJar().toString(), "convert", "--to", "pprof",
                "--event", "wall", jfr.toString(), out.toString()).timeout(Duration.ofMinutes(3)).run(dir);
        assertEquals(0, r.exitCode, r.describe());
        ProfileProto.Profile p;
        try (InputStream in = new GZIPInputStream(Files.newInputStream(out))) {
            p = ProfileProto.Profile.parseFrom(in);
        }
        assertEquals(INTERVAL_NS, p.getPeriod(), "the wall interval");
        long samples = EventKindsTest.sum(p, 0);
        long nanos = EventKindsTest.sum(p, 1);
        assertTrue(samples >= 2 * PER_TICK, "too few wall samples: " + samples);
        double ratio = nanos / (double) (samples * INTERVAL_NS);
        // 12 threads, 4 a tick: 3. Less where the first tick's samples precede its epoch event (1),
        // more where a tick's signal failed (its 3 samples then stand for 4 threads each).
        assertTrue(ratio >= 2.5 && ratio <= 4.0, "wall nanoseconds / (samples x interval) = " + ratio + " ("
                + nanos + " ns for " + samples + " samples), want about " + THREADS / PER_TICK);
    }
}
