package com.datadoghq.profiler.memory;

import java.nio.file.Files;
import java.nio.file.Paths;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.CpuBurner;

/**
 * A child JVM's profiled workload for the native-memory tests that need their own process
 * (an allocator preloaded with {@code LD_PRELOAD}). Args: the recording file, a dump file,
 * the workload milliseconds. Prints {@code allocator-mapped=<file>} for every mapped file
 * whose name has "malloc" in it (so that the test can tell the preload took effect), and
 * {@code samples=N}.
 */
public final class NativeMemoryMain {
    public static void main(String[] args) throws Exception {
        String file = args[0];
        String dump = args[1];
        long millis = Long.parseLong(args[2]);
        for (String line : Files.readAllLines(Paths.get("/proc/self/maps"))) {
            int slash = line.indexOf('/');
            if (slash >= 0 && line.contains("malloc")) {
                System.out.println("allocator-mapped=" + line.substring(slash));
            }
        }
        JavaProfiler profiler = JavaProfiler.getInstance();
        System.out.println(profiler.execute("start,cpu=1ms,file=" + file));
        Thread[] workers = new Thread[3];
        for (int i = 0; i < workers.length; i++) {
            workers[i] = new Thread(new CpuBurner(millis), "mem-worker-" + i);
            workers[i].start();
        }
        Thread.sleep(millis / 2);
        profiler.dump(Paths.get(dump));
        for (Thread w : workers) {
            w.join();
        }
        profiler.stop();
        System.out.println("samples=" + JavaProfiler.getSamples());
    }
}
