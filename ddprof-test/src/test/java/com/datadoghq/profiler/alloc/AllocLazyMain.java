package com.datadoghq.profiler.alloc;

import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Map;

import com.datadoghq.profiler.JavaProfiler;

/**
 * A child JVM's main for {@link AllocationLazyModeTest}. Arg: the output directory. Allocation
 * profiling alone under {@code fjmethodid=lazy}: allocates in {@link Allocators}, prints the
 * counters before the recording is written ({@code before name=value}), stops, prints them again
 * ({@code after name=value}).
 */
public final class AllocLazyMain {
    private AllocLazyMain() {}

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        JavaProfiler profiler = JavaProfiler.getInstance();
        System.out.print(profiler.execute("start,memory=262144:a,fjmethodid=lazy,file=" + dir.resolve("lazy.jfr")));
        Thread t = new Thread(() -> {
            Allocators.intsCaller(96L << 20);
            Allocators.integersCaller(48L << 20);
        }, "lazy-allocator");
        t.start();
        t.join();
        print("before", profiler.getDebugCounters());
        profiler.stop();
        print("after", profiler.getDebugCounters());
        System.out.println("workload done");
    }

    private static void print(String when, Map<String, Long> counters) {
        counters.forEach((k, v) -> System.out.println(when + " " + k + "=" + v));
    }
}
