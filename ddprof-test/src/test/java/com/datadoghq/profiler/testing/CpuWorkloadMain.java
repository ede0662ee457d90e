package com.datadoghq.profiler.testing;

/**
 * A child JVM's main: runs {@link CpuBurner} on a thread named "cpu-worker" for the given
 * number of milliseconds (default 2000), then returns normally so the JVM exits.
 */
public final class CpuWorkloadMain {
    public static void main(String[] args) throws Exception {
        long millis = args.length > 0 ? Long.parseLong(args[0]) : 2000;
        Thread worker = new Thread(new CpuBurner(millis), "cpu-worker");
        worker.start();
        worker.join();
        System.out.println("workload done");
    }
}
