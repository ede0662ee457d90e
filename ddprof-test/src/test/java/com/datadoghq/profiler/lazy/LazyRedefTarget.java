package com.datadoghq.profiler.lazy;

import java.util.function.LongBinaryOperator;

import com.datadoghq.profiler.testing.IsolatingLoader;

/**
 * Three methods that do the same work under different names, for {@link LazyRedefineMain}: a
 * thread that only ever runs {@link #alpha} must never have a {@code beta} or {@code gamma} frame,
 * however often the class is redefined under it. Loaded afresh by an {@link IsolatingLoader} for
 * every round.
 */
public final class LazyRedefTarget implements LongBinaryOperator {
    public static volatile long sink;

    /** Runs method {@code which} (0 alpha, 1 beta, 2 gamma) for {@code millis}. */
    @Override
    public long applyAsLong(long which, long millis) {
        // CPU time of this thread, not wall time: a busy host must not starve the samples.
        java.lang.management.ThreadMXBean cpu = java.lang.management.ManagementFactory.getThreadMXBean();
        long deadline = cpu.getCurrentThreadCpuTime() + millis * 1_000_000L;
        long wallCap = System.nanoTime() + 60_000_000_000L;
        long acc = 0;
        while (cpu.getCurrentThreadCpuTime() < deadline && System.nanoTime() < wallCap) {
            if (which == 0) {
                acc += alpha(acc);
            } else if (which == 1) {
                acc += beta(acc);
            } else {
                acc += gamma(acc);
            }
        }
        sink = acc;
        return acc;
    }

    static long alpha(long seed) {
        long x = seed | 1;
        for (int i = 0; i < 5_000; i++) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
        }
        return x & 0xff;
    }

    static long beta(long seed) {
        long x = seed | 3;
        for (int i = 0; i < 5_000; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        return x & 0xff;
    }

    static long gamma(long seed) {
        long x = seed | 5;
        for (int i = 0; i < 5_000; i++) {
            x += (x << 3) ^ (x >>> 11);
        }
        return x & 0xff;
    }
}
