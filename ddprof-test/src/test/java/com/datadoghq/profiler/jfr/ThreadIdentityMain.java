package com.datadoghq.profiler.jfr;

import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.locks.LockSupport;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.CpuBudget;
import com.datadoghq.profiler.testing.CpuBurner;

/**
 * A child JVM's main for {@link ThreadIdentityTest}: a thread that exists before the library
 * loads ({@code early-worker}, started before {@code getInstance}) and a thread renamed after
 * it started ({@code phase-one}, renamed {@code phase-two} by itself between a dump and the
 * stop). Both register with {@code addThread()} and, in each of two phases, burn CPU and park,
 * under {@code cpu} and {@code wall} with the filter on. Args: the dump file, the main file.
 * Prints the threads' Java ids.
 */
public final class ThreadIdentityMain {
    /** CPU and park time of each thread in each phase. */
    static final long PHASE_MS = 300;

    static volatile JavaProfiler profiler;

    static void work() {
        for (CpuBudget b = CpuBudget.of(PHASE_MS); b.left(); ) {
            CpuBurner.chainA(System.nanoTime());
        }
        long end = System.nanoTime() + PHASE_MS * 1_000_000L;
        for (long left; (left = end - System.nanoTime()) > 0; ) {
            LockSupport.parkNanos(left);
        }
    }

    public static void main(String[] args) throws Exception {
        String dump = args[0];
        String file = args[1];
        // Main and both workers meet at each phase boundary.
        CyclicBarrier started = new CyclicBarrier(3);
        CyclicBarrier phaseOne = new CyclicBarrier(3);
        CyclicBarrier dumped = new CyclicBarrier(3);
        CyclicBarrier phaseTwo = new CyclicBarrier(3);
        Thread early = new Thread(() -> body(started, phaseOne, dumped, phaseTwo, false), "early-worker");
        early.start();
        profiler = JavaProfiler.getInstance();
        Thread renamed = new Thread(() -> body(started, phaseOne, dumped, phaseTwo, true), "phase-one");
        renamed.start();
        System.out.println(profiler.execute("start,cpu=5ms,wall=5ms,filter=0,file=" + file));
        System.out.println("early=" + early.getId() + " renamed=" + renamed.getId());
        started.await();
        phaseOne.await();
        profiler.dump(java.nio.file.Paths.get(dump));
        dumped.await();
        phaseTwo.await();
        profiler.stop();
        early.join();
        renamed.join();
        System.out.println("done");
    }

    private static void body(CyclicBarrier started, CyclicBarrier phaseOne, CyclicBarrier dumped,
            CyclicBarrier phaseTwo, boolean rename) {
        try {
            started.await();
            profiler.addThread();
            work();
            phaseOne.await();
            dumped.await();
            if (rename) {
                Thread.currentThread().setName("phase-two");
            }
            work();
            phaseTwo.await();
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
    }
}
