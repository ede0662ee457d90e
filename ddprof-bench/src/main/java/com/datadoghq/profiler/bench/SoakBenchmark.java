package com.datadoghq.profiler.bench;

import com.datadoghq.profiler.JavaProfiler;

import java.io.IOException;
import java.lang.management.ClassLoadingMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Soak benchmark (issue 10): one JVM profiled at {@code cpu=1ms} for {@code --minutes} on a
 * workload whose stacks keep changing ({@link SoakWorkload}), with a dump every second to a
 * rotating path; every {@code --interval} seconds a row of RSS, the profiler's native memory and
 * its call-trace table; at the end the growth of each over the first and the second half, and
 * whether it plateaued (second-half growth below {@code --threshold} MiB per 10 minutes).
 *
 * <p>Options ({@code --name=value}): {@code minutes} (30), {@code interval} (10 s), {@code threads}
 * (2), {@code dumpEvery} (1 s), {@code prefixDepth} (9: prefixes of 4-12 frames), {@code paths}
 * (256 per phase), {@code phaseSeconds} (5), {@code classes} (16 per generation), {@code iters}
 * (200), {@code genSeconds} (10), {@code threshold} (2 MiB per 10 min), {@code mode}
 * ({@code lazy}: the {@code fjmethodid} mode; {@code none}: no profiler, a control run for RSS), {@code options} (extra profiler options),
 * {@code dir} (where the recordings go; a fresh temporary directory by default, deleted at the
 * end).
 */
public final class SoakBenchmark {
    private static final double MIB = 1024.0 * 1024.0;

    private SoakBenchmark() {
    }

    /** One sampled row. */
    private static final class Row {
        double elapsed;
        long rss;
        long nativeLive;
        long calltraceResident;
        String topHeap;
        long traces;
        long traceBytes;
        long inserts;
        double dumpMsLast;
        double dumpMsMax;
        long dumpBytes;
        long samples;
        long loaded;
        long unloaded;
        long calls;
        long mallocInUse;
        long nonHeap;
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> opt = new java.util.HashMap<>();
        for (String a : args) {
            if (a.equals("-h") || a.equals("--help")) {
                System.out.println("SoakBenchmark [--minutes=30] [--interval=10] [--threads=2] [--dumpEvery=1]"
                        + " [--prefixDepth=9] [--paths=256] [--phaseSeconds=5] [--classes=16] [--iters=200]"
                        + " [--genSeconds=10] [--threshold=2] [--mode=lazy] [--options=...] [--dir=DIR]");
                return;
            }
            if (!a.startsWith("--") || a.indexOf('=') < 0) {
                throw new IllegalArgumentException("bad argument " + a + " (expected --name=value)");
            }
            opt.put(a.substring(2, a.indexOf('=')), a.substring(a.indexOf('=') + 1));
        }
        double minutes = Double.parseDouble(opt.getOrDefault("minutes", "30"));
        double interval = Double.parseDouble(opt.getOrDefault("interval", "10"));
        int threads = Integer.parseInt(opt.getOrDefault("threads", "2"));
        double dumpEvery = Double.parseDouble(opt.getOrDefault("dumpEvery", "1"));
        int prefixDepth = Integer.parseInt(opt.getOrDefault("prefixDepth", "9"));
        int paths = Integer.parseInt(opt.getOrDefault("paths", "256"));
        double phaseSeconds = Double.parseDouble(opt.getOrDefault("phaseSeconds", "5"));
        int classes = Integer.parseInt(opt.getOrDefault("classes", "16"));
        int iters = Integer.parseInt(opt.getOrDefault("iters", "200"));
        double genSeconds = Double.parseDouble(opt.getOrDefault("genSeconds", "10"));
        double threshold = Double.parseDouble(opt.getOrDefault("threshold", "2"));
        String mode = opt.getOrDefault("mode", "lazy");
        String extra = opt.getOrDefault("options", "");
        boolean ownDir = !opt.containsKey("dir");
        Path dir = ownDir ? Files.createTempDirectory("ddprof-soak-") : Paths.get(opt.get("dir"));
        Files.createDirectories(dir);

