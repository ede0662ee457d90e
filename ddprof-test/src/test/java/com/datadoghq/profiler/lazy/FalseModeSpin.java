package com.datadoghq.profiler.lazy;

import com.datadoghq.profiler.testing.IsolatingLoader;

/**
 * CPU work under a recursion of {@link #DEPTH} frames of this class, so that nearly every frame
 * the walker records on its thread is a method of this class: {@code run() -> descend(I,J)J} x
 * DEPTH {@code -> spin(J)J}. Run as loaded by the application loader or, as a fresh copy, by an
 * {@link IsolatingLoader} ({@code FjmethodidFalseTest}).
 */
public final class FalseModeSpin implements Runnable {
    public static final int DEPTH = 40;
    public static volatile long sink;
    /** How long {@link #run} spins. */
    static final long MILLIS = 1200;

    @Override
    public void run() {
        // CPU time of this thread, not wall time: a busy host must not starve the samples.
        java.lang.management.ThreadMXBean cpu = java.lang.management.ManagementFactory.getThreadMXBean();
        long deadline = cpu.getCurrentThreadCpuTime() + MILLIS * 1_000_000L;
        long wallCap = System.nanoTime() + 60_000_000_000L;
        long acc = 0;
        while (cpu.getCurrentThreadCpuTime() < deadline && System.nanoTime() < wallCap) {
            acc += descend(DEPTH, acc);
        }
        sink = acc;
    }

    static long descend(int depth, long seed) {
        if (depth == 0) {
            return spin(seed);
        }
        long r = descend(depth - 1, seed + depth);
        return r ^ depth;
    }

    static long spin(long seed) {
        long x = seed | 1;
        for (int i = 0; i < 20_000; i++) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
        }
        return x & 0xff;
    }
}
