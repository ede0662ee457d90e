package com.datadoghq.profiler.bench;

import com.datadoghq.profiler.JavaProfiler;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;

import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordingFile;

/**
 * The budget table of docs/footprint.md: what each of the profiler's native-memory categories costs
 * per thread, per loaded class and per sampled method, from its own {@code native_mem_*} gauges.
 *
 * <p>One JVM ({@code -Xms256m -Xmx256m}), phases in order, the gauges read after each:
 * <ol>
 *   <li>{@code start,cpu=1ms,fjmethodid=<mode>} and one second idle: the fixed cost;</li>
 *   <li>{@code threads} threads started and parked: per thread;</li>
 *   <li>{@code classes} trivial classes of 50 methods loaded through loaders of 100: per class;</li>
 *   <li>{@code sampled} worker classes ({@link ClassBytes#worker}) run by two threads for
 *       {@code seconds}, then {@code dump}: the dump-time categories' peaks per distinct sampled
 *       method (counted in the dump with {@code jdk.jfr.consumer}).</li>
 * </ol>
 * Also prints the process RSS at each point and the profiler's lower and upper bound of its share
 * (docs/footprint.md, "Reconciling with RSS").
 *
 * <p>{@code java -cp ddprof-bench.jar:ddprof.jar com.datadoghq.profiler.bench.MemoryBudgetBenchmark
 * [mode=lazy] [threads=200] [classes=10000] [sampled=2000] [seconds=8]}
 */
public final class MemoryBudgetBenchmark {
    private static final List<Object> KEEP = new ArrayList<>();
    private static volatile boolean running = true;
    private static volatile long sink;

    private MemoryBudgetBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> opt = new LinkedHashMap<>();
        opt.put("mode", "lazy");
        opt.put("threads", "200");
        opt.put("classes", "10000");
        opt.put("sampled", "2000");
        opt.put("seconds", "8");
        for (String a : args) {
            int eq = a.indexOf('=');
            opt.put(a.substring(0, eq), a.substring(eq + 1));
        }
        String mode = opt.get("mode");
        int threads = Integer.parseInt(opt.get("threads"));
        int classes = Integer.parseInt(opt.get("classes"));
        int sampled = Integer.parseInt(opt.get("sampled"));
        int seconds = Integer.parseInt(opt.get("seconds"));
        System.out.println("MemoryBudgetBenchmark " + opt + " on " + System.getProperty("java.vm.version"));

        Path dir = Files.createTempDirectory("ddprof-budget-");
        long rss0 = rssBytes();
        JavaProfiler p = BenchSupport.startProfiler(mode, "cpu=1ms", dir);
        Thread.sleep(1000);
        Map<String, Long> g0 = p.getDebugCounters();
        long rss1 = rssBytes();

