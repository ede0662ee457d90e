package com.datadoghq.profiler.lazy;

import java.io.PrintWriter;
import java.lang.instrument.ClassDefinition;
import java.lang.instrument.Instrumentation;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.IsolatingLoader;

/**
 * A child JVM's main and {@code -javaagent} (premain, for {@link Instrumentation}) for
 * {@link RedefinedFramesTest}. Args: the output directory, the profiler's extra options (e.g.
 * {@code fjmethodid=lazy}), the number of redefinitions.
 *
 * <p>Starts the profiler ({@code cpu=1ms}); {@value #WORKERS} workers ({@code rv-0}, ...) call
 * {@link RedefVersionTarget#hot} in a loop, each recording its helper calls in its own
 * {@link RedefVersionRing}; the main thread redefines {@link RedefVersionTarget} alternately to
 * version 2 and back to version 1 ({@code redefineClasses}), logging each call's start and end
 * ticks in {@code redefs.txt}; a dumper writes {@code dump-N.jfr} every {@value #DUMP_EVERY_MS}
 * ms. Then it stops the profiler (the rest goes to {@code main.jfr}) and writes
 * {@code ring-<thread>.txt} per worker, and prints the workers' CPU time and the counters.
 */
public final class RedefVersionsMain {
    static final int WORKERS = 2;
    static final long DUMP_EVERY_MS = 200;

    private static volatile Instrumentation inst;

    public static void premain(String args, Instrumentation i) {
        inst = i;
    }

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        String options = args[1];
        int redefinitions = Integer.parseInt(args[2]);
        if (inst == null) {
            throw new IllegalStateException("run with -javaagent (Premain-Class " + RedefVersionsMain.class.getName() + ")");
        }
        byte[] v1 = IsolatingLoader.classBytes(RedefVersionTarget.class.getName());
        byte[] v2 = swapHelpers(v1);

        JavaProfiler profiler = JavaProfiler.getInstance();
        RedefVersionRing.init(profiler);
        System.out.print(profiler.execute("start,cpu=1ms," + options + ",file=" + dir.resolve("main.jfr")));

        AtomicBoolean done = new AtomicBoolean();
        AtomicLong cpuNanos = new AtomicLong();
        List<RedefVersionRing> rings = new ArrayList<>();
        List<Thread> workers = new ArrayList<>();
        for (int w = 0; w < WORKERS; w++) {
            RedefVersionRing ring = new RedefVersionRing("rv-" + w);
            rings.add(ring);
            workers.add(new Thread(() -> {
                long seed = 1;
                long n = 0;
                while (!done.get()) {
                    seed += RedefVersionTarget.hot(ring, seed);
                    // Half busy: leaves CPU for the redefinitions and the dumps on a small host.
                    if (++n % 2 == 0) {
                        sleep(1);
                    }
                }
                cpuNanos.addAndGet(ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime());
            }, ring.thread));
        }
        int[] dumps = {0};
        Thread dumper = new Thread(() -> {
            while (!done.get()) {
                sleep(DUMP_EVERY_MS);
                profiler.dump(dir.resolve("dump-" + dumps[0]++ + ".jfr"));
            }
        }, "dumper");
        for (Thread t : workers) {
            t.start();
        }
        dumper.start();
        Thread.sleep(50); // both workers in hot before the first redefinition
        try (PrintWriter log = new PrintWriter(Files.newBufferedWriter(dir.resolve("redefs.txt")))) {
            for (int i = 0; i < redefinitions; i++) {
                int version = i % 2 == 0 ? 2 : 1;
                long t0 = profiler.getCurrentTicks();
                inst.redefineClasses(new ClassDefinition(RedefVersionTarget.class, version == 2 ? v2 : v1));
                long t1 = profiler.getCurrentTicks();
                log.println(version + " " + t0 + " " + t1);
            }
        }
        done.set(true);
        for (Thread t : workers) {
            t.join();
        }
        dumper.join();
        Map<String, Long> counters = profiler.getDebugCounters();
        profiler.stop();
        for (RedefVersionRing r : rings) {
            r.write(dir.resolve("ring-" + r.thread + ".txt"));
            System.out.println("calls " + r.thread + " v1=" + r.callsOf[1] + " v2=" + r.callsOf[2]
                    + " unversioned=" + r.callsOf[0] + " overflow=" + r.overflow);
        }
        System.out.println("redefinitions=" + redefinitions);
        System.out.println("dumps=" + dumps[0]);
        System.out.println("worker_cpu_ns=" + cpuNanos.get());
        for (Map.Entry<String, Long> e : counters.entrySet()) {
            System.out.println("counter " + e.getKey() + "=" + e.getValue());
        }
        System.out.println("workload done");
    }

    /**
     * The class file with the name indexes of the NameAndType entries of {@code helperA} and
     * {@code helperB} swapped: every call of one becomes a call of the other, the declarations
     * (which name their Utf8 entries directly) stay.
     */
    static byte[] swapHelpers(byte[] bytes) {
        ByteBuffer b = ByteBuffer.wrap(bytes.clone());
        ClassConstants pool = ClassConstants.read(b);
        String[] utf8 = pool.utf8;
        int[] natAt = pool.natAt;
        int[] natName = pool.natName;
        int count = utf8.length;
        int a = -1;
        int c = -1;
        for (int i = 1; i < count; i++) {
            if (natAt[i] != 0 && "helperA".equals(utf8[natName[i]])) {
                a = i;
            } else if (natAt[i] != 0 && "helperB".equals(utf8[natName[i]])) {
                c = i;
            }
        }
        if (a < 0 || c < 0) {
            throw new IllegalStateException("no NameAndType of helperA and helperB");
        }
        byte[] out = b.array();
        ByteBuffer.wrap(out).putShort(natAt[a], (short) natName[c]).putShort(natAt[c], (short) natName[a]);
        return out;
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
