package com.datadoghq.profiler.export;

import java.util.Map;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.CpuBurner;

/**
 * A child JVM's main for {@link OtlpExportTest}, profiled by {@code -javaagent ... otlp=...}.
 * Args: {@code COUNTER N MODE [FILE]}: burns CPU on this thread ("cpu-worker", inside span
 * {@link #SPAN} of root span {@link #ROOT}) until the exporter's counter COUNTER reaches N and
 * FILE, if given, exists (no wall-clock window: the child's timeout bounds it), burns a little more so that the last
 * interval has samples, then with MODE {@code stop} calls stop() (the final export) and prints
 * how long it took ({@code stop took N ms}) and the counters as {@code counter NAME=VALUE}; with {@code exit} it just returns (the shutdown
 * hook exports).
 */
public final class OtlpExportMain {
    static final long SPAN = 0x1234_5678_9abcL;
    static final long ROOT = 0x4242L;

    public static void main(String[] args) throws Exception {
        String counter = args[0];
        long until = Long.parseLong(args[1]);
        String mode = args[2];
        java.nio.file.Path waitFor = args.length > 3 ? java.nio.file.Paths.get(args[3]) : null;
        Thread.currentThread().setName("cpu-worker");
        JavaProfiler profiler = JavaProfiler.getInstance();
        profiler.setContext(SPAN, ROOT);
        while (value(profiler, counter) < until || (waitFor != null && !java.nio.file.Files.exists(waitFor))) {
            CpuBurner.burn(100);
        }
        CpuBurner.burn(300);
        profiler.clearContext();
        if (mode.equals("stop")) {
            long t0 = System.nanoTime();
            profiler.stop();
            System.out.println("stop took " + (System.nanoTime() - t0) / 1_000_000 + " ms");
            for (Map.Entry<String, Long> e : profiler.getDebugCounters().entrySet()) {
                if (e.getKey().startsWith("otlp_")) {
                    System.out.println("counter " + e.getKey() + "=" + e.getValue());
                }
            }
        }
        System.out.println("workload done");
    }

    private static long value(JavaProfiler profiler, String counter) {
        Long v = profiler.getDebugCounters().get(counter);
        return v == null ? 0 : v;
    }
}
