package com.datadoghq.profiler.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.zip.Deflater;
import java.util.zip.Inflater;

import com.datadoghq.profiler.JavaProfiler;

/**
 * One measurement of {@code AllocBenchmark -Dworkload=nativemem}, in a fresh JVM:
 * {@code NativeMemWorker <mode> <threads> <measureSeconds> <warmupSeconds>}. {@code threads}
 * threads compress and inflate 512 bytes with a fresh {@link Deflater}/{@link Inflater} an op:
 * zlib's state comes from {@code malloc} and goes back with {@code end()}, a few blocks of
 * 5-256 KiB an op, plus the small ones of the JDK's own code. Prints {@code RESULT ops=..
 * cpu_ns=.. samples=.. nmt_kb=..}. Modes: {@code none}; {@code ddprof} ({@code nativemem}: every
 * allocation) and {@code ddprof-1m} ({@code nativemem=1m}); {@code asprof[-1m]} (loaded by the
 * parent through {@code -agentpath}).
 */
public final class NativeMemWorker {
    private static final int SLOT = 16;
    private static volatile boolean running = true;
    private static volatile long sink;

    private NativeMemWorker() {}

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        int threads = Integer.parseInt(args[1]);
        double measure = Double.parseDouble(args[2]);
        double warmup = Double.parseDouble(args[3]);
        Path dir = Files.createTempDirectory("ddprof-nativemem-bench-");
        JavaProfiler ddprof = null;
        if (mode.startsWith("ddprof")) {
            ddprof = JavaProfiler.getInstance();
            String interval = mode.endsWith("-1m") ? "=1m" : "";
            ddprof.execute("start,nativemem" + interval + ",file=" + dir.resolve("p.jfr"));
        }
        AtomicLongArray ops = new AtomicLongArray(threads * SLOT);
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            final int slot = t * SLOT;
            Thread w = new Thread(() -> compress(ops, slot), "nativemem-worker-" + t);
            w.start();
            workers.add(w);
        }
        Thread.sleep((long) (warmup * 1000));
        long ops0 = AllocWorker.sum(ops, threads);
        long cpu0 = BenchSupport.processCpuNs();
        Thread.sleep((long) (measure * 1000));
        long ops1 = AllocWorker.sum(ops, threads);
        long cpu1 = BenchSupport.processCpuNs();
        long samples = ddprof == null ? -1 : ddprof.getDebugCounters().getOrDefault("nativemem_samples", -1L);
        long nmt = AllocWorker.nmtTotalKb();
        running = false;
        for (Thread w : workers) {
            w.join();
        }
        if (ddprof != null) {
            ddprof.stop();
        }
        System.out.println("RESULT mode=" + mode + " threads=" + threads + " ops=" + (ops1 - ops0) + " cpu_ns="
                + (cpu1 - cpu0) + " samples=" + samples + " nmt_kb=" + nmt);
        BenchSupport.deleteTree(dir);
    }

    private static void compress(AtomicLongArray ops, int slot) {
        byte[] input = new byte[512];
        for (int i = 0; i < input.length; i++) {
            input[i] = (byte) (i * 31 % 17);
        }
        byte[] packed = new byte[1024];
        byte[] back = new byte[512];
        long n = 0;
        long s = 0;
        while (running) {
            Deflater d = new Deflater();
            d.setInput(input);
            d.finish();
            int len = d.deflate(packed);
            d.end();
            Inflater inf = new Inflater();
            inf.setInput(packed, 0, len);
            try {
                s += inf.inflate(back);
            } catch (java.util.zip.DataFormatException e) {
                throw new IllegalStateException(e);
            }
            inf.end();
            ops.lazySet(slot, ++n);
        }
        sink = s;
    }
}
