package com.datadoghq.profiler.bench;

import com.datadoghq.profiler.JavaProfiler;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedMethod;
import jdk.jfr.consumer.RecordingFile;

/**
 * Dump latency per jmethodID mode on a workload that samples ~2,000 distinct classes (issue 4,
 * "Benchmarks"; the lazy mode creates jmethodIDs at the first dump, so that dump is the one to
 * watch).
 *
 * <p>Each run is a fresh child JVM ({@code DumpLatencyBenchmark child ...}, {@code -Xms256m
 * -Xmx256m}) that starts ddprof ({@code cpu=1ms,fjmethodid=<mode>}), then loads {@code classes}
 * generated classes ({@link ClassBytes#worker}: a {@code run} method doing {@code iters}
 * multiply-adds and calling the next class, plus {@code extra} trivial methods) through custom
 * loaders of {@code perLoader} classes, and runs {@code threads} threads that call them
 * round-robin in chains of {@code depth + 1} distinct classes (so each sample holds up to
 * {@code depth + 1} of them). After {@code measure} seconds it times the first
 * {@code dump(Path)}, then {@code later} more dumps {@code gap} seconds apart, threads still busy,
 * in wall time and in the calling thread's CPU time (the dump runs on the calling thread; with
 * two busy threads on a 2-CPU host its wall time also holds waits for a CPU, in scheduler ticks).
 * The first dump is read back with {@code jdk.jfr.consumer} to count its samples and the
 * distinct generated classes in their stacks.
 *
 * <p>Options (all prefixed {@code dump.}): {@code classes} (2000), {@code extra} (19),
 * {@code iters} (200), {@code depth} (11), {@code threads} (2), {@code measure} (5), {@code gap} (1),
 * {@code later} (3), {@code perLoader} (100), {@code interval} (1ms), {@code modes}
 * ({@code true,false,lazy}), and those of {@link BenchSupport} ({@code rounds} (3), {@code seed}, {@code jvmArgs}, ...).
 */
public final class DumpLatencyBenchmark {
    private static volatile boolean running = true;
    private static volatile long sink;

