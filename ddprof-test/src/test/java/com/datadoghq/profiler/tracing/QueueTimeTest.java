package com.datadoghq.profiler.tracing;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.ProfilerExtension;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code recordQueueTime}, {@code getCurrentTicks}, {@code isThresholdExceeded}: tasks queued on
 * one thread and run on another, recorded the way the tracer's queue-time tracker does (only
 * those over its threshold), with the running thread's span and the origin thread.
 */
@ExtendWith(ProfilerExtension.class)
class QueueTimeTest {
    private static final long THRESHOLD_MS = 20;

    @TempDir
    Path dir;

    private final JavaProfiler profiler;

    QueueTimeTest(JavaProfiler profiler) {
        this.profiler = profiler;
    }

    /** A queued task: the ticks and wall time at enqueue, the thread that enqueued it. */
    static final class Task {
        final int index;
        final long startTicks;
        final Instant enqueued;
        final Thread origin;

        Task(JavaProfiler profiler, int index) {
            this.index = index;
            this.startTicks = profiler.getCurrentTicks();
            this.enqueued = Instant.now();
            this.origin = Thread.currentThread();
        }
    }

    /** The scheduler class the events name. */
    static final class Scheduler {
    }

    @Test
    void onlyTasksOverTheThresholdAreRecordedWithTheirClassesThreadsAndSpans() throws Exception {
        Path file = dir.resolve("queue.jfr");
        TestEnv.start(profiler, "start,cpu=10ms,attributes=tag,file=" + file);
        BlockingQueue<Task> queue = new ArrayBlockingQueue<>(64);
        int tasks = 12;
        // Odd tasks wait in the queue past the threshold, even ones are taken at once.
        Thread origin = new Thread(() -> {
            for (int i = 0; i < tasks; i++) {
                queue.add(new Task(profiler, i));
                sleep(i % 2 == 1 ? 5 * THRESHOLD_MS : 0);
            }
        }, "qt-origin");
        Map<Integer, Instant> enqueuedAt = new HashMap<>();
        int[] recorded = new int[1];
        // What the worker asked to record: the profiler must write exactly these. (Whether an
        // even task also went over the threshold depends on the host's load, not on us.)
        java.util.Set<Integer> asked = java.util.Collections.synchronizedSet(new java.util.TreeSet<>());
        Thread worker = new Thread(() -> {
            for (int i = 0; i < tasks; i++) {
                Task t = take(queue);
                enqueuedAt.put(t.index, t.enqueued);
                if (t.index % 2 == 1) {
                    // Keep the task in the queue past the threshold (from its enqueue).
                    sleepUntil(t.startTicks + 2 * THRESHOLD_MS * 1_000_000L);
                }
                profiler.setTraceContext(1_000 + t.index, 100 + t.index, 0, 0, 0, "v" + t.index, -1, null);
                long now = profiler.getCurrentTicks();
                if (profiler.isThresholdExceeded(THRESHOLD_MS, t.startTicks, now)) {
                    profiler.recordQueueTime(t.startTicks, now, Task.class, Scheduler.class, ArrayBlockingQueue.class,
                            t.index, t.origin);
                    recorded[0]++;
                    asked.add(t.index);
                }
                profiler.clearTraceContext();
            }
        }, "qt-worker");
        worker.start();
        origin.start();
        origin.join();
        worker.join();
        profiler.stop();

        List<RecordedEvent> events = TracingEvents.queueTimes(file);
        assertTrue(recorded[0] >= tasks / 2, "the slow tasks were not over the threshold: " + recorded[0]);
        assertEquals(recorded[0], events.size(), "one event per recorded call: " + events);
        for (RecordedEvent e : events) {
            int index = e.getInt("queueLength");
            assertTrue(e.getDuration().compareTo(Duration.ofMillis(THRESHOLD_MS)) > 0, "under the threshold: " + e);
            assertEquals(Task.class.getName(), e.getClass("task").getName(), e.toString());
            assertEquals(Scheduler.class.getName(), e.getClass("scheduler").getName(), e.toString());
            assertEquals(ArrayBlockingQueue.class.getName(), e.getClass("queueType").getName(), e.toString());
            assertEquals("qt-origin", TracingEvents.javaName(e.getThread("origin")), e.toString());
            assertEquals("qt-worker", TracingEvents.javaName(e.getThread("eventThread")), e.toString());
            assertEquals(100 + index, e.getLong("spanId"), e.toString());
            assertEquals(1_000 + index, e.getLong("localRootSpanId"), e.toString());
            assertEquals("v" + index, TracingEvents.attribute(e, "tag"), e.toString());
            // The start is the enqueue instant: getCurrentTicks is the events' clock.
            Instant enqueued = enqueuedAt.get(index);
            assertNotNull(enqueued, e.toString());
            // Two clock reads a thread makes back to back; a loaded host may deschedule it between.
            long skewMs = Math.abs(Duration.between(enqueued, e.getStartTime()).toMillis());
            assertTrue(skewMs < 250, "event start " + e.getStartTime() + " vs enqueue " + enqueued);
        }
        java.util.Set<Integer> written = events.stream().map(e -> e.getInt("queueLength"))
                .collect(java.util.stream.Collectors.toCollection(java.util.TreeSet::new));
        assertEquals(asked, written, "the events are exactly the calls made: " + events);
        for (int i = 1; i < tasks; i += 2) {
            assertTrue(written.contains(i), "task " + i + " waited past the threshold but has no event: " + written);
        }
    }

