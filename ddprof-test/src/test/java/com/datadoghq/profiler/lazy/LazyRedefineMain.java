package com.datadoghq.profiler.lazy;

import java.lang.instrument.ClassDefinition;
import java.lang.instrument.Instrumentation;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongBinaryOperator;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.IsolatingLoader;

/**
 * A child JVM's main and {@code -javaagent} (premain) for {@code LazyRedefinitionStressTest}.
 * Args: the output directory, then {@code stress} or {@code invalid-only}.
 *
 * <p>{@code stress}: starts the profiler ({@code fjmethodid=lazy}); three workers
 * ({@code w-alpha}, {@code w-beta}, {@code w-gamma}) each run one method of the current
 * {@link LazyRedefTarget} copy; every round loads a fresh copy, lets it be sampled while it has
 * no jmethodIDs, then redefines it {@value #PER_ROUND} times (redefineClasses and
 * retransformClasses in turn) while a dumper thread writes {@code dump-N.jfr} every
 * {@value #DUMP_EVERY_MS} ms. Then the invalid-argument calls, the counters, stop.
 *
 * <p>{@code invalid-only}: only the invalid-argument calls, without the profiler, to compare.
 * Each prints {@code invalid <case>: <outcome>}.
 */
public final class LazyRedefineMain {
    static final int ROUNDS = 40;
    static final int PER_ROUND = 25;
    static final long DUMP_EVERY_MS = 150;
    static final int MAX_DUMPS = 60;
    /** The dumps the test expects at least (LazyRedefinitionStressTest). */
    static final int MIN_DUMPS = 30;
    static final long UNREDEFINED_MS = 25;

    private static volatile Instrumentation inst;
    private static volatile LongBinaryOperator current;

    public static void premain(String args, Instrumentation i) {
        inst = i;
    }

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        boolean stress = args.length < 2 || args[1].equals("stress");
        if (inst == null) {
            throw new IllegalStateException("run with -javaagent (Premain-Class " + LazyRedefineMain.class.getName() + ")");
        }
        if (!stress) {
            invalidCalls();
            System.out.println("workload done");
            return;
        }
        JavaProfiler profiler = JavaProfiler.getInstance();
        System.out.print(profiler.execute("start,cpu=1ms,fjmethodid=lazy,file=" + dir.resolve("main.jfr")));

        AtomicBoolean done = new AtomicBoolean();
        current = newTarget();
        List<Thread> threads = new ArrayList<>();
        String[] names = {"w-alpha", "w-beta", "w-gamma"};
        for (int w = 0; w < names.length; w++) {
            final long which = w;
            threads.add(new Thread(() -> {
                while (!done.get()) {
                    current.applyAsLong(which, 2);
                    // Half busy: leaves CPU for the redefinitions' safepoints on small machines.
                    sleep(2);
                }
            }, names[w]));
        }
        java.util.concurrent.atomic.AtomicInteger dumps = new java.util.concurrent.atomic.AtomicInteger();
        threads.add(new Thread(() -> {
            while (!done.get() && dumps.get() < MAX_DUMPS) {
                sleep(DUMP_EVERY_MS);
                try {
                    profiler.dump(dir.resolve("dump-" + dumps.getAndIncrement() + ".jfr"));
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }
        }, "dumper"));
        for (Thread t : threads) {
            t.start();
        }
        byte[] bytes = IsolatingLoader.classBytes(LazyRedefTarget.class.getName());
        int redefinitions = 0;
        // At least ROUNDS rounds, and as many more as it takes (bounded) for MIN_DUMPS dumps to
        // race them: a quiet host redefines faster than the dumper dumps.
        for (int round = 0; round < ROUNDS || (dumps.get() < MIN_DUMPS && round < 3 * ROUNDS); round++) {
            LongBinaryOperator target = newTarget();
            current = target;
            Thread.sleep(UNREDEFINED_MS);
            for (int i = 0; i < PER_ROUND; i++) {
                if (i % 2 == 0) {
                    inst.redefineClasses(new ClassDefinition(target.getClass(), bytes));
                } else {
                    inst.retransformClasses(target.getClass());
                }
                redefinitions++;
                Thread.sleep(1);
            }
        }
        done.set(true);
        for (Thread t : threads) {
            t.join();
        }
        System.out.println("redefinitions=" + redefinitions);
        System.out.println("dumps=" + dumps.get());
        invalidCalls();
        for (Map.Entry<String, Long> e : profiler.getDebugCounters().entrySet()) {
            System.out.println("counter " + e.getKey() + "=" + e.getValue());
        }
        profiler.stop();
        System.out.println("workload done");
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static LongBinaryOperator newTarget() {
        return IsolatingLoader.newInstance(LazyRedefTarget.class, LongBinaryOperator.class);
    }

    /** Calls the JVMTI functions the profiler hooks with arguments JVMTI rejects. */
    static void invalidCalls() {
        byte[] bytes = IsolatingLoader.classBytes(LazyRedefTarget.class.getName());
        outcome("retransform int[]", () -> inst.retransformClasses(int[].class));
        outcome("retransform int", () -> inst.retransformClasses(int.class));
        outcome("retransform null element", () -> inst.retransformClasses(new Class<?>[] {null}));
        outcome("retransform none", () -> inst.retransformClasses());
        outcome("redefine String[]", () -> inst.redefineClasses(new ClassDefinition(String[].class, bytes)));
        outcome("redefine long", () -> inst.redefineClasses(new ClassDefinition(long.class, bytes)));
        outcome("redefine bad bytes", () -> inst.redefineClasses(
                new ClassDefinition(newTarget().getClass(), new byte[] {1, 2, 3})));
        outcome("redefine wrong class", () -> inst.redefineClasses(
                new ClassDefinition(newTarget().getClass(), IsolatingLoader.classBytes(LazySpin.class.getName()))));
    }

    interface Call {
        void run() throws Exception;
    }

    private static void outcome(String name, Call c) {
        String result;
        try {
            c.run();
            result = "ok";
        } catch (Throwable t) {
            result = t.getClass().getName();
        }
        System.out.println("invalid " + name + ": " + result);
    }
}
