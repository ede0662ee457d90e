package com.datadoghq.profiler.testing;

/**
 * CPU-bound methods with distinct names, so that a test can tell from a sample which
 * phase of the test it was taken in.
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

    private static double spin(long millis) {
        long deadline = System.nanoTime() + millis * 1_000_000L;
        double r = 1.0;
        do {
            for (int i = 1; i < 10_000; i++) {
                r = r * 0.999999 + 1.0 / i;
            }
        } while (System.nanoTime() < deadline);
        return r;
    }
}
