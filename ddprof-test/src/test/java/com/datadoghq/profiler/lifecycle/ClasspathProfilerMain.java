package com.datadoghq.profiler.lifecycle;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.CpuBurner;

/**
 * A child JVM's main for a user who has only the ddprof jar on the class path:
 * {@code JavaProfiler.getInstance()} must find and load the bundled native library by itself.
 * Args: the recording file, then the workload milliseconds.
 */
public final class ClasspathProfilerMain {
    public static void main(String[] args) throws Exception {
        String file = args[0];
        long millis = args.length > 1 ? Long.parseLong(args[1]) : 2000;
        JavaProfiler profiler = JavaProfiler.getInstance();
        System.out.println(profiler.execute("start,cpu=10ms,file=" + file));
        Thread worker = new Thread(new CpuBurner(millis), "cpu-worker");
        worker.start();
        worker.join();
        profiler.stop();
        System.out.println("samples=" + JavaProfiler.getSamples());
    }
}