        CountDownLatch never = new CountDownLatch(1);
        for (int i = 0; i < threads; i++) {
            Thread t = new Thread(() -> {
                try {
                    never.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "budget-parked-" + i);
            t.setDaemon(true);
            t.start();
        }
        Thread.sleep(500);
        Map<String, Long> g1 = p.getDebugCounters();

        ClassLoader parent = MemoryBudgetBenchmark.class.getClassLoader();
        BenchSupport.GenLoader loader = null;
        for (int i = 0; i < classes; i++) {
            if (i % 100 == 0) {
                loader = new BenchSupport.GenLoader(parent);
                KEEP.add(loader);
            }
            String name = String.format(Locale.ROOT, "gen.budget.C%06d", i);
            KEEP.add(BenchSupport.defineAndLink(loader, name, ClassBytes.trivial(name.replace('.', '/'), 50)));
        }
        Map<String, Long> g2 = p.getDebugCounters();

        ClassBytes.Chain[] all = new ClassBytes.Chain[sampled];
        for (int i = 0; i < sampled; i++) {
            if (i % 100 == 0) {
                loader = new BenchSupport.GenLoader(parent);
            }
            String name = String.format(Locale.ROOT, "gen.budget.W%05d", i);
            Class<?> c = BenchSupport.defineAndLink(loader, name, ClassBytes.worker(name.replace('.', '/'), 200, 19));
            all[i] = (ClassBytes.Chain) c.getDeclaredConstructor().newInstance();
        }
        Map<String, Long> g3 = p.getDebugCounters();
        Thread[] workers = new Thread[2];
        for (int t = 0; t < workers.length; t++) {
            final int start = t * sampled / workers.length;
            workers[t] = new Thread(() -> {
                int idx = start;
                long x = start + 1;
                while (running) {
                    x = all[idx].run(x, all, idx, 11);
                    idx = (idx + 12) % all.length;
                }
                sink += x;
            }, "budget-worker-" + t);
            workers[t].start();
        }
        Thread.sleep(seconds * 1000L);
        Path dump = dir.resolve("dump.jfr");
        p.dump(dump);
        Map<String, Long> g4 = p.getDebugCounters();
        long rss4 = rssBytes();
        running = false;
        for (Thread w : workers) {
            w.join();
        }
        int[] distinct = distinctMethods(dump);

        String[] cats = {"misc", "dictionary", "method_map", "line_tables", "class_registry", "thread_info",
            "native_symbols", "live_heap", "jfr_buffers", "calltrace", "sample_buffers"};
        System.out.printf(Locale.ROOT, "%n| category | after start | per thread | per class | dump peak | per sampled method |%n");
        System.out.println("|---|---:|---:|---:|---:|---:|");
        for (String c : cats) {
            String live = "native_mem_live_bytes." + c;
            String max = "native_mem_max_bytes." + c;
            // Dump-time categories are freed by the end of the dump: their peak since the
            // start of the sampling phase is what a dump costs.
            long peak = g4.get(max) - g3.get(live);
            System.out.printf(Locale.ROOT, "| %s | %s | %s | %s | %s | %s |%n", c,
                kib(g0.get(live)),
                bytes((g1.get(live) - g0.get(live)) / (double) threads),
                bytes((g2.get(live) - g1.get(live)) / (double) classes),
                kib(Math.max(0, peak)),
                bytes(Math.max(0, peak) / (double) distinct[0]));
        }
        System.out.printf(Locale.ROOT, "%ndistinct sampled methods %d in %d classes, samples %d; "
                + "the dump took %.1f ms and made %d allocations%n",
            distinct[0], distinct[1], distinct[2], g4.get("dump_ns_last") / 1e6, g4.get("dump_allocations_last"));
        System.out.printf(Locale.ROOT, "chunk overhead (allocator) after the dump: %s of %s live heap+mapped%n",
            kib(g4.get("native_mem_chunk_overhead_bytes")), kib(g4.get("native_mem_live_bytes")));
        long heapLive = 0;
        long heapOverhead = 0;
        for (String c : cats) {
            if (c.equals("calltrace") || c.equals("sample_buffers")) {
                continue;
            }
            heapLive += g4.get("native_mem_live_bytes." + c);
            heapOverhead += g4.get("native_mem_chunk_overhead_bytes." + c);
        }
        long resident = g4.get("native_mem_resident_bytes.calltrace") + g4.get("native_mem_resident_bytes.sample_buffers");
        long lower = heapLive + heapOverhead + resident;
        long freeHeld = g4.get("malloc_free_held_bytes");
        System.out.printf(Locale.ROOT, "RSS: before start %s, after start %s (+%s; the profiler's lower bound then %s), "
                + "after the dump %s%n", mib(rss0), mib(rss1), mib(rss1 - rss0), mib(lowerBound(g0)), mib(rss4));
        System.out.printf(Locale.ROOT, "profiler's share of RSS after the dump: lower %s (heap %s + overhead %s + "
                + "mapped resident %s), upper %s (+ free-held arena %s)%n", mib(lower), mib(heapLive),
            mib(heapOverhead), mib(resident), freeHeld < 0 ? "unknown" : mib(lower + freeHeld),
            freeHeld < 0 ? "unavailable" : mib(freeHeld));
        System.out.println("RESULT done");
        p.stop();
    }

    private static long lowerBound(Map<String, Long> g) {
        long v = g.get("native_mem_resident_bytes.calltrace") + g.get("native_mem_resident_bytes.sample_buffers");
        for (String c : new String[] {"misc", "dictionary", "method_map", "line_tables", "class_registry",
            "thread_info", "native_symbols", "live_heap", "jfr_buffers"}) {
            v += g.get("native_mem_live_bytes." + c) + g.get("native_mem_chunk_overhead_bytes." + c);
        }
        return v;
    }

    /** {distinct methods, distinct classes, samples} in the dump's execution samples. */
    private static int[] distinctMethods(Path file) throws Exception {
        Set<String> methods = new HashSet<>();
        Set<String> classes = new HashSet<>();
        int samples = 0;
        for (RecordedEvent e : RecordingFile.readAllEvents(file)) {
            if (!e.getEventType().getName().equals("datadog.ExecutionSample") || e.getStackTrace() == null) {
                continue;
            }
            samples++;
            for (RecordedFrame f : e.getStackTrace().getFrames()) {
                if (f.getMethod() != null && f.getMethod().getType() != null) {
                    String cls = f.getMethod().getType().getName();
                    classes.add(cls);
                    methods.add(cls + "." + f.getMethod().getName() + f.getMethod().getDescriptor());
                }
            }
        }
        return new int[] {methods.size(), classes.size(), samples};
    }

    private static long rssBytes() throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        return -1;
    }

    private static String kib(long b) {
        return String.format(Locale.ROOT, "%.1f KiB", b / 1024.0);
    }

    private static String mib(long b) {
        return String.format(Locale.ROOT, "%.1f MiB", b / 1048576.0);
    }

    private static String bytes(double b) {
        return String.format(Locale.ROOT, "%.0f B", b);
    }
}
