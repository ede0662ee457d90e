package com.datadoghq.profiler.workload;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.function.LongUnaryOperator;

/**
 * The same work as {@link LazySpin}, defined as a hidden class (JDK 15+: {@code Lookup.defineHiddenClass};
 * JDK 11-14: a VM-anonymous class, {@code Unsafe.defineAnonymousClass}) by {@link LazyMain}.
 */
public final class LazyHiddenSpin implements LongUnaryOperator {
    public static volatile long sink;

    @Override
    public long applyAsLong(long millis) {
        // CPU time, as LazySpin: a loaded host still yields the samples a test counts on.
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
