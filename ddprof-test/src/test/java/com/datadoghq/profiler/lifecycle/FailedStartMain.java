package com.datadoghq.profiler.lifecycle;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.CpuBurner;
import com.datadoghq.profiler.testing.TestEnv;

/**
 * A child JVM's main for {@link FailedStartTest}: a start with every source and both code maps that one
 * part fails (the test-only {@code DDPROF_TEST_START_FAIL} names it; it fails once), then JIT work with
 * nothing profiling, then the same start again, which works. The code map writes nothing in that window,
 * so the valid start's replay of the existing code is the first to name the method compiled in it. Prints
 * what it saw as {@code key: value} lines. Args: the output directory.
 */
public final class FailedStartMain {
    static final String CHAIN_C = CpuBurner.class.getName() + "::chainC(";

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
        CpuBurner.burn(200);
        profiler.stop();
        System.out.println("workload done: failed start");
    }

    private static long size(Path p) throws IOException {
        return Files.exists(p) ? Files.size(p) : -1;
    }

    private static boolean names(Path map) throws IOException {
        return Files.exists(map)
                && Files.readAllLines(map, StandardCharsets.UTF_8).stream().anyMatch(l -> l.contains(CHAIN_C));
    }
}
