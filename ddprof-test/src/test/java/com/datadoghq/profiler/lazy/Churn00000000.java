package com.datadoghq.profiler.lazy;

import java.util.function.IntUnaryOperator;

import com.datadoghq.profiler.testing.CpuBudget;

/**
 * The template of {@link LazyChurnMain}'s classes: each is a copy of this class file under a name of
 * the same length ({@code Churn00000757}), in a loader of its own, run once and dropped. Same-shaped
 * methods of consecutive classes, whose metadata reuses the memory an unloaded one left.
 */
public final class Churn00000000 implements IntUnaryOperator {
    public static volatile long sink;

    @Override
    public int applyAsInt(int millis) {
        CpuBudget budget = CpuBudget.of(millis);
        long acc = 0;
        while (budget.left()) {
            acc += mix(acc);
        }
        sink = acc;
        return (int) acc;
    }

    static long mix(long seed) {
        long x = seed | 1;
        for (int i = 0; i < 5_000; i++) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
        }
        return x & 0xff;
    }
}
