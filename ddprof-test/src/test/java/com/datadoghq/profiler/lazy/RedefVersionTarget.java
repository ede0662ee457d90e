package com.datadoghq.profiler.lazy;

/**
 * The class {@link RedefVersionsMain} redefines back and forth. As compiled (version 1),
 * {@link #hot} calls {@link #helperA} and {@link #other} calls {@link #helperB}; version 2 is the
 * same class file with the two helpers' NameAndType entries swapped
 * ({@link RedefVersionsMain#swapHelpers}), so there {@code hot} calls {@code helperB}. The helpers
 * have the same code and tell the caller who they are; {@code hot} records each call, bracketed
 * by clock reads, in the thread's {@link RedefVersionRing}. A sample whose stack holds
 * {@code helperA} must fall inside a version-1 segment of its thread, {@code helperB} inside a
 * version-2 one. Nothing calls {@code other}: it only holds the second reference in the file.
 */
public final class RedefVersionTarget {
    static final int CALLS = 40;
    static final int WORK = 4_000;

    private RedefVersionTarget() {}

    static long hot(RedefVersionRing r, long seed) {
        long acc = seed;
        for (int i = 0; i < CALLS; i++) {
            long t0 = RedefVersionRing.ticks();
            acc += helperA(r, acc);
            r.record(t0, RedefVersionRing.ticks());
        }
        return acc;
    }

    static long other(RedefVersionRing r, long seed) {
        return helperB(r, seed);
    }

    static long helperA(RedefVersionRing r, long seed) {
        r.version = 1;
        return work(seed);
    }

    static long helperB(RedefVersionRing r, long seed) {
        r.version = 2;
        return work(seed);
    }

    private static long work(long seed) {
        long x = seed | 1;
        for (int i = 0; i < WORK; i++) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
        }
        return x & 0xff;
    }
}
