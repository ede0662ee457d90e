package com.datadoghq.profiler.bench;

import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The soak benchmark's workload (issue 10): busy threads whose stacks never stop changing.
 *
 * <p>Each call runs a <b>prefix</b> of 4-{@code 3 + prefixDepth} frames through eight static
 * methods {@code r0..r7} chosen by the bits of a <i>path</i>, then enters a chain of generated
 * {@link ClassBytes#worker} classes at a random link for a random depth (1..{@code classes}).
 * The paths come from a pool of {@code paths} random values that is replaced every
 * {@code phaseSeconds}, so the working set of stacks is bounded at any moment but is a new one
 * every phase; and every {@code genSeconds} a new class loader defines a fresh generation of
 * {@code classes} worker classes ({@code gen.soak.G<gen>W<i>}), the previous one is dropped and
 * {@code System.gc()} is called so that its classes and methods unload. Without trace rotation the
 * profiler's trace table would grow with every phase and every generation.
 */
final class SoakWorkload {
    private static final long MUL = 6364136223846793005L;
    private static final long ADD = 1442695040888963407L;

    private final int threads;
    private final int prefixDepth;
    private final int paths;
    private final int classes;
    private final int iters;
    private final double phaseSeconds;
    private final double genSeconds;

    private volatile long[] pathPool;
    private volatile ClassBytes.Chain[] chains;
    private volatile boolean running = true;
    private final AtomicLong calls = new AtomicLong();
    private final AtomicLong generations = new AtomicLong();
    private final AtomicLong phases = new AtomicLong();
    private final Thread[] workers;
    private final Thread rotator;
    private volatile long sink;

    SoakWorkload(int threads, int prefixDepth, int paths, int classes, int iters, double phaseSeconds,
            double genSeconds) throws Exception {
        this.threads = threads;
        this.prefixDepth = prefixDepth;
        this.paths = paths;
        this.classes = classes;
        this.iters = iters;
        this.phaseSeconds = phaseSeconds;
        this.genSeconds = genSeconds;
        this.pathPool = newPaths(new SplittableRandom(1));
        this.chains = newGeneration(0);
        workers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            final long seed = 1000 + t;
            workers[t] = new Thread(() -> work(seed), "soak-worker-" + t);
            workers[t].setDaemon(true);
        }
        rotator = new Thread(this::rotate, "soak-rotator");
        rotator.setDaemon(true);
    }

    void start() {
        for (Thread w : workers) {
            w.start();
        }
        rotator.start();
    }

    void stop() throws InterruptedException {
        running = false;
        rotator.interrupt();
        for (Thread w : workers) {
            w.join(5000);
        }
        rotator.join(5000);
    }

    long calls() {
        return calls.get();
    }

    long generations() {
        return generations.get();
    }

    long phases() {
        return phases.get();
    }

    String describe() {
        return String.format(Locale.ROOT, "%d threads; prefix 4-%d frames over r0..r7, %d paths per phase,"
                + " new phase every %.0f s; chains of %d generated classes (%d mul-adds per frame), new class"
                + " loader every %.0f s then System.gc()", threads, 3 + prefixDepth, paths, phaseSeconds,
                classes, iters, genSeconds);
    }

    private long[] newPaths(SplittableRandom rnd) {
        long[] p = new long[paths];
        for (int i = 0; i < paths; i++) {
            p[i] = rnd.nextLong();
        }
        return p;
    }

    private ClassBytes.Chain[] newGeneration(long gen) throws Exception {
        BenchSupport.GenLoader loader = new BenchSupport.GenLoader(SoakWorkload.class.getClassLoader());
        ClassBytes.Chain[] all = new ClassBytes.Chain[classes];
        for (int i = 0; i < classes; i++) {
            String name = String.format(Locale.ROOT, "gen.soak.G%dW%d", gen, i);
            Class<?> c = BenchSupport.defineAndLink(loader, name, ClassBytes.worker(name.replace('.', '/'), iters, 4));
            all[i] = (ClassBytes.Chain) c.getDeclaredConstructor().newInstance();
        }
        return all;
    }

    private void rotate() {
        SplittableRandom rnd = new SplittableRandom(42);
        long phaseNs = (long) (phaseSeconds * 1e9);
        long genNs = (long) (genSeconds * 1e9);
        long start = System.nanoTime();
        long nextPhase = start + phaseNs;
        long nextGen = start + genNs;
        while (running) {
            long now = System.nanoTime();
            long wake = Math.min(nextPhase, nextGen);
            if (now < wake) {
                try {
                    Thread.sleep(Math.max(1, (wake - now) / 1_000_000));
                } catch (InterruptedException e) {
                    return;
                }
                continue;
            }
            try {
                if (now >= nextPhase) {
                    pathPool = newPaths(rnd);
                    phases.incrementAndGet();
                    nextPhase += phaseNs;
                }
                if (now >= nextGen) {
                    chains = newGeneration(generations.incrementAndGet());
                    System.gc(); // unload the previous generation's classes now, not whenever metaspace fills
                    nextGen += genNs;
                }
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }
    }

    private void work(long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        long x = seed;
        while (running) {
            long[] pool = pathPool;
            long path = pool[rnd.nextInt(pool.length)];
            int depth = 4 + rnd.nextInt(prefixDepth);
            x = enter(x, path, depth, rnd.nextInt(1 << 16));
            calls.incrementAndGet();
        }
        sink = x;
    }

    /** Picks r0..r7 by the low three bits of {@code path}; {@code depth} more frames, then the chain. */
    private long enter(long x, long path, int depth, int leaf) {
        if (depth <= 0) {
            ClassBytes.Chain[] all = chains;
            int at = leaf % all.length;
            return all[at].run(x, all, at, 1 + (leaf >>> 8) % all.length);
        }
        switch ((int) (path & 7)) {
            case 0: return r0(x, path >>> 3, depth - 1, leaf);
            case 1: return r1(x, path >>> 3, depth - 1, leaf);
            case 2: return r2(x, path >>> 3, depth - 1, leaf);
            case 3: return r3(x, path >>> 3, depth - 1, leaf);
            case 4: return r4(x, path >>> 3, depth - 1, leaf);
            case 5: return r5(x, path >>> 3, depth - 1, leaf);
            case 6: return r6(x, path >>> 3, depth - 1, leaf);
            default: return r7(x, path >>> 3, depth - 1, leaf);
        }
    }

    private static long spin(long x, int n) {
        for (int i = 0; i < n; i++) {
            x = x * MUL + ADD;
        }
        return x;
    }

    private long r0(long x, long p, int d, int l) {
        return enter(spin(x, 300), p, d, l);
    }

    private long r1(long x, long p, int d, int l) {
        return enter(spin(x, 300) ^ 1, p, d, l);
    }

    private long r2(long x, long p, int d, int l) {
        return enter(spin(x, 300) ^ 2, p, d, l);
    }

    private long r3(long x, long p, int d, int l) {
        return enter(spin(x, 300) ^ 3, p, d, l);
    }

    private long r4(long x, long p, int d, int l) {
        return enter(spin(x, 300) ^ 4, p, d, l);
    }

    private long r5(long x, long p, int d, int l) {
        return enter(spin(x, 300) ^ 5, p, d, l);
    }

    private long r6(long x, long p, int d, int l) {
        return enter(spin(x, 300) ^ 6, p, d, l);
    }

    private long r7(long x, long p, int d, int l) {
        return enter(spin(x, 300) ^ 7, p, d, l);
    }
}
