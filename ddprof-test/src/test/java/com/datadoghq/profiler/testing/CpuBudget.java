package com.datadoghq.profiler.testing;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * A spin budget in the calling thread's CPU time, so that a loaded host still yields the samples a
 * test counts on; capped at 20 times as long in wall time. Public: the spin classes that use it are
 * loaded by other class loaders (and as hidden classes).
 */
public final class CpuBudget {
    private static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();
    private final long cpuEnd;
    private final long wallEnd;

    private CpuBudget(long millis) {
        cpuEnd = MX.getCurrentThreadCpuTime() + millis * 1_000_000L;
        wallEnd = System.nanoTime() + 20 * millis * 1_000_000L;
    }

    /** {@code millis} of this thread's CPU time from now. */
    public static CpuBudget of(long millis) {
        return new CpuBudget(millis);
    }

    /** Whether the budget is not spent yet (call on the thread that made it). */
    public boolean left() {
        return MX.getCurrentThreadCpuTime() < cpuEnd && System.nanoTime() < wallEnd;
    }
}
