package com.datadoghq.profiler.perfmap;

import com.datadoghq.profiler.testing.CpuBurner;

/**
 * A child JVM's main for the perf map tests: prints its pid, then keeps the thread "perfmap-worker"
 * in {@link CpuBurner}'s chain (compiled early, then busy) for the given milliseconds of CPU time.
 */
public final class PerfMapMain {
    public static void main(String[] args) throws Exception {
        long millis = args.length > 0 ? Long.parseLong(args[0]) : 2000;
        System.out.println("pid: " + ProcessHandle.current().pid());
        Thread worker = new Thread(new CpuBurner(millis), "perfmap-worker");
        worker.start();
        worker.join();
        System.out.println("workload done: perfmap");
    }
}
