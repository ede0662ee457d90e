package com.datadoghq.profiler.jitdump;

import com.datadoghq.profiler.testing.CpuBudget;

/**
 * A child JVM's main for the jitdump tests: prints its pid, then keeps the thread "jitdump-worker" in
 * {@link #hot} (which inlines {@link JitDumpCallee#mix}) for the given milliseconds of its CPU time.
 * The test keeps {@code hot} out of its caller ({@code -XX:CompileCommand=dontinline}) so that it is
 * compiled as a method of its own.
 */
public final class JitDumpMain {
    /** Keeps the results alive so the JIT cannot drop the work. */
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        long millis = args.length > 0 ? Long.parseLong(args[0]) : 2000;
        System.out.println("pid: " + ProcessHandle.current().pid());
        Thread worker = new Thread(() -> {
            CpuBudget budget = CpuBudget.of(millis);
            long acc = 1;
            while (budget.left()) {
                acc = hot(acc);
            }
            sink = acc;
        }, "jitdump-worker");
        worker.start();
        worker.join();
        System.out.println("workload done: jitdump");
    }

    static long hot(long seed) {
        long acc = seed;
        for (int i = 0; i < 10_000; i++) {
            acc = JitDumpCallee.mix(acc, i);
        }
        return acc;
    }
}
