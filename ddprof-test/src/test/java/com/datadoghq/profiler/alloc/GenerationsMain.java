package com.datadoghq.profiler.alloc;

import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import com.datadoghq.profiler.JavaProfiler;

/**
 * A child JVM's main for {@link GenerationsTest}. Args: the output directory, the profiler
 * options (without {@code start} and {@code file}), the bytes to retain, the size of each
 * retained array. Starts the profiler, retains the arrays on the thread {@code gen-keeper}
 * ({@link #retain}), then: {@code System.gc()}, dump {@code first.jfr}, two more GCs, dump
 * {@code second.jfr}, stop ({@code last.jfr}). Prints the start's reply, the counters before
 * the stop ({@code counter name=value}) and {@code workload done}.
 */
public final class GenerationsMain {
    /** What {@link #retain} keeps alive until the process exits. */
    static final List<byte[]> KEPT = new ArrayList<>();

    private GenerationsMain() {}

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        String options = args[1];
        long bytes = Long.parseLong(args[2]);
        int size = Integer.parseInt(args[3]);
        JavaProfiler profiler = JavaProfiler.getInstance();
        System.out.println("reply " + profiler.execute("start," + options + ",file=" + dir.resolve("last.jfr")).trim());
        Thread keeper = new Thread(() -> retain(bytes, size), "gen-keeper");
        keeper.start();
        keeper.join();
        System.gc();
        profiler.dump(dir.resolve("first.jfr"));
        System.gc();
        System.gc();
        profiler.dump(dir.resolve("second.jfr"));
        Map<String, Long> counters = profiler.getDebugCounters();
        profiler.stop();
        counters.forEach((k, v) -> System.out.println("counter " + k + "=" + v));
        System.out.println("retained " + KEPT.size());
        System.out.println("workload done");
    }

    static void retain(long bytes, int size) {
        for (long done = 0; done < bytes; done += size) {
            KEPT.add(new byte[size]);
        }
    }
}
