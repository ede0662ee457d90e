package com.datadoghq.profiler.lazy;

import java.util.function.LongUnaryOperator;

import com.datadoghq.profiler.testing.CpuBudget;

/**
 * The same work as {@link LazySpin}, defined as a hidden class (JDK 15+: {@code Lookup.defineHiddenClass};
 * JDK 11-14: a VM-anonymous class, {@code Unsafe.defineAnonymousClass}) by {@link LazyMain}.
 */
public final class LazyHiddenSpin implements LongUnaryOperator {
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
