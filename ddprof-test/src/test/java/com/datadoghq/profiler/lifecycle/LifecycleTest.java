package com.datadoghq.profiler.lifecycle;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.CpuBurner;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.ProfilerExtension;
import com.datadoghq.profiler.testing.Spinner;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** start / stop / dump in every order a user may call them. */
@ExtendWith(ProfilerExtension.class)
class LifecycleTest {
    @TempDir
    Path dir;

    private final JavaProfiler profiler;

    LifecycleTest(JavaProfiler profiler) {
        this.profiler = profiler;
    }

    @Test
    void startStopAndStartAgainRecordEachTime() throws Exception {
        for (int round = 1; round <= 2; round++) {
            Path file = dir.resolve("round" + round + ".jfr");
            String reply = TestEnv.start(profiler, "start,cpu=10ms,file=" + file);
            assertTrue(reply.contains("Profiling started"), "execute(start) returned: " + reply);
            assertTrue(TestEnv.isRunning(profiler), profiler.getStatus());
            CpuBurner.burn(500);
            profiler.stop();
            assertFalse(TestEnv.isRunning(profiler), profiler.getStatus());
            List<RecordedEvent> samples = JfrReader.executionSamples(file);
            assertFalse(samples.isEmpty(), "round " + round + ": no samples in " + file);
        }
    }

    @Test
    void eachDumpHoldsOnlyWhatHappenedSinceThePreviousOne() throws Exception {
        Path file = dir.resolve("main.jfr");
        Path dump1 = dir.resolve("dump1.jfr");
        Path dump2 = dir.resolve("dump2.jfr");
        TestEnv.start(profiler, "start,cpu=10ms,file=" + file);

        Spinner.firstPeriod(700);
        profiler.dump(dump1);
        Spinner.secondPeriod(700);
        profiler.dump(dump2);
        profiler.stop();

        List<RecordedEvent> first = JfrReader.executionSamples(dump1);
        List<RecordedEvent> second = JfrReader.executionSamples(dump2);
        assertTrue(first.stream().anyMatch(e -> JfrReader.contains(e, Spinner.class, "firstPeriod")),
                "first dump lacks samples of firstPeriod:" + JfrReader.describe(first, 5));
        assertTrue(second.stream().anyMatch(e -> JfrReader.contains(e, Spinner.class, "secondPeriod")),
                "second dump lacks samples of secondPeriod:" + JfrReader.describe(second, 5));
        assertFalse(second.stream().anyMatch(e -> JfrReader.contains(e, Spinner.class, "firstPeriod")),
                "second dump repeats samples taken before the first dump");
        assertFalse(first.stream().anyMatch(e -> JfrReader.contains(e, Spinner.class, "secondPeriod")),
                "first dump holds samples taken after it");
        // Each dump is a complete recording of its own, closed by the chunk-end events.
        assertFalse(JfrReader.events(dump1, JfrReader.PROFILER_CONFIG).isEmpty(), "dump1 has no config event");
        assertFalse(JfrReader.events(dump2, JfrReader.PROFILER_CONFIG).isEmpty(), "dump2 has no config event");
        // What stop() leaves in file= is what came after the last dump: parseable, without either period.
        List<RecordedEvent> rest = JfrReader.executionSamples(file);
        assertFalse(rest.stream().anyMatch(e -> JfrReader.contains(e, Spinner.class, "firstPeriod")
                        || JfrReader.contains(e, Spinner.class, "secondPeriod")),
                "the recording left by stop() repeats samples already dumped");
    }

