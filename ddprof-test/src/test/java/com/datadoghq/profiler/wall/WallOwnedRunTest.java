package com.datadoghq.profiler.wall;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.OwnedBlockHooks;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.ProfilerExtension;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Owned blocked runs under {@code wallprecheck}: a registered thread without a span that says, through
 * the park/block hooks, that it is about to sleep or park gets one wall sample for the whole run, and
 * the sampler sends it no signal after that until the run ends. The same sleep without the hooks is
 * only thinned (about one event in ten, weight kept), and a traced thread's owned sleep is sampled as
 * usual. The unowned sleeper's observations count the sampler's ticks, so the floors follow what the
 * sampler really did on a busy host.
 */
@ExtendWith(ProfilerExtension.class)
class WallOwnedRunTest {
    @TempDir
    Path dir;

    private final JavaProfiler profiler;

    WallOwnedRunTest(JavaProfiler profiler) {
        this.profiler = profiler;
    }

    private Thread registered(String name, Runnable body, AtomicLong failures) {
        return new Thread(() -> {
            profiler.addThread();
            try {
                body.run();
            } catch (Throwable e) {
                e.printStackTrace();
                failures.incrementAndGet();
            } finally {
                profiler.removeThread();
            }
        }, name);
    }

    @Test
    void anOwnedRunIsSampledOnceAndThenNotSignalled() throws Exception {
        Path file = dir.resolve("owned.jfr");
        TestEnv.start(profiler, "start,wall=1ms,wallprecheck,file=" + file);
        AtomicLong failures = new AtomicLong();
        AtomicLong tokens = new AtomicLong();
        Thread sleeper = registered("wall-owned-sleep", () -> {
            long token = OwnedBlockHooks.blockEnter(profiler, OwnedBlockHooks.SLEEPING);
            if (token != 0) {
                tokens.incrementAndGet();
            }
            try {
                WallWork.sleep(500);
            } finally {
                OwnedBlockHooks.blockExit(profiler, token);
            }
        }, failures);
        Thread parker = registered("wall-owned-park", () -> {
            OwnedBlockHooks.parkEnter(profiler);
            try {
                WallWork.park(500);
            } finally {
                OwnedBlockHooks.parkExit(profiler);
            }
        }, failures);
        Thread unowned = registered("wall-unowned-sleep", () -> WallWork.sleep(500), failures);
        Thread traced = registered("wall-owned-traced", () -> {
            profiler.setTraceContext(700, 7001, 0, 7001, 0, null, -1, null);
            long token = OwnedBlockHooks.blockEnter(profiler, OwnedBlockHooks.SLEEPING);
            try {
                WallWork.sleep(500);
            } finally {
                OwnedBlockHooks.blockExit(profiler, token);
                profiler.clearTraceContext();
            }
        }, failures);
        Thread[] all = {sleeper, parker, unowned, traced};
        for (Thread t : all) {
            t.start();
        }
        for (Thread t : all) {
            t.join();
        }
        Map<String, Long> counters = profiler.getDebugCounters();
        profiler.stop();
        assertEquals(0, failures.get());
        assertEquals(1, tokens.get(), "blockEnter(SLEEPING) on a registered thread arms a run");

        List<RecordedEvent> samples = WallClockTest.methodSamples(file);
        List<RecordedEvent> owned = JfrReader.onThread(samples, "wall-owned-sleep");
        List<RecordedEvent> parked = JfrReader.onThread(samples, "wall-owned-park");
        long ticks = JfrReader.onThread(samples, "wall-unowned-sleep").stream()
                .filter(e -> asleep(e)).mapToLong(e -> e.getLong("weight")).sum();
        long tracedSleeps = JfrReader.onThread(samples, "wall-owned-traced").stream()
                .filter(e -> asleep(e)).count();
        // The unowned sleeper was seen on most ticks of its 500 ms (all four threads are candidates of
        // every tick: 4 < walltpt): the measure of how many observations each thread had. Without the
        // hooks the owned runs would be thinned like it, to one event in ten: more than 5.
        assertTrue(ticks >= 100, ticks + " observations of a thread sleeping 500 ms at wall=1ms");
        // One sample for the run, plus at most a few around its edges (a signal already queued when
        // the first sample marked the run, the thread's start and end).
        assertTrue(!owned.isEmpty() && owned.size() <= 5, owned.size() + " samples of an owned sleep over "
                + ticks + " ticks" + JfrReader.describe(owned, 5));
        assertTrue(!parked.isEmpty() && parked.size() <= 5, parked.size() + " samples of an owned park over "
                + ticks + " ticks" + JfrReader.describe(parked, 5));
        // A traced thread's run is latency of its request: sampled every time, owned or not.
        assertTrue(tracedSleeps >= ticks / 2, tracedSleeps + " samples of a traced owned sleep, " + ticks
                + " ticks");
        // The two owned runs were skipped by the sampler on about every tick after their sample.
        long suppressed = counters.get("wc_signals_suppressed_sampled_run");
        assertTrue(suppressed >= ticks, suppressed + " suppressed signals for two owned runs over " + ticks
                + " ticks");
        long inEpochs = JfrReader.events(file, "datadog.WallClockSamplingEpoch").stream()
                .mapToLong(e -> e.getLong("numSuppressedSampledRun")).sum();
        assertTrue(inEpochs > 0 && inEpochs <= suppressed, inEpochs + " suppressed in the epochs, counter "
                + suppressed);
    }

    /** HotSpot sets SLEEPING, then sleeps on a park event whose wait says CONDVAR_WAIT (PARKED). */
    private static boolean asleep(RecordedEvent e) {
        return e.getString("state").matches("PARKED|SLEEPING");
    }

    @Test
    void hooksOfAThreadThatNeverRegisteredDoNothing() throws Exception {
        TestEnv.start(profiler, "start,wall=1ms,wallprecheck,file=" + dir.resolve("none.jfr"));
        long[] token = new long[1];
        Thread t = new Thread(() -> token[0] = OwnedBlockHooks.blockEnter(profiler, OwnedBlockHooks.SLEEPING));
        t.start();
        t.join();
        profiler.stop();
        assertEquals(0, token[0], "a thread without a filter cell arms nothing");
    }

    @Test
    void hooksOfAVirtualThreadDoNothing() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(TestEnv.jdk() >= 21, "virtual threads need JDK 21");
        TestEnv.start(profiler, "start,wall=1ms,wallprecheck,file=" + dir.resolve("virtual.jfr"));
        long[] token = new long[1];
        // Registered through its carrier: the carrier's cell would be marked and stay so while it
        // runs other virtual threads.
        Thread vt = VirtualThreadWallTest.startVirtual("wall-virtual-hooks", () -> {
            profiler.addThread();
            token[0] = OwnedBlockHooks.blockEnter(profiler, OwnedBlockHooks.SLEEPING);
            OwnedBlockHooks.parkEnter(profiler);
            OwnedBlockHooks.parkExit(profiler);
            profiler.removeThread();
        });
        vt.join();
        profiler.stop();
        assertEquals(0, token[0], "a virtual thread arms nothing");
    }
}
