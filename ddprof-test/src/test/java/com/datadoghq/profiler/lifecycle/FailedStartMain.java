package com.datadoghq.profiler.lifecycle;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Map;
import java.util.zip.Deflater;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.CpuBurner;
import com.datadoghq.profiler.testing.TestEnv;

/**
 * A child JVM's main for {@link FailedStartTest}: a start with every source and both code maps that one
 * source fails (the test-only {@code DDPROF_TEST_START_FAIL} names it; it fails once), then JIT work with
 * nothing profiling, then the same start again, which works. The code map writes nothing in that window,
 * so the valid start's replay of the existing code is the first to name the method compiled in it. Then the
 * same work with every source running, a stop, and that work again (a method compiled for the first time
 * included): what each source counts moves while it runs and stands still after the stop. Prints what it
 * saw as {@code key: value} lines. Args: the output directory.
 */
public final class FailedStartMain {
    static final String CHAIN_C = CpuBurner.class.getName() + "::chainC(";
    static final String AFTER_STOP = FailedStartMain.class.getName() + "::firstRunAfterStop(";
    /**
     * What the sources count, from {@code getDebugCounters} (before them {@code getSamples}: CPU and wall
     * samples); {@code wallclock_ticks} are the wall sampler's rounds, with or without a thread to signal.
     */
    static final String[] COUNTED = {"wallclock_ticks", "alloc_samples", "nativemem_samples"};
    static volatile double sink;

    private FailedStartMain() {
    }

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        long pid = ProcessHandle.current().pid();
        Path map = Paths.get("/tmp/perf-" + pid + ".map");
        Path jit = dir.resolve("jit-" + pid + ".dump");
        System.out.println("pid: " + pid);
        JavaProfiler profiler = JavaProfiler.getInstance();
        String start = "start,cpu=10ms,wall=20ms,memory=256k:a,nativemem=1m,perfmap,jitdump=" + dir + ",file="
                + dir.resolve("rec.jfr");
        String failure = "none";
        try {
            profiler.execute(start);
        } catch (IllegalStateException e) {
            failure = e.getMessage();
        }
        System.out.println("failure: " + failure);
        long map0 = size(map);
        long jit0 = size(jit);
        long samples0 = JavaProfiler.getSamples();
        // Compiles chainC (it has not run before) and allocates, with nothing meant to be watching.
        CpuBurner.burn(1000);
        byte[][] garbage = new byte[512][];
        for (int i = 0; i < 64 * 1024; i++) {
            garbage[i & 511] = new byte[4096];
        }
        System.out.println("map: " + map0 + " -> " + size(map));
        System.out.println("jitdump: " + jit0 + " -> " + size(jit));
        System.out.println("samples: " + samples0 + " -> " + JavaProfiler.getSamples());
        System.out.println("running after failure: " + TestEnv.isRunning(profiler));
        System.out.println("map names chainC before the valid start: " + names(map));

        profiler.execute(start);
        System.out.println("running after valid start: " + TestEnv.isRunning(profiler));
        // The start's replay of the code that exists, chainC's included: written before it returns.
        System.out.println("map names chainC after the valid start: " + names(map));
        long[] before = counts(profiler);
        work();
        System.out.println("while running: " + show(before, counts(profiler)));

        profiler.stop();
        long mapStopped = size(map);
        long jitStopped = size(jit);
        long[] stopped = counts(profiler);
        work();
        double acc = 0;
        for (int i = 0; i < 20_000; i++) {
            acc += firstRunAfterStop(i);
        }
        sink = acc;
        System.out.println("after stop: " + show(stopped, counts(profiler)));
        System.out.println("map after stop: " + mapStopped + " -> " + size(map));
        System.out.println("jitdump after stop: " + jitStopped + " -> " + size(jit));
        System.out.println("map names a method compiled after stop: " + names(map, AFTER_STOP));
        System.out.println("workload done: failed start");
    }

    /** CPU time, Java allocations, and native ones (zlib's state, malloc'ed in libz for each Deflater). */
    private static void work() {
        CpuBurner.burn(300);
        byte[][] garbage = new byte[512][];
        for (int i = 0; i < 16 * 1024; i++) {
            garbage[i & 511] = new byte[4096];
        }
        byte[] input = new byte[4096];
        for (int i = 0; i < 200; i++) {
            Deflater d = new Deflater();
            d.setInput(input);
            d.finish();
            d.deflate(new byte[8192]);
            d.end();
        }
    }

    /** Runs for the first time after the stop: its compilation is no code map's business. */
    private static double firstRunAfterStop(int seed) {
        double r = seed;
        for (int i = 1; i < 200; i++) {
            r = r * 0.999 + 1.0 / i;
        }
        return r;
    }

    private static long[] counts(JavaProfiler profiler) {
        Map<String, Long> c = profiler.getDebugCounters();
        long[] n = new long[COUNTED.length + 1];
        n[0] = JavaProfiler.getSamples();
        for (int i = 0; i < COUNTED.length; i++) {
            n[i + 1] = c.getOrDefault(COUNTED[i], 0L);
        }
        return n;
    }

    /** {@code samples=a->b wallclock_signals_sent=a->b ...}. */
    private static String show(long[] from, long[] to) {
        StringBuilder b = new StringBuilder("samples=" + from[0] + "->" + to[0]);
        for (int i = 0; i < COUNTED.length; i++) {
            b.append(' ').append(COUNTED[i]).append('=').append(from[i + 1]).append("->").append(to[i + 1]);
        }
        return b.toString();
    }

    private static long size(Path p) throws IOException {
        return Files.exists(p) ? Files.size(p) : -1;
    }

    private static boolean names(Path map) throws IOException {
        return names(map, CHAIN_C);
    }

    private static boolean names(Path map, String method) throws IOException {
        return Files.exists(map)
                && Files.readAllLines(map, StandardCharsets.UTF_8).stream().anyMatch(l -> l.contains(method));
    }
}
