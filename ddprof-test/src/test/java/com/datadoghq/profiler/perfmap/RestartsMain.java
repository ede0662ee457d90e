package com.datadoghq.profiler.perfmap;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.CpuBurner;

/**
 * A child JVM's main for the code map tests: prints its pid, leaves a stale line in
 * {@code /tmp/perf-<pid>.map} (as a dead process with the same pid would), then starts and stops
 * the profiler {@code args[1]} times, burning CPU in {@link CpuBurner} while it runs. The options of
 * each start are {@code args[2]}'s alternatives ({@code |}-separated) in turn. Args: the output
 * directory, the number of starts, the options.
 */
public final class RestartsMain {
    public static final String STALE = "dead 10 Stale::line()V";

    private RestartsMain() {
    }

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        int starts = Integer.parseInt(args[1]);
        String[] options = args[2].split("\\|");
        long pid = ProcessHandle.current().pid();
        System.out.println("pid: " + pid);
        Files.write(Paths.get("/tmp/perf-" + pid + ".map"), (STALE + "\n").getBytes(StandardCharsets.UTF_8));
        JavaProfiler profiler = JavaProfiler.getInstance();
        for (int i = 0; i < starts; i++) {
            profiler.execute("start,cpu=10ms," + options[i % options.length] + ",file=" + dir.resolve("rec.jfr"));
            CpuBurner.burn(100);
            profiler.stop();
        }
        System.out.println("workload done: restarts");
    }
}
