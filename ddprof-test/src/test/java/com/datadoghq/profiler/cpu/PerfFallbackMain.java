package com.datadoghq.profiler.cpu;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Map;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.CpuBurner;

/**
 * A child JVM's main for {@link PerfEventsTest}, run with perf_event_open made to fail
 * ({@code DDPROF_TEST_PERF_OPEN_ERRNO}) or its ring buffers refused ({@code DDPROF_TEST_PERF_RING}). Args: the output directory, then one command per
 * session (without {@code start} and {@code file}). Session {@code i} writes {@code s<i>.jfr},
 * its start reply to {@code s<i>.reply}, {@code getStatus()} while running to {@code s<i>.status}
 * and prints its counters as {@code counter s<i> <name>=<value>}; each runs {@link CpuBurner} for
 * 600 ms of CPU on the thread "cpu-worker" and prints that thread's CPU time as
 * {@code cpu s<i> <ns>}.
 */
public final class PerfFallbackMain {
    private static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        JavaProfiler profiler = JavaProfiler.getInstance();
        for (int i = 1; i < args.length; i++) {
            String name = "s" + i;
            String reply = profiler.execute("start," + args[i] + ",file=" + dir.resolve(name + ".jfr"));
            Files.write(dir.resolve(name + ".reply"), reply.getBytes(StandardCharsets.UTF_8));
            long[] cpuNs = new long[1];
            Thread t = new Thread(() -> {
                long before = MX.getCurrentThreadCpuTime();
                new CpuBurner(600).run();
                cpuNs[0] = MX.getCurrentThreadCpuTime() - before;
            }, "cpu-worker");
            t.start();
            t.join();
            System.out.println("cpu " + name + " " + cpuNs[0]);
            Files.write(dir.resolve(name + ".status"), profiler.getStatus().getBytes(StandardCharsets.UTF_8));
            for (Map.Entry<String, Long> e : profiler.getDebugCounters().entrySet()) {
                System.out.println("counter " + name + " " + e.getKey() + "=" + e.getValue());
            }
            profiler.stop();
        }
        System.out.println("workload done");
    }
}
