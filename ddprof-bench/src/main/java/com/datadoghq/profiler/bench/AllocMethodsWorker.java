package com.datadoghq.profiler.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.IntConsumer;

import com.datadoghq.profiler.JavaProfiler;

/**
 * One run of {@link AllocMethodsBenchmark}, in a fresh JVM started with
 * {@code -XX:NativeMemoryTracking=summary}:
 * {@code AllocMethodsWorker <none|lazy|true|upstream> <classes> <methodsPerClass> <bytesPerMethod>}.
 *
 * <p>Starts the profiler ({@code memory=262144:a}, with {@code fjmethodid=lazy} for {@code lazy};
 * {@code upstream} is the same command to whichever {@code com.datadoghq.profiler.JavaProfiler} is on
 * the class path, upstream's jar in that mode), loads the classes ({@link ClassBytes#allocating}:
 * {@code methodsPerClass} distinct allocating methods each) through one {@link BenchSupport.GenLoader},
 * calls each method 1,000 times with nothing to allocate (so they are compiled), then has every method
 * allocate {@code bytesPerMethod} in arrays of 64 KiB on one thread, dumps the recording, waits 5.5 s
 * (HotSpot returns freed arena chunks every 5 s) and prints
 * {@code RESULT mode=.. Total=<KB> Class=<KB> ...} (NMT committed per category, spaces dropped) and
 * the profiler's counters as {@code counter_<name>=<value>}.
 */
public final class AllocMethodsWorker {
    /** Where the generated methods store their arrays. */
    public static volatile Object sink;

    private static final int ARRAY = 64 << 10;

    private AllocMethodsWorker() {}

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        int classes = Integer.parseInt(args[1]);
        int methods = Integer.parseInt(args[2]);
        long perMethod = Long.parseLong(args[3]);
        Path dir = Files.createTempDirectory("ddprof-alloc-methods-");
        BenchSupport.nmtCommittedKb(); // loads the JMX classes in every mode
        JavaProfiler profiler = null;
        if (!mode.equals("none")) {
            profiler = JavaProfiler.getInstance();
            String ids = mode.equals("lazy") ? ",fjmethodid=lazy" : "";
            String r = profiler.execute("start,memory=262144:a" + ids + ",file=" + dir.resolve("p.jfr"));
            if (r != null && !r.trim().equals("Profiling started")) {
                System.err.println("[" + mode + "] execute: " + r.trim());
            }
        }
        BenchSupport.GenLoader loader = new BenchSupport.GenLoader(AllocMethodsWorker.class.getClassLoader());
        String sinkOwner = AllocMethodsWorker.class.getName().replace('.', '/');
        List<IntConsumer> workers = new ArrayList<>();
        for (int c = 0; c < classes; c++) {
            String name = String.format(Locale.ROOT, "gen/alloc/A%04d", c);
            Class<?> k = BenchSupport.defineAndLink(loader, name.replace('/', '.'),
                    ClassBytes.allocating(name, methods, sinkOwner));
            workers.add((IntConsumer) k.getDeclaredConstructor().newInstance());
        }
        run(workers, 1_000, 0);
        int rounds = (int) Math.max(1, perMethod / ARRAY);
        Thread t = new Thread(() -> run(workers, rounds, ARRAY), "alloc-methods");
        t.start();
        t.join();
        if (profiler != null) {
            profiler.dump(dir.resolve("dump.jfr"));
        }
        Thread.sleep(Long.getLong("settle", 5500));
        Map<String, Long> nmt = BenchSupport.nmtCommittedKb();
        StringBuilder out = new StringBuilder("RESULT mode=" + mode);
        nmt.forEach((k, v) -> out.append(' ').append(k.replace(" ", "")).append('=').append(v));
        if (profiler != null) {
            profiler.getDebugCounters().forEach((k, v) -> out.append(" counter_").append(k).append('=').append(v));
            profiler.stop();
        }
        System.out.println(out);
        BenchSupport.deleteTree(dir);
    }

    private static void run(List<IntConsumer> workers, int rounds, int size) {
        for (int r = 0; r < rounds; r++) {
            for (IntConsumer w : workers) {
                w.accept(size);
            }
        }
    }
}
