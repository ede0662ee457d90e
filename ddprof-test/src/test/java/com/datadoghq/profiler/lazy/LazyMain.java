package com.datadoghq.profiler.lazy;

import java.lang.invoke.MethodHandles;
import java.lang.ref.WeakReference;
import java.lang.reflect.Array;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Map;
import java.util.function.LongUnaryOperator;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.IsolatingLoader;

/**
 * A child JVM's main for the lazy method-ID mode ({@code LazyJmethodIdTest}). Args: the output
 * directory, then the profiler's extra options (default {@code fjmethodid=lazy}).
 *
 * <ol>
 *   <li>Starts the profiler; then, all loaded after the start so their methods have no
 *   jmethodIDs when sampled, runs concurrently: a class of a custom loader
 *   ({@link LazySpin}, thread {@code custom-worker}), a hidden class ({@link LazyHiddenSpin},
 *   {@code hidden-worker}) and a lambda ({@code lambda-worker}). Dumps {@code names.jfr}.</li>
 *   <li>Runs another custom-loaded copy of {@link LazySpin} on {@code unload-worker}, drops it and
 *   collects until its class is gone, then runs {@link LazyReload} copies in fresh loaders on
 *   {@code reload-worker} (their metadata may reuse the unloaded class's memory). Dumps
 *   {@code unload.jfr}: the unload-worker's frames of the unloaded class must be {@code <unloaded>}, never
 *   another class's.</li>
 * </ol>
 * Prints {@code unloaded=true|false} and every counter as {@code counter name=value}.
 */
public final class LazyMain {
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        String options = args.length > 1 ? args[1] : "fjmethodid=lazy";
        JavaProfiler profiler = JavaProfiler.getInstance();
        System.out.print(profiler.execute("start,cpu=1ms," + options + ",file=" + dir.resolve("main.jfr")));

        LongUnaryOperator custom = IsolatingLoader.newInstance(LazySpin.class, LongUnaryOperator.class);
        LongUnaryOperator hidden = hiddenInstance();
        System.out.println("hidden class: " + hidden.getClass().getName());
        Runnable lambda = () -> sink += spinHere(1000);
        Thread[] workers = {
            new Thread(() -> custom.applyAsLong(1000), "custom-worker"),
            new Thread(() -> hidden.applyAsLong(1000), "hidden-worker"),
            new Thread(lambda, "lambda-worker"),
        };
        for (Thread t : workers) {
            t.start();
        }
        for (Thread t : workers) {
            t.join();
        }
        profiler.dump(dir.resolve("names.jfr"));

        WeakReference<Class<?>> gone = runAndDrop();
        boolean unloaded = false;
        for (int i = 0; i < 50 && !unloaded; i++) {
            System.gc();
            unloaded = gone.get() == null;
            if (!unloaded) {
                Thread.sleep(20);
            }
        }
        // One more collection so that the unloaded class's metadata is freed, not only its mirror.
        System.gc();
        System.out.println("unloaded=" + unloaded);
        Thread reload = new Thread(() -> {
            for (int i = 0; i < 20; i++) {
                sink += IsolatingLoader.newInstance(LazyReload.class, LongUnaryOperator.class).applyAsLong(20);
            }
        }, "reload-worker");
        reload.start();
        reload.join();
        profiler.dump(dir.resolve("unload.jfr"));

        for (Map.Entry<String, Long> e : profiler.getDebugCounters().entrySet()) {
            System.out.println("counter " + e.getKey() + "=" + e.getValue());
        }
        profiler.stop();
        System.out.println("workload done");
    }

    /** Runs a fresh LazySpin on unload-worker and returns a weak reference to its class. */
    private static WeakReference<Class<?>> runAndDrop() throws InterruptedException {
        LongUnaryOperator op = IsolatingLoader.newInstance(LazySpin.class, LongUnaryOperator.class);
        WeakReference<Class<?>> ref = new WeakReference<>(op.getClass());
        Thread t = new Thread(() -> op.applyAsLong(600), "unload-worker");
        t.start();
        t.join();
        return ref;
    }

    static long spinHere(long millis) {
        // CPU time of this thread, not wall time: a busy host must not starve the samples.
        java.lang.management.ThreadMXBean cpu = java.lang.management.ManagementFactory.getThreadMXBean();
        long deadline = cpu.getCurrentThreadCpuTime() + millis * 1_000_000L;
        long wallCap = System.nanoTime() + 60_000_000_000L;
        long x = 1;
        while (cpu.getCurrentThreadCpuTime() < deadline && System.nanoTime() < wallCap) {
            for (int i = 0; i < 20_000; i++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
            }
        }
        return x;
    }

    /** A hidden class (JDK 15+) or VM-anonymous class (JDK 11-14) made from LazyHiddenSpin's bytes. */
    static LongUnaryOperator hiddenInstance() throws Exception {
        byte[] bytes = IsolatingLoader.classBytes(LazyHiddenSpin.class.getName());
        Class<?> c;
        if (Runtime.version().feature() >= 15) {
            Class<?> option = Class.forName("java.lang.invoke.MethodHandles$Lookup$ClassOption");
            Object noOptions = Array.newInstance(option, 0);
            Method define = MethodHandles.Lookup.class.getMethod("defineHiddenClass", byte[].class, boolean.class,
                    noOptions.getClass());
            MethodHandles.Lookup lookup = (MethodHandles.Lookup) define.invoke(MethodHandles.lookup(), bytes, true, noOptions);
            c = lookup.lookupClass();
        } else {
            Class<?> unsafeClass = Class.forName("sun.misc.Unsafe");
            Field f = unsafeClass.getDeclaredField("theUnsafe");
            f.setAccessible(true);
            Object unsafe = f.get(null);
            Method define = unsafeClass.getMethod("defineAnonymousClass", Class.class, byte[].class, Object[].class);
            c = (Class<?>) define.invoke(unsafe, LazyMain.class, bytes, null);
        }
        return (LongUnaryOperator) c.getDeclaredConstructor().newInstance();
    }
}
