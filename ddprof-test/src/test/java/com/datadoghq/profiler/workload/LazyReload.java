package com.datadoghq.profiler.workload;

import java.util.function.LongUnaryOperator;

/**
 * The same work as {@link LazySpin} under another name: the classes that come after an unloaded
 * one, whose metadata may reuse its memory. Loaded by {@link IsolatingLoader}s.
 */
public final class LazyReload implements LongUnaryOperator {
    public static volatile long sink;

    @Override
    public long applyAsLong(long millis) {
        long deadline = System.nanoTime() + millis * 1_000_000L;
        long acc = 0;
        while (System.nanoTime() < deadline) {
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
