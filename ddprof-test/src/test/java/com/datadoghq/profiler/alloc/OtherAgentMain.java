package com.datadoghq.profiler.alloc;

import java.nio.file.Path;
import java.nio.file.Paths;

import com.datadoghq.profiler.JavaProfiler;

/**
 * A child JVM's main for {@link OtherAgentHoldsSamplingTest}, run beside an agent that holds
 * the heap-sampling capability. Arg: the output directory. Prints what a {@code memory} start
 * answers, then profiles CPU to show the profiler is still usable.
 */
public final class OtherAgentMain {
    private OtherAgentMain() {}

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        JavaProfiler profiler = JavaProfiler.getInstance();
        try {
            profiler.execute("start,memory=262144:a,file=" + dir.resolve("refused.jfr"));
            System.out.println("memory start: accepted");
            profiler.stop();
        } catch (IllegalStateException e) {
            System.out.println("memory start: " + e.getClass().getSimpleName() + ": " + e.getMessage());
        }
        System.out.print(profiler.execute("start,cpu=10ms,file=" + dir.resolve("cpu.jfr")));
        Allocators.intsCaller(16L << 20);
        profiler.stop();
        System.out.println("workload done");
    }
}
