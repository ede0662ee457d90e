package com.datadoghq.profiler.lazy;

import java.lang.instrument.ClassDefinition;
import java.lang.instrument.Instrumentation;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.IsolatingLoader;

/**
 * A child JVM's main and {@code -javaagent} (premain) for {@link FalseModeRedefinitionTest}. Arg:
 * the output directory. Starts the profiler with {@code fjmethodid=false}; a worker
 * ({@code fr-worker}) runs {@link LazyRedefTarget#applyAsLong} (alpha, 1 ms calls) from the
 * application loader, so its frames are raw {@code Method*}s; once it has used
 * {@value #PHASE_CPU_MS} ms of CPU the class is redefined (its own bytes), then the worker runs as
 * long again, the recording is dumped ({@code dump.jfr}) and the profiler stops. Prints the redefinition's start and end
 * ticks, the CPU of each phase and the counters.
 */
public final class FalseModeRedefineMain {
    static final long PHASE_CPU_MS = 300;

    private static volatile Instrumentation inst;

    public static void premain(String args, Instrumentation i) {
        inst = i;
    }

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        if (inst == null) {
            throw new IllegalStateException("run with -javaagent (Premain-Class " + FalseModeRedefineMain.class.getName() + ")");
        }
        JavaProfiler profiler = JavaProfiler.getInstance();
        System.out.print(profiler.execute("start,cpu=1ms,fjmethodid=false,file=" + dir.resolve("main.jfr")));
        LazyRedefTarget target = new LazyRedefTarget();
        System.out.println("loader " + (target.getClass().getClassLoader() == ClassLoader.getSystemClassLoader()));
        AtomicBoolean done = new AtomicBoolean();
        Thread worker = new Thread(() -> {
            while (!done.get()) {
                target.applyAsLong(0, 1);
            }
        }, "fr-worker");
        worker.start();
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long before = spend(mx, worker, 0);
        long t0 = profiler.getCurrentTicks();
        inst.redefineClasses(new ClassDefinition(LazyRedefTarget.class,
                IsolatingLoader.classBytes(LazyRedefTarget.class.getName())));
        long t1 = profiler.getCurrentTicks();
        long after = spend(mx, worker, before) - before;
        done.set(true);
        worker.join();
        profiler.dump(dir.resolve("dump.jfr"));
        Map<String, Long> counters = profiler.getDebugCounters();
        profiler.stop();
        System.out.println("redefine_start=" + t0);
        System.out.println("redefine_end=" + t1);
        System.out.println("cpu_before_ns=" + before);
        System.out.println("cpu_after_ns=" + after);
        for (Map.Entry<String, Long> e : counters.entrySet()) {
            System.out.println("counter " + e.getKey() + "=" + e.getValue());
        }
        System.out.println("workload done");
    }

    /** Waits until {@code t} used {@value #PHASE_CPU_MS} ms of CPU past {@code from} (at most 20 s); its CPU time. */
    private static long spend(ThreadMXBean mx, Thread t, long from) throws InterruptedException {
        long deadline = System.nanoTime() + 20_000_000_000L;
        long cpu;
        while ((cpu = mx.getThreadCpuTime(t.getId())) < from + PHASE_CPU_MS * 1_000_000L && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        return cpu;
    }
}