    private DumpLatencyBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("child")) {
            child(args);
            return;
        }
        int classes = Integer.getInteger("dump.classes", 2000);
        int extra = Integer.getInteger("dump.extra", 19);
        int iters = Integer.getInteger("dump.iters", 200);
        int depth = Integer.getInteger("dump.depth", 11);
        int threads = Integer.getInteger("dump.threads", 2);
        double measure = Double.parseDouble(System.getProperty("dump.measure", "5"));
        double gap = Double.parseDouble(System.getProperty("dump.gap", "1"));
        int later = Integer.getInteger("dump.later", 3);
        int perLoader = Integer.getInteger("dump.perLoader", 100);
        String interval = System.getProperty("dump.interval", "1ms");
        List<String> modes = BenchSupport.modes("dump.modes", "true,false,lazy");
        BenchSupport.Rounds rounds = new BenchSupport.Rounds("DumpLatencyBenchmark");
        List<String> jvm = rounds.jvmArgs("-Xms256m", "-Xmx256m");
        List<BenchSupport.Run> runs = rounds.run(modes, mode -> rounds.child(jvm, DumpLatencyBenchmark.class,
                "child", mode, classes, extra, iters, depth, threads, measure, gap, later, perLoader, interval));

        System.out.println();
        System.out.printf(Locale.ROOT, "Dump latency: %d classes x %d methods (custom loaders of %d), %d threads calling"
                + " them in chains of %d, cpu=%s for %.1f s, then the first dump and %d more %.1f s apart (threads"
                + " busy); wall and calling-thread CPU time of dump(Path), ms; median [min..max] of %d fresh JVMs per"
                + " mode; ratios against the `true` run of the same round%n",
                classes, extra + 2, perLoader, threads, depth + 1, interval, measure, later, gap, rounds.rounds);
        System.out.println();
        System.out.println("| mode | first dump | later dumps | first / later | first vs `true` first"
                + " | first dump, CPU | later, CPU | first vs `true` first, CPU"
                + " | samples in first dump | generated classes in its stacks"
                + " | classes given IDs at first dump | IDs created at first dump |");
        System.out.println("|---|---|---|---|---|---|---|---|---|---|---|---|");
        for (String mode : modes) {
            List<Double> first = new ArrayList<>();
            List<Double> laterMs = new ArrayList<>();
            List<Double> ratio = new ArrayList<>();
            List<Double> vsTrue = new ArrayList<>();
            List<Double> firstCpu = new ArrayList<>();
            List<Double> laterCpu = new ArrayList<>();
            List<Double> vsTrueCpu = new ArrayList<>();
            List<Double> samples = new ArrayList<>();
            List<Double> distinct = new ArrayList<>();
            List<Double> lazyClasses = new ArrayList<>();
            List<Double> lazyIds = new ArrayList<>();
            for (BenchSupport.Run r : BenchSupport.of(runs, mode)) {
                double f = r.d("dump0_ms");
                double fc = r.d("dump0_cpu_ms");
                List<Double> l = new ArrayList<>();
                List<Double> lc = new ArrayList<>();
                for (int k = 1; k <= later; k++) {
                    l.add(r.d("dump" + k + "_ms"));
                    lc.add(r.d("dump" + k + "_cpu_ms"));
                }
                double lm = BenchSupport.median(l);
                first.add(f);
                laterMs.add(lm);
                ratio.add(f / lm);
                firstCpu.add(fc);
                laterCpu.add(BenchSupport.median(lc));
                samples.add(r.d("dump0_samples"));
                distinct.add(r.d("dump0_gen_classes"));
                lazyClasses.add(r.d("dump0_lazy_classes"));
                lazyIds.add(r.d("dump0_lazy_ids"));
                BenchSupport.Run t = BenchSupport.find(runs, "true", r.round);
                if (t != null) {
                    vsTrue.add(f / t.d("dump0_ms"));
                    vsTrueCpu.add(fc / t.d("dump0_cpu_ms"));
                }
            }
            boolean base = mode.equals("true");
            System.out.printf(Locale.ROOT, "| `%s` | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |%n", mode,
                    BenchSupport.mmm(first, "%.1f"), BenchSupport.mmm(laterMs, "%.1f"),
                    BenchSupport.mmm(ratio, "%.2f"),
                    base ? "1" : "**" + BenchSupport.mmm(vsTrue, "%.2f") + "**",
                    BenchSupport.mmm(firstCpu, "%.1f"), BenchSupport.mmm(laterCpu, "%.1f"),
                    base ? "1" : "**" + BenchSupport.mmm(vsTrueCpu, "%.2f") + "**",
                    BenchSupport.mmm(samples, "%.0f"), BenchSupport.mmm(distinct, "%.0f"),
                    BenchSupport.mmm(lazyClasses, "%.0f"), BenchSupport.mmm(lazyIds, "%.0f"));
        }
        System.out.println();
        System.out.println(rounds.loadSummary());
    }

    /**
     * {@code child <mode> <classes> <extra> <iters> <depth> <threads> <measureS> <gapS> <later>
     * <perLoader> <interval>}.
     */
    private static void child(String[] args) throws Exception {
        String mode = args[1];
        int classes = Integer.parseInt(args[2]);
        int extra = Integer.parseInt(args[3]);
        int iters = Integer.parseInt(args[4]);
        int depth = Integer.parseInt(args[5]);
        int threads = Integer.parseInt(args[6]);
        double measure = Double.parseDouble(args[7]);
        double gap = Double.parseDouble(args[8]);
        int later = Integer.parseInt(args[9]);
        int perLoader = Integer.parseInt(args[10]);
        String interval = args[11];

        Path dir = Files.createTempDirectory("ddprof-dumplat-");
        JavaProfiler profiler = BenchSupport.startProfiler(mode, "cpu=" + interval, dir);

        ClassBytes.Chain[] all = new ClassBytes.Chain[classes];
        ClassLoader parent = DumpLatencyBenchmark.class.getClassLoader();
        BenchSupport.GenLoader loader = null;
        for (int i = 0; i < classes; i++) {
            if (i % perLoader == 0) {
                loader = new BenchSupport.GenLoader(parent);
            }
            String name = String.format(Locale.ROOT, "gen.lat.W%05d", i);
            Class<?> c = BenchSupport.defineAndLink(loader, name, ClassBytes.worker(name.replace('.', '/'), iters, extra));
            all[i] = (ClassBytes.Chain) c.getDeclaredConstructor().newInstance();
        }

        Thread[] workers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            final int startIdx = (int) ((long) t * classes / threads);
            workers[t] = new Thread(() -> {
                int idx = startIdx;
                long x = startIdx + 1;
                while (running) {
                    x = all[idx].run(x, all, idx, depth);
                    idx = (idx + depth + 1) % all.length;
                }
                sink += x;
            }, "dumplat-worker-" + t);
            workers[t].start();
        }
        long samples0 = BenchSupport.counters(profiler).getOrDefault("samples", 0L);
        Thread.sleep((long) (measure * 1000));

        ThreadMXBean threadMx = ManagementFactory.getThreadMXBean();
        BenchSupport.Result r = new BenchSupport.Result().put("mode", mode);
        r.put("samples_window", BenchSupport.counters(profiler).getOrDefault("samples", 0L) - samples0);
        for (int k = 0; k <= later; k++) {
            if (k > 0) {
                Thread.sleep((long) (gap * 1000));
            }
            Map<String, Long> c0 = profiler.getDebugCounters();
            long cpu0 = threadMx.getCurrentThreadCpuTime();
            long t0 = System.nanoTime();
            profiler.dump(dir.resolve("dump" + k + ".jfr"));
            long t1 = System.nanoTime();
            long cpu1 = threadMx.getCurrentThreadCpuTime();
            Map<String, Long> c1 = profiler.getDebugCounters();
            r.put("dump" + k + "_ms", String.format(Locale.ROOT, "%.3f", (t1 - t0) / 1e6));
            r.put("dump" + k + "_cpu_ms", String.format(Locale.ROOT, "%.3f", (cpu1 - cpu0) / 1e6));
            r.put("dump" + k + "_native_ms", String.format(Locale.ROOT, "%.3f",
                    c1.getOrDefault("dump_ns_last", -1L) / 1e6));
            r.put("dump" + k + "_lazy_classes", delta(c0, c1, "method_resolve_lazy_metadata"));
            r.put("dump" + k + "_lazy_ids", delta(c0, c1, "method_resolve_lazy_jmethodids_created"));
            r.put("dump" + k + "_bytes", Files.size(dir.resolve("dump" + k + ".jfr")));
        }
        running = false;
        for (Thread w : workers) {
            w.join();
        }
        Map<String, Long> c = profiler.getDebugCounters();
        profiler.stop();
        for (String k : new String[] {"jmethodids_preloaded", "fjmethodid_lazy_fallback", "klass_registry_entries",
                "method_resolve_lazy_unloaded", "method_resolve_lazy_stale", "method_resolve_lazy_not_current",
                "walkvm_raw_frame_untaggable"}) {
            r.put(k, c.getOrDefault(k, 0L));
        }

        // What the first dump holds: its samples and the distinct generated classes in their stacks.
        long events = 0;
        long unnamed = 0;
        Set<String> gen = new HashSet<>();
        try (RecordingFile rf = new RecordingFile(dir.resolve("dump0.jfr"))) {
            while (rf.hasMoreEvents()) {
                RecordedEvent e = rf.readEvent();
                if (!e.getEventType().getName().equals("datadog.ExecutionSample") || e.getStackTrace() == null) {
                    continue;
                }
                events++;
                for (RecordedFrame f : e.getStackTrace().getFrames()) {
                    RecordedMethod m = f.getMethod();
                    String type = m == null || m.getType() == null ? null : m.getType().getName();
                    if (type == null) {
                        unnamed++;
                    } else if (type.startsWith("gen.lat.")) {
                        gen.add(type);
                    }
                }
            }
        }
        r.put("dump0_samples", events).put("dump0_gen_classes", gen.size()).put("dump0_unnamed_frames", unnamed);
        r.put("sink", sink & 1);
        r.print();
        BenchSupport.deleteTree(dir);
    }

    private static long delta(Map<String, Long> a, Map<String, Long> b, String k) {
        return b.getOrDefault(k, 0L) - a.getOrDefault(k, 0L);
    }
}
