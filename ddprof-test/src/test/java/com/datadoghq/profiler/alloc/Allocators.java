package com.datadoghq.profiler.alloc;

import java.lang.management.ManagementFactory;

/**
 * Named allocating methods for the allocation tests, each called through a named caller so a
 * stack's call order can be checked, and the bytes each really allocated, from the JVM's own
 * per-thread allocation counter ({@code com.sun.management.ThreadMXBean}).
 */
public final class Allocators {
    /** Keeps the JIT from removing the allocations. */
    public static volatile Object sink;

    private Allocators() {}

    public static void intsCaller(long bytes) {
        allocInts(bytes);
    }

    /** {@code int[256]} (1 KiB and a header) until {@code bytes} were allocated. */
    public static void allocInts(long bytes) {
        for (long done = 0; done < bytes; done += 1040) {
            sink = new int[256];
        }
    }

    public static void integersCaller(long bytes) {
        allocIntegers(bytes);
    }

    /** {@code Integer[64]} (272 bytes with compressed oops) until {@code bytes} were allocated. */
    public static void allocIntegers(long bytes) {
        for (long done = 0; done < bytes; done += 272) {
            sink = new Integer[64];
        }
    }

    /** Bytes this thread allocated so far (its TLAB refills and outside-TLAB allocations). */
    public static long allocatedByThisThread() {
        com.sun.management.ThreadMXBean bean = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        return bean.getThreadAllocatedBytes(Thread.currentThread().getId());
    }

    /** Runs {@code work} and returns the bytes the calling thread allocated meanwhile. */
    public static long measure(Runnable work) {
        long before = allocatedByThisThread();
        work.run();
        return allocatedByThisThread() - before;
    }
}
