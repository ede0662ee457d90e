package com.datadoghq.profiler.lazy;

import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Map;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.CpuBurner;

/**
 * A child JVM's main for {@link LazyKeptNamesTest}. Arg: the output directory. Starts
 * {@code fjmethodid=lazy} at {@code cpu=1ms}, burns CPU in {@link CpuBurner}'s chain, dumps
 * {@code dump-1.jfr}, burns again, prints the counters as {@code first name=value}, dumps
 * {@code dump-2.jfr}, prints them as {@code second name=value}, then stops.
 */
public final class LazyKeptMain {
    private LazyKeptMain() {
    }

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        JavaProfiler profiler = JavaProfiler.getInstance();
        System.out.print(profiler.execute("start,cpu=1ms,fjmethodid=lazy,file=" + dir.resolve("main.jfr")));
        CpuBurner.burn(700);
        profiler.dump(dir.resolve("dump-1.jfr"));
        print("first", profiler.getDebugCounters());
        CpuBurner.burn(700);
        profiler.dump(dir.resolve("dump-2.jfr"));
        print("second", profiler.getDebugCounters());
        profiler.stop();
        System.out.println("workload done");
    }

    private static void print(String when, Map<String, Long> counters) {
        for (Map.Entry<String, Long> e : counters.entrySet()) {
            System.out.println(when + " " + e.getKey() + "=" + e.getValue());
        }
    }
}
