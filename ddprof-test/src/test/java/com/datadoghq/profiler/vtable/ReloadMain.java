package com.datadoghq.profiler.vtable;

import java.lang.ref.WeakReference;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

import com.datadoghq.profiler.testing.CpuBudget;
import com.datadoghq.profiler.testing.IsolatingLoader;

/**
 * A child JVM's main for receiver classes that unload before the dump. Thread "vtable-worker" calls
 * {@link #callMass} (a vtable call) on three classes of a throwaway loader ({@link Moon}, {@link Comet},
 * {@link Rock}), then the loader is dropped until its classes unload, then it calls it on three other
 * classes of a new loader ({@link Star}, {@link Planet}, {@link Dust}), whose metadata may take the
 * memory the first ones had. Prints when the second phase began ({@code phase2 ms: } epoch millis),
 * {@code unloaded=true|false} and the worker's CPU time. Args: milliseconds of CPU per phase, and
 * optionally {@code same} (see {@link #sameClassesTwice}).
 */
public final class ReloadMain {
    public static volatile long sink;

    public abstract static class Body {
        public abstract int mass();
    }

    public static final class Moon extends Body {
        @Override
        public int mass() {
            return 1;
        }
    }

    public static final class Comet extends Body {
        @Override
        public int mass() {
            return 2;
        }
    }

    public static final class Rock extends Body {
        @Override
        public int mass() {
            return 3;
        }
    }

    public static final class Star extends Body {
        @Override
        public int mass() {
            return 4;
        }
    }

    public static final class Planet extends Body {
        @Override
        public int mass() {
            return 5;
        }
    }

    public static final class Dust extends Body {
        @Override
        public int mass() {
            return 6;
        }
    }

    static int callMass(Body b) {
        return b.mass();
    }

    public static void main(String[] args) throws Exception {
        long millis = args.length > 0 ? Long.parseLong(args[0]) : 1500;
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long[] cpuNanos = new long[1];
        boolean[] unloaded = new boolean[1];
        boolean same = args.length > 1 && (args[1].equals("same") || args[1].equals("late"));
        String lateFile = args.length > 2 && args[1].equals("late") ? args[2] : null;
        Thread worker = new Thread(() -> {
            long start = mx.getCurrentThreadCpuTime();
            if (same) {
                unloaded[0] = sameClassesTwice(millis, lateFile);
                cpuNanos[0] = mx.getCurrentThreadCpuTime() - start;
                return;
            }
            WeakReference<ClassLoader> first = phase(millis, Moon.class, Comet.class, Rock.class);
            for (int i = 0; i < 50 && first.get() != null; i++) {
                System.gc();
                try {
                    Thread.sleep(20);
                } catch (InterruptedException e) {
                    return;
                }
            }
            unloaded[0] = first.get() == null;
            System.out.println("phase2 ms: " + System.currentTimeMillis());
            phase(millis, Star.class, Planet.class, Dust.class);
            cpuNanos[0] = mx.getCurrentThreadCpuTime() - start;
        }, "vtable-worker");
        worker.start();
        worker.join();
        if (lateFile != null) {
            ReloadLateStart.stop();
        }
        System.out.println("unloaded=" + unloaded[0]);
        System.out.println("worker cpu ms: " + cpuNanos[0] / 1_000_000);
        System.out.println("workload done: reload");
    }

    /**
     * Mode {@code same}: two rounds on {@link Moon}, {@link Comet} and {@link Rock}, each round in a new
     * loader, the first loader's classes unloaded before the second round; both rounds call
     * {@link #phase} from one call site, so that their stacks can be equal. Whether the first unloaded.
     * Mode {@code late}: the profiler is started (writing {@code lateFile}) only once the first round's
     * classes are loaded, and stopped at the end.
     */
    static boolean sameClassesTwice(long millis, String lateFile) {
        boolean unloaded = false;
        for (int round = 0; round < 2; round++) {
            if (round == 1) {
                System.out.println("phase2 ms: " + System.currentTimeMillis());
            }
            Runnable ready = round == 0 && lateFile != null ? () -> ReloadLateStart.start(lateFile) : () -> { };
            WeakReference<ClassLoader> loader = phase(millis, ready, Moon.class, Comet.class, Rock.class);
            if (round == 0) {
                unloaded = awaitUnload(loader);
            }
        }
        return unloaded;
    }

    private static boolean awaitUnload(WeakReference<ClassLoader> loader) {
        for (int i = 0; i < 50 && loader.get() != null; i++) {
            System.gc();
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                return false;
            }
        }
        return loader.get() == null;
    }

    /** Spins on fresh copies of {@code types} in a new loader; returns the loader, weakly. */
    static WeakReference<ClassLoader> phase(long millis, Class<?>... types) {
        return phase(millis, () -> { }, types);
    }

    /** As {@link #phase(long, Class[])}, running {@code ready} once the classes are loaded. */
    static WeakReference<ClassLoader> phase(long millis, Runnable ready, Class<?>... types) {
        String[] names = new String[types.length];
        for (int i = 0; i < types.length; i++) {
            names[i] = types[i].getName();
        }
        IsolatingLoader loader = new IsolatingLoader(names);
        Body[] bodies = new Body[3 * 64];
        try {
            for (int i = 0; i < bodies.length; i++) {
                Class<?> c = loader.loadClass(names[i % names.length]);
                bodies[i] = (Body) c.getDeclaredConstructor().newInstance();
            }
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
        ready.run();
        CpuBudget budget = CpuBudget.of(millis);
        long total = 0;
        while (budget.left()) {
            for (int r = 0; r < 1000; r++) {
                for (Body b : bodies) {
                    total += callMass(b);
                }
            }
        }
        sink += total;
        return new WeakReference<>(loader);
    }
}
