package com.datadoghq.profiler.wall;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.ProfilerExtension;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code wallprecheck}: a blocked thread without a span is recorded once in ten observations, each
 * recorded sample carrying the suppressed ones as weight, and the tail is written when the thread
 * runs again, so the weight still counts every observation. A thread with a span is not thinned.
 */
@ExtendWith(ProfilerExtension.class)
class WallPrecheckTest {
    @TempDir
    Path dir;

    private final JavaProfiler profiler;

    WallPrecheckTest(JavaProfiler profiler) {
        this.profiler = profiler;
    }

    /** Parks 1 s, then runs 100 ms so that the sampler sees it runnable (the tail is flushed). */
    private static void parkThenRun() {
        WallWork.park(1000);
        long end = System.nanoTime() + 100_000_000L;
        double acc = 0;
        while (System.nanoTime() < end) {
            acc += Math.sqrt(acc + 1);
        }
        if (acc < 0) {
            throw new AssertionError();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"wallidle=false", "wallidle=true"})
    void blockedSpanlessThreadsAreThinnedWithoutLosingWeight(String idle) throws Exception {
        Path file = dir.resolve("precheck-" + idle.replace('=', '-') + ".jfr");
        TestEnv.start(profiler, "start,wall=1ms,wallprecheck," + idle + ",file=" + file);
        AtomicLong failures = new AtomicLong();
        Thread spanless = new Thread(() -> {
            profiler.addThread();
            try {
                parkThenRun();
            } catch (Throwable e) {
                failures.incrementAndGet();
            }
            profiler.removeThread();
        }, "wall-spanless");
        Thread traced = new Thread(() -> {
            profiler.addThread();
            profiler.setTraceContext(900, 9001, 0, 9001, 0, null, -1, null);
            try {
                parkThenRun();
            } catch (Throwable e) {
                failures.incrementAndGet();
            }
            profiler.clearTraceContext();
            profiler.removeThread();
        }, "wall-traced");
        spanless.start();
        traced.start();
        spanless.join();
        traced.join();
        Map<String, Long> counters = profiler.getDebugCounters();
        profiler.stop();
        assertEquals(0, failures.get());

        List<RecordedEvent> samples = WallClockTest.methodSamples(file);
        // The blocked observations (the run after the park is RUNNABLE), whatever their stacks.
        List<RecordedEvent> thin = JfrReader.onThread(samples, "wall-spanless").stream()
                .filter(e -> "PARKED".equals(e.getString("state"))).collect(Collectors.toList());
        List<RecordedEvent> full = JfrReader.onThread(samples, "wall-traced").stream()
                .filter(e -> "PARKED".equals(e.getString("state"))).collect(Collectors.toList());
        long thinWeight = thin.stream().mapToLong(e -> e.getLong("weight")).sum();
        long fullWeight = full.stream().mapToLong(e -> e.getLong("weight")).sum();
        assertTrue(fullWeight > 90, fullWeight + " weight of the traced thread parked 1 s at wall=1ms");
        assertTrue(full.stream().allMatch(e -> e.getLong("weight") == 1), "the traced thread is not thinned");
        // About one event in ten for the spanless thread, and about the same weight as the traced one.
        assertTrue(thin.size() <= 0.25 * thinWeight, thin.size() + " events for weight " + thinWeight);
        assertTrue(thin.stream().anyMatch(e -> e.getLong("weight") > 1), "no sample carries suppressed weight");
        assertTrue(thinWeight >= 0.7 * fullWeight && thinWeight <= 1.3 * fullWeight,
                "spanless weight " + thinWeight + ", traced " + fullWeight);
        long suppressed = counters.get("wc_unowned_blocked_suppressed");
        long recorded = counters.get("wc_unowned_blocked_recorded");
        assertTrue(suppressed > 0 && recorded > 0, "suppressed " + suppressed + ", recorded " + recorded);
        // Every observation of the parked spanless thread is weight of some sample (the tail was
        // flushed when it ran again): the recorded ones plus the suppressed ones. At most one
        // ratio's worth (9) may be missing: a tail the sampler had no tick to flush before the thread
        // ended. The first observation, before the thread owned its slot, is not a precheck decision.
        assertTrue(thinWeight >= suppressed + recorded - 9 && thinWeight <= suppressed + recorded + 1,
                "weight " + thinWeight + " for " + recorded + " recorded and " + suppressed + " suppressed observations");
    }
}
