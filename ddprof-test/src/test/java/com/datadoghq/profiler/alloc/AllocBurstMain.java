package com.datadoghq.profiler.alloc;

import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Map;

import com.datadoghq.profiler.JavaProfiler;

/**
 * A child JVM's main for {@link AllocationBurstTest}. Args: the output directory, the profiler options
 * (without {@code start} and {@code file}), the number of threads, the bytes each allocates. Starts the
 * profiler into {@code burst.jfr}, runs the threads {@code burst-0..N-1} at once, each allocating
 * through {@link Allocators#intsCaller} and measuring what it really allocated, then stops. Prints the
 * start's reply, {@code allocated THREAD BYTES} per thread, the counters before the stop
 * ({@code counter name=value}) and {@code workload done}.
 */
public final class AllocBurstMain {
    private AllocBurstMain() {}

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        String options = args[1];
        int threads = Integer.parseInt(args[2]);
        long bytes = Long.parseLong(args[3]);
        JavaProfiler profiler = JavaProfiler.getInstance();
        System.out.println("reply " + profiler.execute("start," + options + ",file=" + dir.resolve("burst.jfr")).trim());
        long[] allocated = new long[threads];
        Thread[] workers = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            int slot = i;
            workers[i] = new Thread(() -> allocated[slot] = Allocators.measure(() -> Allocators.intsCaller(bytes)),
                    "burst-" + i);
        }
        for (Thread t : workers) {
            t.start();
        }
        for (Thread t : workers) {
            t.join();
        }
        Map<String, Long> counters = profiler.getDebugCounters();
        profiler.stop();
        for (int i = 0; i < threads; i++) {
            System.out.println("allocated burst-" + i + " " + allocated[i]);
        }
        counters.forEach((k, v) -> System.out.println("counter " + k + "=" + v));
        System.out.println("workload done");
    }
}