        SoakWorkload work = new SoakWorkload(threads, prefixDepth, paths, classes, iters, phaseSeconds, genSeconds);
        String command = "start,cpu=1ms,fjmethodid=" + mode + (extra.isEmpty() ? "" : "," + extra)
                + ",file=" + dir.resolve("profile.jfr");
        boolean none = mode.equals("none");
        JavaProfiler profiler = none ? null : JavaProfiler.getInstance();
        if (none) {
            System.out.println("# profiler: none (control run: the workload and the same dump loop without ddprof)");
        } else {
            String r = profiler.execute(command);
            System.out.println("# profiler: " + command + " -> " + (r == null ? "" : r.trim()));
        }
        System.out.println("# workload: " + work.describe());
        System.out.printf(Locale.ROOT, "# %.1f minutes, a dump every %.1f s (rotating, older ones deleted), a row every"
                + " %.0f s; RSS from /proc/self/status VmRSS; MiB = 2^20 bytes%n", minutes, dumpEvery, interval);
        System.out.println();
        System.out.println("| elapsed s | RSS MiB | native_mem_live MiB | largest heap categories, MiB | calltrace"
                + " resident MiB | calltrace_storage_traces | calltrace_storage_bytes | calltrace_storage_inserts"
                + " | dump ms, last / max | dump KB | samples | samples/s | classes loaded / unloaded | malloc in use MiB | JVM non-heap committed MiB |");
        System.out.println("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
        work.start();

        ClassLoadingMXBean cl = ManagementFactory.getClassLoadingMXBean();
        List<Row> rows = new ArrayList<>();
        long t0 = System.nanoTime();
        long end = t0 + (long) (minutes * 60e9);
        long dumpNs = (long) (dumpEvery * 1e9);
        long intervalNs = (long) (interval * 1e9);
        long nextDump = t0 + dumpNs;
        long nextRow = t0 + intervalNs;
        long dumps = 0;
        double dumpMsMax = 0;
        double dumpMsLast = 0;
        long dumpBytes = 0;
        long prevSamples = 0;
        double prevElapsed = 0;
        Path previous = null;
        while (true) {
            long now = System.nanoTime();
            long wake = Math.min(Math.min(nextDump, nextRow), end);
            if (now < wake) {
                Thread.sleep(Math.max(1, (wake - now) / 1_000_000));
                continue;
            }
            if (now >= nextRow || now >= end) {
                Map<String, Long> c = BenchSupport.counters(profiler);
                Row row = new Row();
                row.elapsed = (now - t0) / 1e9;
                row.rss = vmRssBytes();
                row.nativeLive = c.getOrDefault("native_mem_live_bytes", -1L);
                row.calltraceResident = c.getOrDefault("native_mem_resident_bytes.calltrace", -1L);
                row.topHeap = topHeapCategories(c, 3);
                row.traces = c.getOrDefault("calltrace_storage_traces", -1L);
                row.traceBytes = c.getOrDefault("calltrace_storage_bytes", -1L);
                row.inserts = c.getOrDefault("calltrace_storage_inserts", -1L);
                row.dumpMsLast = dumpMsLast;
                row.dumpMsMax = dumpMsMax;
                row.dumpBytes = dumpBytes;
                row.samples = c.getOrDefault("samples", -1L);
                row.loaded = cl.getTotalLoadedClassCount();
                row.unloaded = cl.getUnloadedClassCount();
                row.calls = work.calls();
                row.mallocInUse = c.getOrDefault("malloc_in_use_bytes", -1L);
                row.nonHeap = nonHeapCommitted();
                rows.add(row);
                double rate = (row.samples - prevSamples) / Math.max(1e-9, row.elapsed - prevElapsed);
                prevSamples = row.samples;
                prevElapsed = row.elapsed;
                System.out.printf(Locale.ROOT, "| %.0f | %.1f | %.2f | %s | %.2f | %d | %d | %d | %.1f / %.1f | %d"
                        + " | %d | %.0f | %d / %d | %.1f | %.1f |%n",
                        row.elapsed, row.rss / MIB, row.nativeLive / MIB, row.topHeap, row.calltraceResident / MIB,
                        row.traces, row.traceBytes, row.inserts, row.dumpMsLast, row.dumpMsMax,
                        row.dumpBytes / 1024, row.samples, rate, row.loaded, row.unloaded,
                        row.mallocInUse / MIB, row.nonHeap / MIB);
                System.out.flush();
                dumpMsMax = 0;
                while (nextRow <= now) {
                    nextRow += intervalNs;
                }
            }
            if (now >= nextDump && now < end) {
                Path p = dir.resolve("dump-" + (dumps++ % 3) + ".jfr");
                Files.deleteIfExists(p);
                long d0 = System.nanoTime();
                if (profiler != null) {
                    profiler.dump(p);
                }
                double ms = (System.nanoTime() - d0) / 1e6;
                dumpMsLast = ms;
                dumpMsMax = Math.max(dumpMsMax, ms);
                dumpBytes = Files.exists(p) ? Files.size(p) : -1;
                if (previous != null) {
                    Files.deleteIfExists(previous); // keep only the newest dump
                }
                previous = p;
                while (nextDump <= now) {
                    nextDump += dumpNs;
                }
            }
            if (now >= end) {
                break;
            }
        }
        work.stop();
        Map<String, Long> before = BenchSupport.counters(profiler);
        if (profiler != null) {
            profiler.stop();
        }
        Map<String, Long> after = BenchSupport.counters(profiler);
        System.out.println();
        System.out.printf(Locale.ROOT, "# %d dumps; %d workload calls; %d phases, %d class generations;"
                + " calltrace_storage_traces %d before stop, %d after; native_mem_live %.2f MiB before stop,"
                + " %.2f MiB after%n", dumps, work.calls(), work.phases(), work.generations(),
                before.getOrDefault("calltrace_storage_traces", -1L), after.getOrDefault("calltrace_storage_traces", -1L),
                before.getOrDefault("native_mem_live_bytes", -1L) / MIB,
                after.getOrDefault("native_mem_live_bytes", -1L) / MIB);
        verdict(rows, threshold);
        if (ownDir) {
            BenchSupport.deleteTree(dir);
        }
    }

