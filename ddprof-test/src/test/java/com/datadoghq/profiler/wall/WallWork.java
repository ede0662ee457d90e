package com.datadoghq.profiler.wall;

import java.util.concurrent.locks.LockSupport;

/**
 * Workloads that spend wall time without CPU, each in a method of its own so samples can be told
 * apart by stack, each returning the wall time (ms) it really spent blocked as measured here.
 */
final class WallWork {
    private WallWork() {}

    /** Parks (LockSupport.parkNanos) until {@code millis} of wall time have passed. */
    static long park(long millis) {
        long start = System.nanoTime();
        long end = start + millis * 1_000_000L;
        for (long left; (left = end - System.nanoTime()) > 0; ) {
            LockSupport.parkNanos(left);
        }
        return (System.nanoTime() - start) / 1_000_000L;
    }

    /** Thread.sleep for {@code millis}. */
    static long sleep(long millis) {
        long start = System.nanoTime();
        long end = start + millis * 1_000_000L;
        try {
            for (long left; (left = end - System.nanoTime()) > 0; ) {
                Thread.sleep(Math.max(1, left / 1_000_000L));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return (System.nanoTime() - start) / 1_000_000L;
    }

    /** Object.wait on a monitor nobody notifies, for {@code millis}. */
    static long waitOn(long millis) {
        Object monitor = new Object();
        long start = System.nanoTime();
        long end = start + millis * 1_000_000L;
        synchronized (monitor) {
            try {
                for (long left; (left = end - System.nanoTime()) > 0; ) {
                    monitor.wait(Math.max(1, left / 1_000_000L));
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        return (System.nanoTime() - start) / 1_000_000L;
    }

    /**
     * Blocks entering {@code monitor}, which another thread holds (contended); returns the wall
     * time spent blocked.
     */
    static long enterContended(Object monitor) {
        long start = System.nanoTime();
        synchronized (monitor) {
            return (System.nanoTime() - start) / 1_000_000L;
        }
    }
}
