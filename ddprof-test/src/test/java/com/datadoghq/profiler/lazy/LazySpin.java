package com.datadoghq.profiler.lazy;

import java.util.function.LongUnaryOperator;

import com.datadoghq.profiler.testing.CpuBudget;
import com.datadoghq.profiler.testing.IsolatingLoader;

/**
 * CPU work in a class meant to be loaded afresh by an {@link IsolatingLoader} (or defined as a
 * hidden class): {@code applyAsLong(millis)} spins in {@link #spinLoop} for that much of this
 * thread's CPU time ({@link CpuBudget}). Loaded after the profiler started in the lazy mode, its
 * methods have no jmethodIDs when sampled.
 */
public final class LazySpin implements LongUnaryOperator {
    public static volatile long sink;

    @Override
    public long applyAsLong(long millis) {
        CpuBudget budget = CpuBudget.of(millis);
        long acc = 0;
        while (budget.left()) {
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
