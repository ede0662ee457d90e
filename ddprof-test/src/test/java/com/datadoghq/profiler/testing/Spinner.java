package com.datadoghq.profiler.testing;

/**
 * CPU-bound methods with distinct names, so that a test can tell from a sample which
 * phase of the test it was taken in. Each spins for the given milliseconds of the calling
 * thread's own CPU time, not of wall time: on a busy host a wall-time spin may get almost no
 * CPU, and then no sample (at most a minute of wall time, so that a starved test still ends).
 */
public final class Spinner {
    public static volatile double sink;

    private Spinner() {}

    public static void firstPeriod(long millis) {
        sink += spin(millis);
    }

    public static void secondPeriod(long millis) {
        sink += spin(millis);
    }

    public static void withContext(long millis) {
        sink += spin(millis);
    }

    public static void withoutContext(long millis) {
        sink += spin(millis);
    }

    public static void shortLived(long millis) {
        sink += spin(millis);
    }

    private static final java.lang.management.ThreadMXBean MX = java.lang.management.ManagementFactory.getThreadMXBean();

    private static double spin(long millis) {
        long cpuEnd = MX.getCurrentThreadCpuTime() + millis * 1_000_000L;
        long wallEnd = System.nanoTime() + Math.max(60_000L, millis) * 1_000_000L;
        double r = 1.0;
        do {
            for (int i = 1; i < 10_000; i++) {
                r = r * 0.999999 + 1.0 / i;
            }
        } while (MX.getCurrentThreadCpuTime() < cpuEnd && System.nanoTime() < wallEnd);
        return r;
    }
}
