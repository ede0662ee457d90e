package com.datadoghq.profiler.workload;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.function.LongUnaryOperator;

/**
 * CPU work in a class meant to be loaded afresh by an {@link IsolatingLoader} (or defined as a
 * hidden class): {@code applyAsLong(millis)} spins in {@link #spinLoop} for that much of this
 * thread's CPU time (so a loaded host still yields the samples a test counts on), or 20 times as
 * long in wall time, whichever comes first. Loaded after the profiler started in the lazy mode, its
 * methods have no jmethodIDs when sampled.
 */
public final class LazySpin implements LongUnaryOperator {
    public static volatile long sink;

    @Override
    public long applyAsLong(long millis) {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long cpuEnd = mx.getCurrentThreadCpuTime() + millis * 1_000_000L;
        long wallEnd = System.nanoTime() + 20 * millis * 1_000_000L;
        long acc = 0;
        while (mx.getCurrentThreadCpuTime() < cpuEnd && System.nanoTime() < wallEnd) {
            acc += spinLoop(acc);
        }
        sink = acc;
        return acc;
    }

    static long spinLoop(long seed) {
        long x = seed | 1;
        for (int i = 0; i < 20_000; i++) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
        }
        return x & 0xff;
    }
}
