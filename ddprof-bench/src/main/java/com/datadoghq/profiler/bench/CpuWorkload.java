package com.datadoghq.profiler.bench;

/**
 * The CPU-bound operation the overhead benchmark repeats: about 50 µs of pure integer arithmetic
 * per {@link #op} on a current x86-64 core, spread over a call chain 15-20 Java frames deep.
 *
 * <p>Only arithmetic: no allocation, no locks, no intrinsics (no {@code Math.sin} and friends,
 * whose stubs AsyncGetCallTrace cannot walk), so every sample lands in walkable Java frames and
 * what a profiler costs shows up as lost work per CPU-second and nothing else. Four distinct
 * methods recurse into each other so that the stacks have several different frames and the
 * JIT cannot fold the chain into one compiled body (C2 inlines a recursive call only one level).
 *
 * <p>The amount of work per operation is fixed ({@link #LEVELS}, {@link #LEVEL_ITERS},
 * {@link #LEAF_ITERS}) so that every measured JVM does exactly the same work per op; the
 * benchmark prints the measured µs/op of its baseline runs.
 */
final class CpuWorkload {
    /** Recursion depth of the call chain (each level is one Java frame). */
    static final int LEVELS = 12;
    /** Mixing rounds done at each level on the way down. */
    static final int LEVEL_ITERS = Integer.getInteger("bench.levelIters", 500);
    /** Mixing rounds done in the innermost frame. */
    static final int LEAF_ITERS = Integer.getInteger("bench.leafIters", 12_500);

    private CpuWorkload() {
    }

    /** One operation: roughly 50 µs of arithmetic under a chain of {@link #LEVELS} frames. */
    static long op(long seed) {
        return levelA(seed, LEVELS);
    }

    private static long levelA(long x, int depth) {
        long h = mix(x, LEVEL_ITERS);
        return depth == 0 ? leaf(h) : levelB(h, depth - 1) ^ (h >>> 3);
    }

    private static long levelB(long x, int depth) {
        long h = mix(x + 0x632BE59BD9B4E019L, LEVEL_ITERS);
        return depth == 0 ? leaf(h) : levelC(h, depth - 1) + (h << 1);
    }

    private static long levelC(long x, int depth) {
        long h = mix(x ^ 0x8CB92BA72F3D8DD7L, LEVEL_ITERS);
        return depth == 0 ? leaf(h) : levelD(h, depth - 1) - h;
    }

    private static long levelD(long x, int depth) {
        long h = mix(x * 31 + 7, LEVEL_ITERS);
        return depth == 0 ? leaf(h) : levelA(h, depth - 1) ^ (h << 7);
    }

    private static long leaf(long x) {
        return mix(x, LEAF_ITERS);
    }

    /** xorshift plus a multiply per round: a loop-carried dependency chain nothing can vectorise. */
    static long mix(long x, int rounds) {
        long h = x | 1;
        for (int i = 0; i < rounds; i++) {
            h ^= h << 13;
            h ^= h >>> 7;
            h ^= h << 17;
            h += (h * 0x9E3779B97F4A7C15L) ^ i;
        }
        return h;
    }
}
