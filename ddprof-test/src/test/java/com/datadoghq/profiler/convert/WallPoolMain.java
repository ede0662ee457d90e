package com.datadoghq.profiler.convert;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.locks.LockSupport;

import com.datadoghq.profiler.JavaProfiler;

/**
 * A child JVM's main for {@link WallSubsamplingTest}: args THREADS, PER_TICK, the recording. That
 * many threads add themselves to the wall filter and park; wall sampling at 20 ms with
 * {@code walltpt=PER_TICK} runs for 3 s; nothing else of the JVM is in the filter.
 */
public final class WallPoolMain {
    private static volatile boolean stop;

    public static void main(String[] args) throws Exception {
        int threads = Integer.parseInt(args[0]);
        int perTick = Integer.parseInt(args[1]);
        JavaProfiler profiler = JavaProfiler.getInstance();
        CountDownLatch registered = new CountDownLatch(threads);
        List<Thread> parked = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            Thread t = new Thread(() -> {
                profiler.addThread();
                registered.countDown();
                while (!stop) {
                    LockSupport.parkNanos(5_000_000L);
                }
            }, "wall-pool-" + i);
            t.start();
            parked.add(t);
        }
        registered.await();
        System.out.println(profiler.execute("start,wall=20ms,walltpt=" + perTick + ",file=" + args[2]).trim());
        Thread.sleep(3000);
        profiler.stop();
        stop = true;
        for (Thread t : parked) {
            t.join();
        }
        System.out.println("workload done");
    }
}
