package com.datadoghq.profiler;

/**
 * The package-private park/block hooks of {@link JavaProfiler}, for tests in other packages: the
 * instrumentation that calls them lives in this package in a tracer, so the hooks stay non-public.
 */
public final class OwnedBlockHooks {
    /** HotSpot's OSThread state of {@code Thread.sleep}, the one {@code blockEnter} follows. */
    public static final int SLEEPING = 7;

    private OwnedBlockHooks() {}

    public static long blockEnter(JavaProfiler profiler, int state) {
        return profiler.blockEnter(state);
    }

    public static void blockExit(JavaProfiler profiler, long token) {
        profiler.blockExit(token);
    }

    public static void parkEnter(JavaProfiler profiler) {
        profiler.parkEnter();
    }

    public static void parkExit(JavaProfiler profiler) {
        profiler.parkExit(0L, 0L);
    }
}
