package com.datadoghq.profiler.bench;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * Native memory of the jmethodID modes while many classes load (issue 4, "Benchmarks").
 *
 * <p>Each run is a fresh child JVM ({@link MemoryWorker}, {@code -XX:NativeMemoryTracking=summary
 * -Xms256m -Xmx256m}) that starts ddprof in one mode ({@code none} = no profiler,
 * {@code fjmethodid=true|false|lazy} with {@code cpu=10ms}), then loads {@code classes} generated
 * classes of {@code methods} trivial methods each through custom class loaders
 * ({@code perLoader} classes each), kept reachable, and reports the NMT committed deltas over the
 * load. A round runs every mode once, shuffled; a mode's cost "beyond none" is its delta minus the
 * {@code none} delta of the same round; tables give the median [min..max] over the rounds.
 *
 * <p>Options: {@code mem.classes} (20000), {@code mem.methods} (50), {@code mem.perLoader} (100),
 * {@code mem.modes} ({@code none,true,false,lazy}), {@code mem.settle} (5500 ms: the child waits
 * this long before each NMT summary, for HotSpot's 5-second arena-chunk pool cleaning to run, which
 * otherwise adds a few MiB of noise to the totals), and those of {@link BenchSupport}
 * ({@code rounds} (3), {@code seed}, {@code jvmArgs}, {@code quietWait}, ...).
 */
public final class MemoryBenchmark {
    private MemoryBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        int classes = Integer.getInteger("mem.classes", 20000);
        int methods = Integer.getInteger("mem.methods", 50);
        int perLoader = Integer.getInteger("mem.perLoader", 100);
        List<String> modes = BenchSupport.modes("mem.modes", "none,true,false,lazy");
        if (!modes.contains("none")) {
            modes.add(0, "none");
        }
        BenchSupport.Rounds rounds = new BenchSupport.Rounds("MemoryBenchmark");
        List<String> jvm = rounds.jvmArgs("-XX:NativeMemoryTracking=summary", "-Xms256m", "-Xmx256m",
                "-Dsettle=" + Long.getLong("mem.settle", 5500));
        List<BenchSupport.Run> runs = rounds.run(modes,
                mode -> rounds.child(jvm, MemoryWorker.class, mode, classes, methods, perLoader));

        long totalMethods = (long) classes * methods;
        System.out.println();
        System.out.printf(Locale.ROOT, "Native memory: %,d classes x %d methods (%,d methods), %d classes per loader,"
                + " NMT committed deltas over the load, MiB; median [min..max] of %d fresh JVMs per mode%n",
                classes, methods, totalMethods, perLoader, rounds.rounds);
        System.out.println();
        System.out.println("| mode | Class | Internal | Total - Java Heap | Class beyond none | Internal beyond none"
                + " | Total - heap beyond none | per method | klass_registry_bytes | beyond none + registry"
                + " | jmethodIDs preloaded | load (ms) |");
        System.out.println("|---|---|---|---|---|---|---|---|---|---|---|---|");
        for (String mode : modes) {
            List<BenchSupport.Run> rs = BenchSupport.of(runs, mode);
            List<Double> cls = new ArrayList<>();
            List<Double> internal = new ArrayList<>();
            List<Double> total = new ArrayList<>();
            List<Double> clsBeyond = new ArrayList<>();
            List<Double> internalBeyond = new ArrayList<>();
            List<Double> totalBeyond = new ArrayList<>();
            List<Double> perMethod = new ArrayList<>();
            List<Double> withRegistry = new ArrayList<>();
            List<Double> registry = new ArrayList<>();
            List<Double> preloaded = new ArrayList<>();
            List<Double> loadMs = new ArrayList<>();
            for (BenchSupport.Run r : rs) {
                cls.add(r.d("d_Class") / 1024);
                internal.add(r.d("d_Internal") / 1024);
                total.add(r.d("d_Total_minus_heap") / 1024);
                registry.add(r.d("klass_registry_bytes") / 1024);
                preloaded.add(r.d("jmethodids_preloaded"));
                loadMs.add(r.d("load_ms"));
                BenchSupport.Run none = BenchSupport.find(runs, "none", r.round);
                if (none != null && !mode.equals("none")) {
                    clsBeyond.add((r.d("d_Class") - none.d("d_Class")) / 1024);
                    internalBeyond.add((r.d("d_Internal") - none.d("d_Internal")) / 1024);
                    double t = r.d("d_Total_minus_heap") - none.d("d_Total_minus_heap");
                    totalBeyond.add(t / 1024);
                    perMethod.add(t * 1024 / totalMethods);
                    withRegistry.add((t + r.d("klass_registry_bytes") / 1024) / 1024);
                }
            }
            boolean base = mode.equals("none");
            System.out.printf(Locale.ROOT, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |%n",
                    base ? "no profiler" : "`" + mode + "`",
                    BenchSupport.mmm(cls, "%+.2f"), BenchSupport.mmm(internal, "%+.2f"),
                    BenchSupport.mmm(total, "%+.2f"),
                    base ? "-" : BenchSupport.mmm(clsBeyond, "%+.2f"),
                    base ? "-" : BenchSupport.mmm(internalBeyond, "%+.2f"),
                    base ? "-" : "**" + BenchSupport.mmm(totalBeyond, "%+.2f") + "**",
                    base ? "-" : BenchSupport.mmm(perMethod, "%.1f B"),
                    base ? "-" : BenchSupport.mmm(registry, "%.0f KiB"),
                    base ? "-" : BenchSupport.mmm(withRegistry, "%+.2f"),
                    BenchSupport.mmm(preloaded, "%,.0f"),
                    BenchSupport.mmm(loadMs, "%.0f"));
        }

        // Every other category that moved by more than 0.1 MiB beyond none, to account for the total.
        System.out.println();
        Set<String> cats = new LinkedHashSet<>();
        for (BenchSupport.Run r : runs) {
            for (String k : r.values.keySet()) {
                if (k.startsWith("d_") && !Arrays.asList("d_Total", "d_Total_minus_heap", "d_JavaHeap",
                        "d_Class", "d_Internal").contains(k)) {
                    cats.add(k);
                }
            }
        }
        for (String mode : modes) {
            if (mode.equals("none")) {
                continue;
            }
            StringBuilder sb = new StringBuilder();
            for (String c : cats) {
                List<Double> beyond = new ArrayList<>();
                for (BenchSupport.Run r : BenchSupport.of(runs, mode)) {
                    BenchSupport.Run none = BenchSupport.find(runs, "none", r.round);
                    if (none != null) {
                        beyond.add((r.l("d_" + c.substring(2), 0) - none.l("d_" + c.substring(2), 0)) / 1024.0);
                    }
                }
                double med = BenchSupport.median(beyond);
                if (Math.abs(med) >= 0.1) {
                    sb.append(String.format(Locale.ROOT, " %s %+.2f;", c.substring(2), med));
                }
            }
            System.out.println("Other NMT categories beyond none, `" + mode + "` (median MiB):"
                    + (sb.length() == 0 ? " none above 0.1 MiB" : sb.toString()));
        }
        System.out.println();
        System.out.println(rounds.loadSummary());
    }
}
