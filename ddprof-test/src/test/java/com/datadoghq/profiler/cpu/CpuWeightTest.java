package com.datadoghq.profiler.cpu;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLongArray;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.CpuBudget;
import com.datadoghq.profiler.testing.HostSteal;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.ProfilerExtension;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * CPU weights add up: at {@code cpu=1ms} a per-thread CPU timer fires only on the scheduler tick
 * (every 4 ms at CONFIG_HZ=250), so each signal stands for several expirations. The samples'
 * weights ({@code 1 + si_overrun}) must sum, per thread, to the CPU time the thread really used
 * divided by the interval, within 10%: measured against the thread's own CPU clock, so a busy host
 * changes how much CPU the threads get, not the ratio. Where {@code cpu=1ms} runs on perf_events (finer
 * than the tick, and permitted) the weights count perf's {@code cpu-clock}, which also runs while the
 * hypervisor steals the vCPU: the upper bound allows for that share ({@link HostSteal}).
 */
@ExtendWith(ProfilerExtension.class)
class CpuWeightTest {
    private static final int THREADS = 2;
    private static final long CPU_MILLIS = 1500;
    private static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();

    @TempDir
    Path dir;

    private final JavaProfiler profiler;

    CpuWeightTest(JavaProfiler profiler) {
        this.profiler = profiler;
    }

    @Test
    void weightsAtOneMillisecondSumToTheThreadsCpuTime() throws Exception {
        Path file = dir.resolve("weights.jfr");
        AtomicLongArray cpuNanos = new AtomicLongArray(THREADS);
        CountDownLatch done = new CountDownLatch(THREADS);
        TestEnv.start(profiler, "start,cpu=1ms,file=" + file);
        Thread[] workers = new Thread[THREADS];
        HostSteal steal = HostSteal.start();
        HostSteal.Bound most;
        try {
            for (int i = 0; i < THREADS; i++) {
                int index = i;
                workers[i] = new Thread(() -> {
                    // The thread's own CPU clock, from its first instruction under the timer to
                    // its last: the expirations a sample can stand for fall inside it.
                    long before = MX.getCurrentThreadCpuTime();
                    CpuBudget budget = CpuBudget.of(CPU_MILLIS);
                    long x = 1;
                    while (budget.left()) {
                        for (int k = 0; k < 10_000; k++) {
                            x ^= x << 13;
                            x ^= x >>> 7;
                            x ^= x << 17;
                        }
                    }
                    cpuNanos.set(index, MX.getCurrentThreadCpuTime() - before + (x & 1));
                    done.countDown();
                    // Stay alive, idle, until the profiler stopped: the thread's timer is only
                    // deleted at its end, and an idle thread's timer does not fire.
                    try {
                        Thread.sleep(Long.MAX_VALUE);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }, "weight-worker-" + i);
                workers[i].start();
            }
            done.await();
            most = steal.bound(1.1);
        } finally {
            profiler.stop();
            for (Thread w : workers) {
                if (w != null) {
                    w.interrupt();
                    w.join();
                }
            }
        }

        List<RecordedEvent> samples = JfrReader.executionSamples(file);
        for (int i = 0; i < THREADS; i++) {
            List<RecordedEvent> mine = JfrReader.onThread(samples, "weight-worker-" + i);
            long weight = mine.stream().mapToLong(e -> e.getLong("weight")).sum();
            double expected = cpuNanos.get(i) / 1_000_000.0;
            assertTrue(mine.size() >= 50, "too few samples on weight-worker-" + i + ": " + mine.size()
                    + " for " + Math.round(expected) + " ms of CPU");
            double ratio = weight / expected;
            assertTrue(ratio >= 0.9 && ratio <= most.most,
                    "weight-worker-" + i + ": " + mine.size() + " samples of total weight " + weight
                            + " for " + Math.round(expected) + " ms of CPU at cpu=1ms (ratio "
                            + String.format("%.3f", ratio) + ", must be within 0.9.." + most + ")");
        }
    }
}
