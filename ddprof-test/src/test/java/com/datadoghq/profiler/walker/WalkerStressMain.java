package com.datadoghq.profiler.walker;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;

import com.datadoghq.profiler.testing.CpuBurner;

/**
 * A child JVM's main that gives a stack walker a hard time for a while (arg: milliseconds), all
 * at once:
 * <ul>
 *   <li>"stress-npe": NullPointerExceptions from implicit null checks in JIT-compiled code
 *   (SIGSEGV that must reach HotSpot's handler), caught and counted;</li>
 *   <li>"stress-churn": rounds of {@link StressChurn}, each defined by a fresh {@link ChurnLoader}:
 *   deoptimisation (failed class checks, broken class-hierarchy dependencies, null traps), then
 *   the loader is dropped and System.gc() unloads the classes and their code;</li>
 *   <li>"stress-alloc": allocation churn with a retained ring, for GC pressure;</li>
 *   <li>"stress-spawner": short-lived threads, at least {@link #MIN_THREADS};</li>
 *   <li>"stress-soe": StackOverflowError from deep recursion (stack guard pages), caught.</li>
 * </ul>
 * Prints one line of results per activity, then "stress done"; exits with 3 if a worker failed.
 */
public final class WalkerStressMain {
    public static final int MIN_THREADS = 200;
    public static volatile long sink;

    private static volatile boolean stop;
    private static final ConcurrentLinkedQueue<Throwable> FAILURES = new ConcurrentLinkedQueue<>();

    static final class Holder {
        final long value;

        Holder(long value) {
            this.value = value;
        }
    }

    public static void main(String[] args) throws Exception {
        long millis = args.length > 0 ? Long.parseLong(args[0]) : 8000;
        long[] npe = new long[2];
        long[] churn = new long[3];
        long[] alloc = new long[1];
        long[] spawned = new long[1];
        long[] soe = new long[2];
        List<Thread> workers = new ArrayList<>();
        workers.add(worker("stress-npe", () -> npeLoop(npe)));
        workers.add(worker("stress-churn", () -> churnLoop(churn)));
        workers.add(worker("stress-alloc", () -> allocLoop(alloc)));
        workers.add(worker("stress-spawner", () -> spawnLoop(spawned)));
        workers.add(worker("stress-soe", () -> soeLoop(soe)));
        long start = System.nanoTime();
        workers.forEach(Thread::start);
        Thread.sleep(millis);
        stop = true;
        for (Thread t : workers) {
            t.join(30_000);
            if (t.isAlive()) {
                FAILURES.add(new IllegalStateException(t.getName() + " did not stop"));
            }
        }
        long gcs = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            gcs += Math.max(0, gc.getCollectionCount());
        }
        System.out.println("elapsed ms=" + (System.nanoTime() - start) / 1_000_000);
        System.out.println("npe caught=" + npe[0] + " expected=" + npe[1]);
        System.out.println("churn rounds=" + churn[0] + " npe caught=" + churn[1] + " expected=" + churn[2]);
        System.out.println("classes defined=" + ChurnLoader.DEFINED.get() + " unloaded="
                + ManagementFactory.getClassLoadingMXBean().getUnloadedClassCount());
        System.out.println("alloc mb=" + alloc[0] / (1 << 20) + " gcs=" + gcs);
        System.out.println("threads spawned=" + spawned[0]);
        System.out.println("soe caught=" + soe[0] + " attempts=" + soe[1]);
        for (Throwable t : FAILURES) {
            System.out.println("FAILURE " + t);
            t.printStackTrace(System.out);
        }
        System.out.println("stress done");
        if (!FAILURES.isEmpty()) {
            System.exit(3);
        }
    }

    private static Thread worker(String name, Runnable r) {
        Thread t = new Thread(() -> {
            try {
                r.run();
            } catch (Throwable e) {
                FAILURES.add(e);
            }
        }, name);
        t.setDaemon(true);
        return t;
    }

    /** Full sweeps over holders of which every 61st is null; counts what it catches and what it should. */
    static void npeLoop(long[] out) {
        Holder[] holders = new Holder[4096];
        int nulls = 0;
        for (int i = 0; i < holders.length; i++) {
            if (i % 61 == 17) {
                nulls++;
            } else {
                holders[i] = new Holder(i);
            }
        }
        long caught = 0;
        long sweeps = 0;
        long acc = 0;
        while (!stop) {
            for (int i = 0; i < holders.length; i++) {
                try {
                    acc += read(holders[i]);
                } catch (NullPointerException e) {
                    caught++;
                }
            }
            sweeps++;
        }
        sink += acc;
        out[0] = caught;
        out[1] = sweeps * nulls;
    }

    static long read(Holder h) {
        return h.value * 3 + 1;
    }

    /** Rounds of StressChurn in fresh loaders; System.gc() every few rounds unloads the old ones. */
    static void churnLoop(long[] out) {
        ClassLoader parent = WalkerStressMain.class.getClassLoader();
        long rounds = 0;
        while (!stop) {
            try {
                ChurnLoader loader = new ChurnLoader(parent);
                @SuppressWarnings("unchecked")
                Callable<long[]> round = (Callable<long[]>) loader.loadClass(ChurnLoader.PREFIX)
                        .getDeclaredConstructor().newInstance();
                long[] r = round.call();
                out[1] += r[0];
                out[2] += r[1];
                sink += r[2];
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
            rounds++;
            if (rounds % 4 == 0) {
                System.gc();
            }
        }
        System.gc();
        out[0] = rounds;
    }

    /** Allocation churn: short-lived garbage plus a ring of retained arrays that reach the old generation. */
    static void allocLoop(long[] out) {
        Object[] ring = new Object[1024];
        long bytes = 0;
        long seed = 42;
        int i = 0;
        while (!stop) {
            seed = seed * 6364136223846793005L + 1442695040888963407L;
            int size = 64 + (int) ((seed >>> 40) & 0xFFFF);
            byte[] b = new byte[size];
            b[size - 1] = (byte) i;
            bytes += size;
            if ((i & 7) == 0) {
                ring[(i >>> 3) & (ring.length - 1)] = b;
            }
            List<Long> garbage = new ArrayList<>(16);
            for (int k = 0; k < 16; k++) {
                garbage.add(seed + k);
            }
            sink += garbage.size();
            i++;
        }
        out[0] = bytes;
    }

    /** Waves of short-lived CPU-busy threads until told to stop (and at least MIN_THREADS). */
    static void spawnLoop(long[] out) {
        long spawned = 0;
        AtomicLong finished = new AtomicLong();
        while (!stop || spawned < MIN_THREADS) {
            List<Thread> wave = new ArrayList<>();
            for (int k = 0; k < 10; k++) {
                Thread t = new Thread(() -> {
                    CpuBurner.burn(2);
                    finished.incrementAndGet();
                }, "stress-short-" + spawned);
                t.start();
                wave.add(t);
                spawned++;
            }
            for (Thread t : wave) {
                try {
                    t.join();
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            }
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        }
        if (finished.get() != spawned) {
            throw new IllegalStateException("threads spawned " + spawned + ", finished " + finished.get());
        }
        out[0] = spawned;
    }

    /** Recursion until StackOverflowError, caught, a few times a second. */
    static void soeLoop(long[] out) {
        while (!stop) {
            out[1]++;
            try {
                sink += recurse(0);
            } catch (StackOverflowError e) {
                out[0]++;
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        }
    }

    static long recurse(long n) {
        return recurse(n + 1) + n;
    }
}
