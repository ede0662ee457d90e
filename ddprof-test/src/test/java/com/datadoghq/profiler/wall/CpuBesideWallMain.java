package com.datadoghq.profiler.wall;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLongArray;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.CpuBurner;

/**
 * A child JVM's main for {@link WallOnThrottledHostTest}: a CPU-bound service. Args: the profiler
 * command (with {@code start} and {@code file}), the number of workers, the CPU milliseconds each
 * burns ({@link CpuBurner}, on threads "busy-0", "busy-1", ...), and whether the first worker
 * registers itself for wall sampling ({@code addThread}). Prints {@code cpuNanos=} (the workers'
 * CPU time while profiled, summed), {@code wallNanos=} (their wall time, summed) and
 * {@code counter <name>=<value>} for the profiler's counters after the stop.
 */
public final class CpuBesideWallMain {
    public static void main(String[] args) throws Exception {
        String command = args[0];
        int workers = Integer.parseInt(args[1]);
        long millis = Long.parseLong(args[2]);
        boolean register = Boolean.parseBoolean(args[3]);
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        JavaProfiler profiler = JavaProfiler.getInstance();
        AtomicLongArray cpu = new AtomicLongArray(workers);
        AtomicLongArray wall = new AtomicLongArray(workers);
        Thread[] threads = new Thread[workers];
        System.out.println(profiler.execute(command));
        for (int i = 0; i < workers; i++) {
            int index = i;
            threads[i] = new Thread(() -> {
                if (register && index == 0) {
                    profiler.addThread();
                }
                long c0 = mx.getCurrentThreadCpuTime();
                long w0 = System.nanoTime();
                CpuBurner.burn(millis);
                cpu.set(index, mx.getCurrentThreadCpuTime() - c0);
                wall.set(index, System.nanoTime() - w0);
            }, "busy-" + i);
            threads[i].start();
        }
        for (Thread t : threads) {
            t.join();
        }
        profiler.stop();
        long cpuSum = 0;
        long wallSum = 0;
        for (int i = 0; i < workers; i++) {
            cpuSum += cpu.get(i);
            wallSum += wall.get(i);
        }
        System.out.println("cpuNanos=" + cpuSum);
        System.out.println("wallNanos=" + wallSum);
        for (Map.Entry<String, Long> e : profiler.getDebugCounters().entrySet()) {
            System.out.println("counter " + e.getKey() + "=" + e.getValue());
        }
        System.out.println("workload done");
    }
}
