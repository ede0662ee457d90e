package com.datadoghq.profiler.lazy;

import java.util.function.LongUnaryOperator;

import com.datadoghq.profiler.testing.CpuBudget;
import com.datadoghq.profiler.testing.IsolatingLoader;

/**
 * The same work as {@link LazySpin} under another name: the classes that come after an unloaded
 * one, whose metadata may reuse its memory. Loaded by {@link IsolatingLoader}s.
 */
public final class LazyReload implements LongUnaryOperator {
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