    private interface Gauge {
        double of(Row r);
    }

    /** Growth per half (least-squares slope, per 10 minutes) of each gauge, and the plateau verdict. */
    private static void verdict(List<Row> rows, double threshold) {
        System.out.println();
        if (rows.size() < 4) {
            System.out.println("too few rows for a verdict");
            return;
        }
        int mid = rows.size() / 2;
        List<Row> first = rows.subList(0, mid);
        List<Row> second = rows.subList(mid, rows.size());
        System.out.printf(Locale.ROOT, "Growth per 10 minutes (least-squares slope over the rows of each half: first"
                + " %.0f-%.0f s, second %.0f-%.0f s); plateau = second half below %.1f MiB per 10 min%n%n",
                first.get(0).elapsed, first.get(first.size() - 1).elapsed, second.get(0).elapsed,
                second.get(second.size() - 1).elapsed, threshold);
        System.out.println("| gauge | first row | middle row | last row | max | growth, first half | growth,"
                + " second half | plateau |");
        System.out.println("|---|---|---|---|---|---|---|---|");
        boolean ok = true;
        ok &= line("RSS, MiB", rows, first, second, r -> r.rss / MIB, threshold, "%.1f");
        ok &= line("native_mem_live_bytes, MiB", rows, first, second, r -> r.nativeLive / MIB, threshold, "%.2f");
        line("malloc_in_use_bytes (glibc, whole process), MiB", rows, first, second, r -> r.mallocInUse / MIB,
                threshold, "%.1f");
        line("JVM non-heap committed (metaspace, code cache), MiB", rows, first, second, r -> r.nonHeap / MIB,
                -1, "%.1f");
        line("native_mem_resident_bytes.calltrace, MiB", rows, first, second, r -> r.calltraceResident / MIB,
                threshold, "%.2f");
        line("calltrace_storage_bytes, MiB", rows, first, second, r -> r.traceBytes / MIB, threshold, "%.2f");
        line("calltrace_storage_traces", rows, first, second, r -> r.traces, -1, "%.0f");
        line("calltrace_storage_inserts (must keep growing)", rows, first, second, r -> r.inserts, -1, "%.0f");
        System.out.println();
        System.out.println("Verdict: " + (ok ? "PLATEAU" : "GROWS") + " (RSS and native_mem_live_bytes, second-half"
                + " growth below " + threshold + " MiB per 10 minutes: " + (ok ? "yes" : "no") + ")");
    }

