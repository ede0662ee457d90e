package com.datadoghq.profiler.bench;

import com.datadoghq.profiler.JavaProfiler;

import java.lang.management.ClassLoadingMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Class-loading throughput under churn, per jmethodID mode (issue 4, "Benchmarks").
 *
 * <p>Each run is a fresh child JVM ({@code ClassChurnBenchmark child ...}, {@code -Xms256m
 * -Xmx256m}) that starts ddprof ({@code cpu=10ms,fjmethodid=<mode>}; nothing for {@code none}),
 * then, on one thread, defines, links and initializes {@code perLoader} generated classes of
 * {@code methods} trivial methods each in a new class loader, drops the loader and repeats:
 * {@code warmup} seconds, then {@code measure} seconds counted. The class bytes are made once,
 * so what is timed is define + link (+ the profiler's ClassPrepare work) + unloading by the GC.
 * Each profiled run is compared with the {@code none} run of the same round, by classes per
 * wall second and by classes per process-CPU second (which holds up better on a busy host).
 *
 * <p>Options: {@code churn.perLoader} (50), {@code churn.methods} (20), {@code churn.warmup} (1.5),
 * {@code churn.measure} (5), {@code churn.modes} ({@code none,true,false,lazy}), and those of
 * {@link BenchSupport} ({@code rounds} (3), {@code seed}, {@code jvmArgs}, {@code quietWait}, ...).
 */
public final class ClassChurnBenchmark {
    private static volatile Object sink;

    private ClassChurnBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("child")) {
            child(args);
            return;
        }
        int perLoader = Integer.getInteger("churn.perLoader", 50);
        int methods = Integer.getInteger("churn.methods", 20);
        double warmup = Double.parseDouble(System.getProperty("churn.warmup", "1.5"));
        double measure = Double.parseDouble(System.getProperty("churn.measure", "5"));
        List<String> modes = BenchSupport.modes("churn.modes", "none,true,false,lazy");
        if (!modes.contains("none")) {
            modes.add(0, "none");
        }
        BenchSupport.Rounds rounds = new BenchSupport.Rounds("ClassChurnBenchmark");
        List<String> jvm = rounds.jvmArgs("-Xms256m", "-Xmx256m");
        List<BenchSupport.Run> runs = rounds.run(modes, mode -> rounds.child(jvm, ClassChurnBenchmark.class,
                "child", mode, perLoader, methods, warmup, measure));

        System.out.println();
        System.out.printf(Locale.ROOT, "Class churn: loaders of %d classes x %d methods, defined + linked on one"
                + " thread for %.1f s (after %.1f s warm-up), loaders dropped; median [min..max] of %d fresh JVMs"
                + " per mode; ratios against the no-profiler run of the same round%n",
                perLoader, methods, measure, warmup, rounds.rounds);
        System.out.println();
        System.out.println("| mode | classes/s | vs none (wall) | classes per CPU-s | vs none (per CPU-s) | CPU share"
                + " | unloaded | live classes at end | registry entries / bytes at end | samples |");
        System.out.println("|---|---|---|---|---|---|---|---|---|---|");
        for (String mode : modes) {
            List<Double> rate = new ArrayList<>();
            List<Double> perCpu = new ArrayList<>();
            List<Double> ratio = new ArrayList<>();
            List<Double> ratioCpu = new ArrayList<>();
            List<Double> share = new ArrayList<>();
            List<Double> unloaded = new ArrayList<>();
            List<Double> live = new ArrayList<>();
            List<Double> entries = new ArrayList<>();
            List<Double> bytes = new ArrayList<>();
            List<Double> samples = new ArrayList<>();
            for (BenchSupport.Run r : BenchSupport.of(runs, mode)) {
                double rt = r.d("classes") / (r.d("wall_ns") / 1e9);
                double pc = r.d("classes") / (r.d("cpu_ns") / 1e9);
                rate.add(rt);
                perCpu.add(pc);
                share.add(r.d("cpu_ns") / r.d("wall_ns"));
                unloaded.add(r.d("unloaded"));
                live.add(r.d("live_classes"));
                entries.add(r.d("klass_registry_entries"));
                bytes.add(r.d("klass_registry_bytes") / 1024);
                samples.add(r.d("samples"));
                BenchSupport.Run none = BenchSupport.find(runs, "none", r.round);
                if (none != null && !mode.equals("none")) {
                    ratio.add(rt / (none.d("classes") / (none.d("wall_ns") / 1e9)));
                    ratioCpu.add(pc / (none.d("classes") / (none.d("cpu_ns") / 1e9)));
                }
            }
            boolean base = mode.equals("none");
            System.out.printf(Locale.ROOT, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |%n",
                    base ? "no profiler" : "`" + mode + "`",
                    BenchSupport.mmm(rate, "%,.0f"),
                    base ? "1" : "**" + BenchSupport.mmm(ratio, "%.3f") + "**",
                    BenchSupport.mmm(perCpu, "%,.0f"),
                    base ? "1" : BenchSupport.mmm(ratioCpu, "%.3f"),
                    BenchSupport.mmm(share, "%.2f"),
                    BenchSupport.mmm(unloaded, "%,.0f"),
                    BenchSupport.mmm(live, "%,.0f"),
                    mode.equals("lazy") ? BenchSupport.mmm(entries, "%,.0f") + " / "
                            + BenchSupport.mmm(bytes, "%.0f KiB") : "-",
                    base ? "-" : BenchSupport.mmm(samples, "%.0f"));
        }
        System.out.println();
        System.out.println(rounds.loadSummary());
    }

    /** {@code child <mode> <perLoader> <methods> <warmupS> <measureS>}. */
    private static void child(String[] args) throws Exception {
        String mode = args[1];
        int perLoader = Integer.parseInt(args[2]);
        int methods = Integer.parseInt(args[3]);
        double warmup = Double.parseDouble(args[4]);
        double measure = Double.parseDouble(args[5]);

        String[] names = new String[perLoader];
        byte[][] bytes = new byte[perLoader][];
        for (int i = 0; i < perLoader; i++) {
            names[i] = String.format(Locale.ROOT, "gen.churn.C%04d", i);
            bytes[i] = ClassBytes.trivial(names[i].replace('.', '/'), methods);
        }
        Path dir = Files.createTempDirectory("ddprof-churn-");
        JavaProfiler profiler = BenchSupport.startProfiler(mode, "cpu=10ms", dir);
        ClassLoadingMXBean cl = ManagementFactory.getClassLoadingMXBean();
        ClassLoader parent = ClassChurnBenchmark.class.getClassLoader();

        long start = System.nanoTime();
        long warmEnd = start + (long) (warmup * 1e9);
        long end = warmEnd + (long) (measure * 1e9);
        long count = 0;
        long t0 = 0;
        long cpu0 = 0;
        long unloaded0 = 0;
        long samples0 = 0;
        boolean measuring = false;
        while (true) {
            long now = System.nanoTime();
            if (!measuring && now >= warmEnd) {
                measuring = true;
                t0 = now;
                cpu0 = BenchSupport.processCpuNs();
                unloaded0 = cl.getUnloadedClassCount();
                samples0 = BenchSupport.counters(profiler).getOrDefault("samples", 0L);
                count = 0;
            }
            if (now >= end) {
                break;
            }
            BenchSupport.GenLoader loader = new BenchSupport.GenLoader(parent);
            for (int i = 0; i < perLoader; i++) {
                sink = BenchSupport.defineAndLink(loader, names[i], bytes[i]);
            }
            count += perLoader;
        }
        long t1 = System.nanoTime();
        long cpu1 = BenchSupport.processCpuNs();
        Map<String, Long> c = BenchSupport.counters(profiler);
        new BenchSupport.Result()
                .put("mode", mode)
                .put("classes", count)
                .put("wall_ns", t1 - t0)
                .put("cpu_ns", cpu1 - cpu0)
                .put("unloaded", cl.getUnloadedClassCount() - unloaded0)
                .put("live_classes", cl.getLoadedClassCount())
                .put("samples", c.getOrDefault("samples", 0L) - samples0)
                .put("klass_registry_entries", c.getOrDefault("klass_registry_entries", 0L))
                .put("klass_registry_bytes", c.getOrDefault("klass_registry_bytes", 0L))
                .put("jmethodids_preloaded", c.getOrDefault("jmethodids_preloaded", 0L))
                .put("fjmethodid_lazy_fallback", c.getOrDefault("fjmethodid_lazy_fallback", 0L))
                .print();
        if (profiler != null) {
            profiler.stop();
        }
        BenchSupport.deleteTree(dir);
    }
}
