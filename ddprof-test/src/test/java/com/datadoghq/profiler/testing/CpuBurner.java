package com.datadoghq.profiler.testing;

/**
 * A CPU-bound workload with a known call chain: {@code run() -> chainA() -> chainB() -> chainC()},
 * where nearly all time is spent in the arithmetic loop of {@code chainC}. Samples of a thread
 * running it should show chainC, chainB, chainA in that order from the leaf. A finite run lasts
 * {@code durationMillis} of the thread's own CPU time ({@link CpuBudget}), so a loaded host delays
 * the end instead of taking samples away.
 */
public final class CpuBurner implements Runnable {
    /** Keeps the results alive so the JIT cannot drop the work. */
    public static volatile double sink;

    private final long durationMillis;
    private volatile boolean stopped;

    /** Runs until {@link #stop()}. */
    public CpuBurner() {
        this(Long.MAX_VALUE);
    }

    public CpuBurner(long durationMillis) {
        this.durationMillis = durationMillis;
    }

    public void stop() {
        stopped = true;
    }

    @Override
    public void run() {
        CpuBudget budget = durationMillis == Long.MAX_VALUE ? null : CpuBudget.of(durationMillis);
        double acc = 0;
        int n = 0;
        while (!stopped && (budget == null || budget.left())) {
            acc += chainA(n++ & 1023);
        }
        sink = acc;
    }

    public static double chainA(double seed) {
        return chainB(seed * 0.5 + 1.0) * 0.25;
    }

    public static double chainB(double x) {
        return chainC(x) + 1.0;
    }

    public static double chainC(double x) {
        double r = x;
        for (int i = 1; i < 100_000; i++) {
            r = r * 0.999999 + 1.0 / i;
        }
        return r;
    }

    /** Burns CPU on the calling thread for {@code millis}. */
    public static void burn(long millis) {
        new CpuBurner(millis).run();
    }
}
