package com.datadoghq.profiler.context;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * CPU-bound methods with distinct names for the context tests. Each spins for a budget of the
 * calling thread's CPU time and returns the CPU time it actually got, so that a test's
 * expectations scale with the work done rather than with wall-clock time.
 */
public final class ContextWork {
    public static volatile double sink;
    private static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();

    private ContextWork() {}

    public static long alphaWork(long cpuMillis) {
        return spin(cpuMillis);
    }

    public static long betaWork(long cpuMillis) {
        return spin(cpuMillis);
    }

    public static long legacyWork(long cpuMillis) {
        return spin(cpuMillis);
    }

    public static long beforeDumpWork(long cpuMillis) {
        return spin(cpuMillis);
    }

    public static long afterDumpWork(long cpuMillis) {
        return spin(cpuMillis);
    }

    public static long clearedWork(long cpuMillis) {
        return spin(cpuMillis);
    }

    /** Spins until {@code cpuMillis} of this thread's CPU time are spent (at most 20x in wall time). */
    private static long spin(long cpuMillis) {
        long cpu0 = MX.getCurrentThreadCpuTime();
        long cpuEnd = cpu0 + cpuMillis * 1_000_000L;
        long wallEnd = System.nanoTime() + 20 * cpuMillis * 1_000_000L;
        double r = 1.0;
        while (MX.getCurrentThreadCpuTime() < cpuEnd && System.nanoTime() < wallEnd) {
            for (int i = 1; i < 20_000; i++) {
                r = r * 0.999999 + 1.0 / i;
            }
        }
        sink += r;
        return (MX.getCurrentThreadCpuTime() - cpu0) / 1_000_000L;
    }
}