    @Test
    void resumeAppendsToWhatTheFileHolds() throws Exception {
        Path file = dir.resolve("resumed.jfr");
        TestEnv.start(profiler, "start,cpu=10ms,file=" + file);
        Spinner.firstPeriod(500);
        profiler.stop();
        long firstSize = Files.size(file);
        String reply = TestEnv.start(profiler, "resume,cpu=10ms,file=" + file);
        assertTrue(reply.contains("Profiling started"), "execute(resume) returned: " + reply);
        Spinner.secondPeriod(500);
        profiler.stop();

        assertTrue(Files.size(file) > firstSize, "resume did not append: " + firstSize + " -> " + Files.size(file));
        List<RecordedEvent> samples = JfrReader.executionSamples(file);
        assertTrue(samples.stream().anyMatch(e -> JfrReader.contains(e, Spinner.class, "firstPeriod")),
                "the chunk written before resume is gone:" + JfrReader.describe(samples, 5));
        assertTrue(samples.stream().anyMatch(e -> JfrReader.contains(e, Spinner.class, "secondPeriod")),
                "the resumed session's chunk is missing:" + JfrReader.describe(samples, 5));
        // A later start truncates again.
        TestEnv.start(profiler, "start,cpu=10ms,file=" + file);
        profiler.stop();
        assertFalse(JfrReader.executionSamples(file).stream().anyMatch(e -> JfrReader.contains(e, Spinner.class, "firstPeriod")),
                "start did not truncate the file");
    }

    @Test
    void dumpWhileIdleDoesNothing() {
        TestEnv.stopQuietly(profiler);
        Path target = dir.resolve("idle.jfr");
        assertDoesNotThrow(() -> profiler.dump(target));
        assertFalse(Files.exists(target), "dump() while idle created " + target);
    }

    @Test
    void stopWhileIdleFails() {
        TestEnv.stopQuietly(profiler);
        IllegalStateException e = assertThrows(IllegalStateException.class, profiler::stop);
        assertEquals("Profiler is not active", e.getMessage());
        assertFalse(TestEnv.isRunning(profiler));
    }

    @Test
    void secondStartFailsAndKeepsTheFirstRunning() throws Exception {
        Path file = dir.resolve("first.jfr");
        Path other = dir.resolve("second.jfr");
        TestEnv.start(profiler, "start,cpu=10ms,file=" + file);
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> profiler.execute("start,cpu=10ms,file=" + other));
        assertTrue(e.getMessage() != null && e.getMessage().contains("already started"), "message: " + e.getMessage());
        assertTrue(TestEnv.isRunning(profiler), "the first session should still run:\n" + profiler.getStatus());
        CpuBurner.burn(300);
        profiler.stop();
        assertFalse(JfrReader.executionSamples(file).isEmpty(), "first session recorded nothing");
    }

    @Test
    void hundredQuickStartStopCycles() throws Exception {
        Path file = dir.resolve("cycles.jfr");
        for (int i = 0; i < 100; i++) {
            TestEnv.start(profiler, "start,cpu=10us,file=" + file);
            if (i % 10 == 0) {
                CpuBurner.burn(20);
            }
            profiler.stop();
        }
        assertFalse(TestEnv.isRunning(profiler));
        // The profiler is still usable and its last recording is whole.
        TestEnv.start(profiler, "start,cpu=10ms,file=" + file);
        CpuBurner.burn(500);
        profiler.stop();
        assertFalse(JfrReader.executionSamples(file).isEmpty(), "no samples after 100 start/stop cycles");
    }

    @Test
    void threadsStartingAndEndingWhileProfiling() throws Exception {
        Path file = dir.resolve("threads.jfr");
        TestEnv.start(profiler, "start,cpu=1ms,file=" + file);
        try {
            for (int batch = 0; batch < 25; batch++) {
                List<Thread> threads = new ArrayList<>();
                for (int i = 0; i < 8; i++) {
                    Thread t = new Thread(() -> Spinner.shortLived(15), "short-" + batch + "-" + i);
                    threads.add(t);
                    t.start();
                }
                for (Thread t : threads) {
                    t.join();
                }
            }
        } finally {
            profiler.stop();
        }
        List<RecordedEvent> all = JfrReader.readAll(file);
        assertFalse(JfrReader.ofType(all, JfrReader.PROFILER_CONFIG).isEmpty(), "recording not closed properly");
        List<RecordedEvent> samples = JfrReader.ofType(all, JfrReader.EXECUTION_SAMPLE);
        long fromShortThreads = samples.stream()
                .filter(e -> String.valueOf(JfrReader.threadName(e)).startsWith("short-"))
                .filter(e -> JfrReader.contains(e, Spinner.class, "shortLived"))
                .count();
        assertTrue(fromShortThreads >= 10,
                "threads started after start should be sampled; samples in shortLived on short-* threads: "
                        + fromShortThreads + " of " + samples.size() + JfrReader.describe(samples, 5));
    }
}
