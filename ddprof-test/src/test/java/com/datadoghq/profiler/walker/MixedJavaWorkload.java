package com.datadoghq.profiler.walker;

/**
 * A CPU-bound, pure-arithmetic workload with stack shapes that a Java stack walker must get
 * right: deep recursion ({@link #descend}, {@value #DEPTH} levels), a megamorphic interface call
 * ({@link Op} with four implementations, called at one site with all four receivers) and small
 * static helpers ({@link #mix}, {@link #fold}) that C2 inlines. No intrinsics (Math.sin and the
 * like), no allocation in the loop, no blocking.
 */
public final class MixedJavaWorkload implements Runnable {
    public static final int DEPTH = 200;

    /** Keeps the results alive so the JIT cannot drop the work. */
    public static volatile long sink;

    /**
     * Work per call of an {@link Op}, so that most time is spent in its body rather than in the
     * dispatch stub or the callee's prologue and epilogue, where AsyncGetCallTrace cannot walk
     * (those samples would not be compared).
     */
    static final int WORK = 32;

    /** The megamorphic call: every {@link #leaf} calls {@code run} on all four implementations. */
    public interface Op {
        long run(long x);
    }

    public static final class AddOp implements Op {
        @Override
        public long run(long x) {
            long r = x;
            for (int i = 0; i < WORK; i++) {
                r = mix(r, 0x9E3779B97F4A7C15L);
            }
            return r;
        }
    }

    public static final class XorOp implements Op {
        @Override
        public long run(long x) {
            long r = x;
            for (int i = 0; i < WORK; i++) {
                r = fold(r ^ 0x632BE59BD9B4E019L);
            }
            return r;
        }
    }

    public static final class MulOp implements Op {
        @Override
        public long run(long x) {
            long r = x;
            for (int i = 0; i < WORK; i++) {
                r = r * 0x5851F42D4C957F2DL + i;
            }
            return r;
        }
    }

    public static final class ShiftOp implements Op {
        @Override
        public long run(long x) {
            long r = x;
            for (int i = 0; i < WORK; i++) {
                r = mix(r >>> 7, r << 3);
            }
            return r;
        }
    }

    private static final Op[] OPS = {new AddOp(), new XorOp(), new MulOp(), new ShiftOp()};

    private final long durationNanos;
    private volatile boolean stopped;

    /** Runs until {@link #stop()}. */
    public MixedJavaWorkload() {
        this.durationNanos = Long.MAX_VALUE;
    }

    public MixedJavaWorkload(long durationMillis) {
        this.durationNanos = durationMillis * 1_000_000L;
    }

    public void stop() {
        stopped = true;
    }

    @Override
    public void run() {
        long start = System.nanoTime();
        long acc = 0;
        long seed = Thread.currentThread().getId();
        while (!stopped && System.nanoTime() - start < durationNanos) {
            acc += descend(DEPTH, seed++);
        }
        sink = acc;
    }

    /** Recursive descent: each level does a little work, the bottom does most of it. */
    public static long descend(int depth, long x) {
        if (depth == 0) {
            return leaf(x);
        }
        long r = descend(depth - 1, mix(x, depth));
        if ((depth & 15) == 0) {
            r += level(r, depth);
        }
        return fold(r);
    }

    /** A bit of arithmetic every 16 levels of the recursion. */
    public static long level(long x, int depth) {
        long r = x;
        for (int i = 0; i < 200; i++) {
            r = mix(r, i + depth);
        }
        return r;
    }

    /** The bottom of the recursion: the megamorphic call site in a loop. */
    public static long leaf(long x) {
        long r = x;
        Op[] ops = OPS;
        for (int i = 0; i < 500; i++) {
            r = ops[(int) (r & 3)].run(r) + i;
        }
        return r;
    }

    /** Small: C2 inlines it. */
    public static long mix(long a, long b) {
        long h = a * 31 + b;
        return h ^ (h >>> 29);
    }

    /** Small: C2 inlines it. */
    public static long fold(long x) {
        return x + (x << 5) - (x >>> 3);
    }
}