    @Test
    void theFiveArgumentFormOfOlderTracersRecordsWithoutQueueType() throws Exception {
        Path file = dir.resolve("legacy.jfr");
        TestEnv.start(profiler, "start,cpu=10ms,file=" + file);
        long start = profiler.getCurrentTicks();
        sleep(5);
        long end = profiler.getCurrentTicks();
        profiler.recordQueueTime(start, end, Task.class, Scheduler.class, Thread.currentThread());
        profiler.stop();
        List<RecordedEvent> events = TracingEvents.queueTimes(file);
        assertEquals(1, events.size(), events.toString());
        RecordedEvent e = events.get(0);
        assertEquals(Task.class.getName(), e.getClass("task").getName());
        assertEquals(Scheduler.class.getName(), e.getClass("scheduler").getName());
        assertNull(e.getClass("queueType"));
        assertEquals(0, e.getInt("queueLength"));
        assertEquals(end - start, e.getDuration().toNanos());
        assertEquals(Thread.currentThread().getName(), TracingEvents.javaName(e.getThread("origin")));
        assertEquals(0, e.getLong("spanId"), "no trace context");
    }

    /**
     * An origin renamed after it started (here the test runner's thread, older than the library) is
     * written with its name as of the dump and its Java id, as upstream's QueueTimeTest expects.
     */
    @Test
    void aRenamedOriginCarriesItsNewNameAndItsJavaId() throws Exception {
        Path file = dir.resolve("renamed.jfr");
        Thread me = Thread.currentThread();
        String name = me.getName();
        TestEnv.start(profiler, "start,cpu=10ms,file=" + file);
        try {
            me.setName("qt-renamed-origin");
            long start = profiler.getCurrentTicks();
            sleep(5);
            profiler.recordQueueTime(start, profiler.getCurrentTicks(), Task.class, Scheduler.class,
                    ArrayBlockingQueue.class, 1, me);
            profiler.stop();
        } finally {
            me.setName(name);
        }
        List<RecordedEvent> events = TracingEvents.queueTimes(file);
        assertEquals(1, events.size(), events.toString());
        assertEquals("qt-renamed-origin", TracingEvents.javaName(events.get(0).getThread("origin")));
        assertEquals(me.getId(), events.get(0).getThread("origin").getJavaThreadId());
    }

    @Test
    void callsWhileIdleOrWithoutANativeOriginRecordNothingAndNeverThrow() throws Exception {
        TestEnv.stopQuietly(profiler);
        long t = profiler.getCurrentTicks();
        profiler.recordQueueTime(t - 100_000_000L, t, Task.class, Scheduler.class, ArrayBlockingQueue.class, 1,
                Thread.currentThread());
        Path file = dir.resolve("idle.jfr");
        TestEnv.start(profiler, "start,cpu=10ms,file=" + file);
        Thread notStarted = new Thread(() -> { }, "never-started");
        Thread ended = new Thread(() -> { }, "ended");
        ended.start();
        ended.join();
        assertDoesNotThrow(() -> {
            profiler.recordQueueTime(t, t + 1, Task.class, Scheduler.class, ArrayBlockingQueue.class, 2, notStarted);
            profiler.recordQueueTime(t, t + 1, Task.class, Scheduler.class, ArrayBlockingQueue.class, 3, ended);
            profiler.recordQueueTime(t, t + 1, Task.class, Scheduler.class, ArrayBlockingQueue.class, 4, null);
            profiler.recordQueueTime(t, t + 1, null, null, null, 5, Thread.currentThread());
        });
        profiler.stop();
        List<RecordedEvent> events = TracingEvents.queueTimes(file);
        assertEquals(1, events.size(), "only the call with a live origin: " + events);
        RecordedEvent e = events.get(0);
        assertEquals(5, e.getInt("queueLength"));
        assertNull(e.getClass("task"));
    }

    @Test
    void ticksAreMonotonicNanosecondsOnTheEventClock() throws Exception {
        long t0 = profiler.getCurrentTicks();
        long previous = t0;
        for (int i = 0; i < 100_000; i++) {
            long t = profiler.getCurrentTicks();
            assertTrue(t >= previous, "ticks went back: " + previous + " -> " + t);
            previous = t;
        }
        long n0 = System.nanoTime();
        sleep(50);
        long t1 = profiler.getCurrentTicks();
        long n1 = System.nanoTime();
        assertTrue(t1 - t0 >= TimeUnit.MILLISECONDS.toNanos(50), "50 ms slept, " + (t1 - t0) + " ticks");
        assertTrue(t1 - n0 >= TimeUnit.MILLISECONDS.toNanos(50) && t1 <= n1, "ticks are CLOCK_MONOTONIC ns, as nanoTime on Linux");
        assertTrue(profiler.isThresholdExceeded(49, t0, t1));
        assertFalse(profiler.isThresholdExceeded(60_000, t0, t1));
        assertFalse(profiler.isThresholdExceeded(0, t1, t1), "exceeded means strictly more");
    }

    private static Task take(BlockingQueue<Task> queue) {
        try {
            return queue.take();
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    private void sleepUntil(long ticks) {
        long left;
        while ((left = ticks - profiler.getCurrentTicks()) > 0) {
            sleep(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
        }
    }
}
