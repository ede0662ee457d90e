package com.datadoghq.profiler.bench;

import com.datadoghq.profiler.JavaProfiler;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * One run of {@link MemoryBenchmark}, in a fresh JVM started with
 * {@code -XX:NativeMemoryTracking=summary}:
 * {@code MemoryWorker <none|true|false|lazy> <classes> <methodsPerClass> <classesPerLoader>}.
 *
 * <p>Starts ddprof ({@code cpu=10ms,fjmethodid=<mode>}; nothing for {@code none}), takes the NMT
 * summary (committed, through the DiagnosticCommand MBean), generates and loads the classes (each
 * {@link ClassBytes#trivial}: {@code methodsPerClass} trivial static methods) through a new
 * {@link BenchSupport.GenLoader} per {@code classesPerLoader} classes, linked and initialized, all
 * kept reachable, and takes the NMT summary again. Prints
 * {@code RESULT mode=.. load_ms=.. d_<Category>=<KB> ... klass_registry_bytes=..}: the committed
 * delta of every NMT category (spaces dropped from the names), {@code d_Total_minus_heap}, and the
 * profiler's counters after the load.
 */
public final class MemoryWorker {
    /** Everything loaded stays reachable until the second summary is taken (and after). */
    private static final List<Object> KEEP = new ArrayList<>();

    private MemoryWorker() {
    }

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        int classes = Integer.parseInt(args[1]);
        int methods = Integer.parseInt(args[2]);
        int perLoader = Integer.parseInt(args[3]);

        Path dir = Files.createTempDirectory("ddprof-mem-");
        BenchSupport.nmtCommittedKb(); // loads the JMX classes before anything is measured
        JavaProfiler profiler = BenchSupport.startProfiler(mode, "cpu=10ms", dir);
        // HotSpot keeps freed arena chunks in a pool that a periodic task empties every 5 s: wait
        // for one pass before each summary, so neither counts chunks that are about to be freed.
        long settleMs = Long.getLong("settle", 5500);
        Thread.sleep(settleMs); // also lets the start's own work (registering or preloading) finish
        BenchSupport.nmtCommittedKb();
        Map<String, Long> before = BenchSupport.nmtCommittedKb();
        Map<String, Long> countersBefore = BenchSupport.counters(profiler);

        ClassLoader parent = MemoryWorker.class.getClassLoader();
        BenchSupport.GenLoader loader = null;
        long loadNs = 0;
        for (int i = 0; i < classes; i++) {
            if (i % perLoader == 0) {
                loader = new BenchSupport.GenLoader(parent);
                KEEP.add(loader);
            }
            String name = String.format(Locale.ROOT, "gen.mem.C%06d", i);
            byte[] bytes = ClassBytes.trivial(name.replace('.', '/'), methods);
            long t0 = System.nanoTime();
            KEEP.add(BenchSupport.defineAndLink(loader, name, bytes));
            loadNs += System.nanoTime() - t0;
        }
        Thread.sleep(settleMs); // and lets the compiler threads finish what the loop gave them
        Map<String, Long> after = BenchSupport.nmtCommittedKb();
        Map<String, Long> countersAfter = BenchSupport.counters(profiler);

        BenchSupport.Result r = new BenchSupport.Result()
                .put("mode", mode)
                .put("classes", classes)
                .put("methods", (long) classes * methods)
                .put("load_ms", String.format(Locale.ROOT, "%.1f", loadNs / 1e6));
        Set<String> cats = new LinkedHashSet<>(before.keySet());
        cats.addAll(after.keySet());
        for (String c : cats) {
            r.put("d_" + c.replace(" ", ""), after.getOrDefault(c, 0L) - before.getOrDefault(c, 0L));
        }
        long heapBefore = before.getOrDefault("Java Heap", 0L);
        long heapAfter = after.getOrDefault("Java Heap", 0L);
        r.put("d_Total_minus_heap", (after.get("Total") - heapAfter) - (before.get("Total") - heapBefore));
        for (String k : new String[] {"klass_registry_bytes", "klass_registry_entries", "fjmethodid_lazy_fallback",
                "klass_registry_add_failed"}) {
            r.put(k, countersAfter.getOrDefault(k, 0L));
        }
        for (String k : new String[] {"jmethodids_preloaded", "samples"}) {
            r.put(k, countersAfter.getOrDefault(k, 0L) - countersBefore.getOrDefault(k, 0L));
        }
        r.put("kept", KEEP.size());
        r.print();
        if (profiler != null) {
            profiler.stop();
        }
        BenchSupport.deleteTree(dir);
    }
}
