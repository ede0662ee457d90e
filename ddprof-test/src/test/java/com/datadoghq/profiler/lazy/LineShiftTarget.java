package com.datadoghq.profiler.lazy;

/**
 * The class {@link KeptIdNamesMain} redefines with every line number moved by
 * {@link KeptIdNamesMain#SHIFT} ({@link KeptIdNamesMain#shiftLines}): the same methods, IDs and
 * bytecode, other lines. {@link #hot} is where its worker burns.
 */
public final class LineShiftTarget {
    static volatile long sink;

    private LineShiftTarget() {}

    static long hot(long seed) {
        long x = seed | 1;
        for (int i = 0; i < 200_000; i++) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
        }
        sink = x;
        return x & 0xff;
    }
}
