package com.datadoghq.profiler.bench;

import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLongArray;

import com.datadoghq.profiler.JavaProfiler;
import jdk.jfr.Recording;

/**
 * One measurement of {@link AllocBenchmark}, in a fresh JVM:
 * {@code AllocWorker <mode> <threads> <measureSeconds> <warmupSeconds>}. Starts the profiler of
 * {@code mode}, runs {@code threads} threads that allocate short-lived objects (a mix of arrays,
 * strings and small lists, about 300 bytes an op), and prints {@code RESULT ops=.. cpu_ns=..
 * nmt_kb=..} for the window. Modes: {@code none}; {@code ddprof[-lazy][-live]} ({@code
 * memory=524287:a}, with {@code fjmethodid=lazy}, with {@code L} liveness); {@code jfr} (a
 * recording with only {@code jdk.ObjectAllocationSample}, at its default throttle); {@code
 * asprof} (async-profiler, loaded by the parent through {@code -agentpath}: nothing to do here).
 */
public final class AllocWorker {
    private static final int SLOT = 16;
    private static volatile boolean running = true;
    private static volatile Object sink;

    private AllocWorker() {}

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        int threads = Integer.parseInt(args[1]);
        double measure = Double.parseDouble(args[2]);
        double warmup = Double.parseDouble(args[3]);
        Path dir = Files.createTempDirectory("ddprof-alloc-bench-");
        JavaProfiler ddprof = null;
        Recording jfr = null;
        if (mode.startsWith("ddprof")) {
            String flags = mode.contains("-live") ? "aL" : "a";
            String ids = mode.contains("-lazy") ? ",fjmethodid=lazy" : "";
            ddprof = JavaProfiler.getInstance();
            ddprof.execute("start,memory=524287:" + flags + ids + ",file=" + dir.resolve("p.jfr"));
        } else if (mode.equals("jfr")) {
            jfr = new Recording();
            jfr.enable("jdk.ObjectAllocationSample");
            jfr.setDestination(dir.resolve("jfr.jfr"));
            jfr.start();
        }
        AtomicLongArray ops = new AtomicLongArray(threads * SLOT);
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            final int slot = t * SLOT;
            Thread w = new Thread(() -> allocate(ops, slot), "alloc-worker-" + t);
            w.start();
            workers.add(w);
        }
        Thread.sleep((long) (warmup * 1000));
        long ops0 = sum(ops, threads);
        long cpu0 = BenchSupport.processCpuNs();
        Thread.sleep((long) (measure * 1000));
        long ops1 = sum(ops, threads);
        long cpu1 = BenchSupport.processCpuNs();
        long samples = ddprof == null ? -1 : ddprof.getDebugCounters().getOrDefault("alloc_samples", -1L);
        long nmt = nmtTotalKb();
        running = false;
        for (Thread w : workers) {
            w.join();
        }
        if (ddprof != null) {
            ddprof.stop();
        }
        if (jfr != null) {
            jfr.stop();
            jfr.close();
        }
        System.out.println("RESULT mode=" + mode + " threads=" + threads + " ops=" + (ops1 - ops0) + " cpu_ns="
                + (cpu1 - cpu0) + " samples=" + samples + " nmt_kb=" + nmt);
        BenchSupport.deleteTree(dir);
    }

    static long nmtTotalKb() {
        try {
            Map<String, Long> m = BenchSupport.nmtCommittedKb();
            return m.getOrDefault("Total", -1L);
        } catch (Exception noNmt) {
            return -1;
        }
    }

    static long sum(AtomicLongArray ops, int threads) {
        long s = 0;
        for (int t = 0; t < threads; t++) {
            s += ops.get(t * SLOT);
        }
        return s;
    }

    private static void allocate(AtomicLongArray ops, int slot) {
        Object[] ring = new Object[1024];
        long n = 0;
        while (running) {
            int i = (int) (n & 1023);
            switch ((int) (n % 3)) {
                case 0:
                    ring[i] = new byte[64 + (int) (n & 127)];
                    break;
                case 1:
                    ring[i] = Long.toString(n);
                    break;
                default:
                    // Holds nothing of the ring: chains of lists would keep every old one alive.
                    List<Object> l = new ArrayList<>(4);
                    l.add(Boolean.TRUE);
                    ring[i] = l;
                    break;
            }
            ops.lazySet(slot, ++n);
        }
        sink = ring;
    }
}