    private static boolean line(String name, List<Row> all, List<Row> first, List<Row> second, Gauge g,
            double threshold, String fmt) {
        double max = Double.NEGATIVE_INFINITY;
        for (Row r : all) {
            max = Math.max(max, g.of(r));
        }
        double s1 = slope(first, g) * 600;
        double s2 = slope(second, g) * 600;
        boolean ok = threshold < 0 || s2 < threshold;
        String verdict = threshold < 0 ? "—" : (ok ? "yes" : "**no**");
        System.out.printf(Locale.ROOT, "| %s | " + fmt + " | " + fmt + " | " + fmt + " | " + fmt + " | %+.2f | %+.2f"
                + " | %s |%n", name, g.of(all.get(0)), g.of(all.get(all.size() / 2)), g.of(all.get(all.size() - 1)),
                max, s1, s2, verdict);
        return ok;
    }

    /** Least-squares slope of the gauge per second of elapsed time. */
    private static double slope(List<Row> rows, Gauge g) {
        double n = rows.size();
        double sx = 0;
        double sy = 0;
        for (Row r : rows) {
            sx += r.elapsed;
            sy += g.of(r);
        }
        double mx = sx / n;
        double my = sy / n;
        double num = 0;
        double den = 0;
        for (Row r : rows) {
            num += (r.elapsed - mx) * (g.of(r) - my);
            den += (r.elapsed - mx) * (r.elapsed - mx);
        }
        return den == 0 ? 0 : num / den;
    }

    /** The {@code n} largest heap categories of native_mem_live_bytes (mapped ones have a resident gauge). */
    private static String topHeapCategories(Map<String, Long> c, int n) {
        String prefix = "native_mem_live_bytes.";
        Set<String> mapped = new HashSet<>();
        for (String k : c.keySet()) {
            if (k.startsWith("native_mem_resident_bytes.")) {
                mapped.add(k.substring("native_mem_resident_bytes.".length()));
            }
        }
        List<Map.Entry<String, Long>> heap = new ArrayList<>();
        for (Map.Entry<String, Long> e : c.entrySet()) {
            if (e.getKey().startsWith(prefix) && !mapped.contains(e.getKey().substring(prefix.length()))) {
                heap.add(e);
            }
        }
        heap.sort((a, b) -> Long.compare(b.getValue(), a.getValue()));
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < Math.min(n, heap.size()); i++) {
            if (sb.length() > 0) {
                sb.append(", ");
            }
            sb.append(heap.get(i).getKey().substring(prefix.length()))
                    .append(String.format(Locale.ROOT, " %.2f", heap.get(i).getValue() / MIB));
        }
        return sb.toString();
    }

    /** Committed bytes of the JVM's non-heap pools (metaspace, compressed class space, code heaps). */
    private static long nonHeapCommitted() {
        long sum = 0;
        for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
            if (pool.getType() == MemoryType.NON_HEAP) {
                sum += pool.getUsage().getCommitted();
            }
        }
        return sum;
    }

    private static long vmRssBytes() throws IOException {
        for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                String[] f = line.trim().split("\\s+");
                return Long.parseLong(f[1]) * 1024;
            }
        }
        return -1;
    }
}
