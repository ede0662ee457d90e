package com.datadoghq.profiler.lazy;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongUnaryOperator;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.internal.Diagnostics;
import com.datadoghq.profiler.testing.IsolatingLoader;

/**
 * A child JVM's main for {@code LazyZgcTest}, meant to run under ZGC. Args: the output directory.
 *
 * <ol>
 *   <li>Starts the profiler with {@code fjmethodid=lazy} and prints its reply.</li>
 *   <li>Reads the class trace ID of a few hundred classes of every kind (boot, app, custom loader,
 *   hidden, lambda, arrays) through the native core ({@code Diagnostics.getClassTraceId}: the same
 *   mirror -> {@code Klass*} read that the calibration, the class registry and the allocation
 *   class names use).</li>
 *   <li>Runs a fresh custom-loaded {@link LazySpin} on {@code zgc-worker} and a hidden
 *   {@link LazyHiddenSpin} on {@code hidden-worker}, while {@code gc-churn} allocates and calls
 *   {@code System.gc()} every 50 ms (objects move, pointer colors flip while frames are sampled
 *   and classes registered).</li>
 *   <li>Six more {@code System.gc()} cycles between the last sample and the dump, then the same
 *   trace IDs again, then {@code zgc.jfr}.</li>
 * </ol>
 * Prints {@code cpu <thread>=<ms>} (CPU time each worker really got), {@code traceids read=N
 * unreadable=N changed=N}, every counter as {@code counter name=value}, then {@code workload done}.
 */
public final class LazyZgcMain {
    static volatile Object keep;
    static volatile boolean churning = true;

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        JavaProfiler profiler = JavaProfiler.getInstance();
        System.out.println(profiler.execute("start,cpu=1ms,fjmethodid=lazy,file=" + dir.resolve("main.jfr")));

        LongUnaryOperator custom = IsolatingLoader.newInstance(LazySpin.class, LongUnaryOperator.class);
        LongUnaryOperator hidden = LazyMain.hiddenInstance();
        Runnable lambda = () -> { };
        List<Class<?>> classes = classesOfEveryKind(custom, hidden, lambda);
        long[] before = traceIds(classes);

        Thread churn = new Thread(LazyZgcMain::churn, "gc-churn");
        churn.setDaemon(true);
        churn.start();
        Map<String, AtomicLong> cpu = new java.util.LinkedHashMap<>();
        Thread[] workers = {
            worker("zgc-worker", () -> custom.applyAsLong(1500), cpu),
            worker("hidden-worker", () -> hidden.applyAsLong(800), cpu),
        };
        for (Thread t : workers) {
            t.start();
        }
        for (Thread t : workers) {
            t.join();
        }
        churning = false;
        churn.join();
        for (int i = 0; i < 6; i++) {
            garbage();
            System.gc();
        }
        long[] after = traceIds(classes);
        int unreadable = 0;
        int changed = 0;
        for (int i = 0; i < before.length; i++) {
            if (before[i] < 0 || after[i] < 0) {
                unreadable++;
                System.out.println("unreadable trace id: " + classes.get(i).getName());
            } else if (before[i] != after[i]) {
                changed++;
                System.out.println("changed trace id: " + classes.get(i).getName());
            }
        }
        System.out.println("traceids read=" + before.length + " unreadable=" + unreadable + " changed=" + changed);
        cpu.forEach((k, v) -> System.out.println("cpu " + k + "=" + v.get()));

        profiler.dump(dir.resolve("zgc.jfr"));
        for (Map.Entry<String, Long> e : profiler.getDebugCounters().entrySet()) {
            System.out.println("counter " + e.getKey() + "=" + e.getValue());
        }
        profiler.stop();
        System.out.println("workload done");
    }

    private static Thread worker(String name, Runnable work, Map<String, AtomicLong> cpu) {
        AtomicLong ms = new AtomicLong();
        cpu.put(name, ms);
        return new Thread(() -> {
            ThreadMXBean mx = ManagementFactory.getThreadMXBean();
            long start = mx.getCurrentThreadCpuTime();
            work.run();
            ms.set((mx.getCurrentThreadCpuTime() - start) / 1_000_000L);
        }, name);
    }

    private static void churn() {
        while (churning) {
            garbage();
            System.gc();
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    /** A few MB of short-lived objects, some kept until the next call, so pages fill and empty. */
    private static void garbage() {
        List<Object> l = new ArrayList<>();
        for (int i = 0; i < 20_000; i++) {
            l.add(new long[1 + (i % 32)]);
        }
        keep = l;
    }

    private static List<Class<?>> classesOfEveryKind(Object... instances) throws Exception {
        List<Class<?>> out = new ArrayList<>();
        for (Object o : instances) {
            out.add(o.getClass());
        }
        Class<?>[] seeds = {String.class, Object.class, Thread.class, java.util.HashMap.class,
            java.util.concurrent.ConcurrentHashMap.class, LazyZgcMain.class, LazySpin.class,
            JavaProfiler.class, java.lang.invoke.MethodHandles.class, Runtime.class};
        for (Class<?> c : seeds) {
            out.add(c);
            out.add(java.lang.reflect.Array.newInstance(c, 0).getClass());
            for (Class<?> inner : c.getDeclaredClasses()) {
                out.add(inner);
            }
            for (Class<?> i : c.getInterfaces()) {
                out.add(i);
            }
        }
        // Classes loaded for reflection and collections: a few hundred in all.
        for (String n : new String[] {"java.util.ArrayList", "java.util.TreeMap", "java.util.LinkedList",
            "java.util.regex.Pattern", "java.time.Instant", "java.net.URI", "java.util.zip.CRC32"}) {
            Class<?> c = Class.forName(n);
            out.add(c);
            for (Class<?> inner : c.getDeclaredClasses()) {
                out.add(inner);
            }
        }
        out.add(int[].class);
        out.add(long[][].class);
        return out;
    }

    private static long[] traceIds(List<Class<?>> classes) {
        long[] ids = new long[classes.size()];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = Diagnostics.getClassTraceId(classes.get(i));
        }
        return ids;
    }
}
