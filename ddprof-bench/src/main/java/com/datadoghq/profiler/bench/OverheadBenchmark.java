package com.datadoghq.profiler.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;

/**
 * CPU overhead of ddprof beside the JDK's own JFR, on a CPU-bound workload ({@link CpuWorkload}).
 *
 * <p>Every measurement runs in a fresh child JVM ({@link OverheadWorker}) so each mode gets an
 * identical clean JVM. A round runs every (mode, threads) pair once, in shuffled order; each
 * profiled run is compared with the {@code none} run of the same round and thread count, by work
 * per process-CPU-second (ops / process CPU time), which holds up on a noisy host where a JVM
 * sometimes gets less CPU than it asks for. The summary gives, per mode and thread count, the
 * median and [min-max] of that ratio over the rounds, the achieved samples/s per thread, the extra
 * process CPU per sample, ddprof's own walk time per sample, and the latency of a dump and a stop
 * taken at the end with the workers still busy.
 *
 * <p>System properties (all optional):
 * <ul>
 *   <li>{@code rounds} (5): rounds of all modes</li>
 *   <li>{@code modes} ({@code none,ddprof-10ms,ddprof-1ms,jfr-10ms,jfr-1ms}): {@code none} is
 *       always added; {@code ddprof-itimer-<interval>} selects ddprof's itimer engine</li>
 *   <li>{@code threads} ({@code 1,2}): busy-thread counts</li>
 *   <li>{@code warmup} (3) and {@code measure} (8): seconds per child</li>
 *   <li>{@code seed} (time): shuffle seed</li>
 *   <li>{@code java} (this JVM's {@code bin/java}): the child JVM</li>
 *   <li>{@code jvmArgs} ({@code -Xms256m -Xmx256m}): extra child JVM options, space separated</li>
 *   <li>{@code out} (none): also write every raw run as CSV to this file</li>
 * </ul>
 */
public final class OverheadBenchmark {
    private static final String DEFAULT_MODES = "none,ddprof-10ms,ddprof-1ms,jfr-10ms,jfr-1ms";

    private OverheadBenchmark() {
    }

    /** One child JVM's result line. */
    static final class Run {
        int round;
        String mode;
        int threads;
        long ops;
        long cpuNs;
        long wallNs;
        long samples;
        long walkNs;
        long dumpNs;
        long stopNs;
        long nativeDumpNs;
        long dumpBytes;
        String load;

        double opsPerCpuSecond() {
            return ops / (cpuNs / 1e9);
        }

        double cpuNsPerOp() {
            return (double) cpuNs / ops;
        }

        /** CPU actually used per busy thread, as a share of the wall time (1.0 = a full core each). */
        double cpuShare() {
            return (double) cpuNs / wallNs / threads;
        }
    }

    public static void main(String[] args) throws Exception {
        int rounds = Integer.getInteger("rounds", 5);
        double warmup = Double.parseDouble(System.getProperty("warmup", "3"));
        double measure = Double.parseDouble(System.getProperty("measure", "8"));
        long seed = Long.getLong("seed", System.nanoTime());
        List<String> modes = new ArrayList<>(Arrays.asList(System.getProperty("modes", DEFAULT_MODES).split(",")));
        modes.replaceAll(String::trim);
        modes.removeIf(String::isEmpty);
        if (!modes.contains("none")) {
            modes.add(0, "none");
        }
        List<Integer> threadCounts = new ArrayList<>();
        for (String t : System.getProperty("threads", "1,2").split(",")) {
            threadCounts.add(Integer.parseInt(t.trim()));
        }
        String java = System.getProperty("java",
                Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        List<String> jvmArgs = new ArrayList<>();
        for (String a : System.getProperty("jvmArgs", "-Xms256m -Xmx256m").trim().split("\\s+")) {
            if (!a.isEmpty()) {
                jvmArgs.add(a);
            }
        }
        String classpath = System.getProperty("java.class.path");

        int perRound = modes.size() * threadCounts.size();
        System.out.printf(Locale.ROOT, "# overhead benchmark: %d rounds x %d runs, warmup %.0f s, measure %.0f s, "
                        + "seed %d (est. %.1f min)%n", rounds, perRound, warmup, measure, seed,
                rounds * perRound * (warmup + measure + 1.5) / 60);
        System.out.println("# java: " + java + " " + String.join(" ", jvmArgs));
        System.out.println("# host: " + hostLine());

        Random random = new Random(seed);
        List<Run> runs = new ArrayList<>();
        for (int round = 1; round <= rounds; round++) {
            List<String[]> order = new ArrayList<>();
            for (String mode : modes) {
                for (int threads : threadCounts) {
                    order.add(new String[] {mode, Integer.toString(threads)});
                }
            }
            Collections.shuffle(order, random);
            for (String[] job : order) {
                Run run = runChild(java, jvmArgs, classpath, job[0], Integer.parseInt(job[1]), warmup, measure);
                run.round = round;
                runs.add(run);
                System.out.printf(Locale.ROOT,
                        "round %d %-18s threads=%d ops=%d cpu=%.2fs cpu-share=%.2f ns/op=%.0f samples=%d "
                                + "dump=%.1fms load=%s%n",
                        round, run.mode, run.threads, run.ops, run.cpuNs / 1e9, run.cpuShare(), run.cpuNsPerOp(),
                        run.samples, run.dumpNs / 1e6, run.load);
            }
        }

        String out = System.getProperty("out");
        if (out != null) {
            writeCsv(Paths.get(out), runs);
        }
        System.out.println();
        System.out.print(summary(runs, modes, threadCounts, measure));
    }

    private static Run runChild(String java, List<String> jvmArgs, String classpath, String mode, int threads,
                                double warmup, double measure) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>();
        cmd.add(java);
        cmd.addAll(jvmArgs);
        cmd.add("-cp");
        cmd.add(classpath);
        cmd.add(OverheadWorker.class.getName());
        cmd.add(mode);
        cmd.add(Integer.toString(threads));
        cmd.add(Double.toString(measure));
        cmd.add(Double.toString(warmup));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String result = null;
        StringBuilder output = new StringBuilder();
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = r.readLine()) != null) {
                if (line.startsWith("RESULT ")) {
                    result = line;
                } else {
                    output.append(line).append('\n');
                }
            }
        }
        if (!p.waitFor((long) (warmup + measure) + 120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
        }
        if (result == null || p.exitValue() != 0) {
            throw new IllegalStateException("child " + cmd + " failed (exit " + p.exitValue() + "):\n" + output);
        }
        Map<String, String> kv = new HashMap<>();
        for (String token : result.substring("RESULT ".length()).split(" ")) {
            int eq = token.indexOf('=');
            kv.put(token.substring(0, eq), token.substring(eq + 1));
        }
        Run run = new Run();
        run.mode = kv.get("mode");
        run.threads = Integer.parseInt(kv.get("threads"));
        run.ops = Long.parseLong(kv.get("ops"));
        run.cpuNs = Long.parseLong(kv.get("cpu_ns"));
        run.wallNs = Long.parseLong(kv.get("wall_ns"));
        run.samples = Long.parseLong(kv.get("samples"));
        run.walkNs = Long.parseLong(kv.get("walk_ns"));
        run.dumpNs = Long.parseLong(kv.get("dump_ns"));
        run.stopNs = Long.parseLong(kv.get("stop_ns"));
        run.nativeDumpNs = Long.parseLong(kv.get("native_dump_ns"));
        run.dumpBytes = Long.parseLong(kv.get("dump_bytes"));
        run.load = loadAverage();
        return run;
    }

    /** The markdown summary: one row per profiled mode and thread count. */
    static String summary(List<Run> runs, List<String> modes, List<Integer> threadCounts, double measure) {
        StringBuilder sb = new StringBuilder();
        Map<String, Run> baseline = new HashMap<>();
        for (Run r : runs) {
            if (r.mode.equals("none")) {
                baseline.put(r.round + "/" + r.threads, r);
            }
        }
        sb.append("| mode | threads | work/CPU-s vs none, median [min-max] | wall ops/s vs none | samples/s/thread "
                + "| CPU µs/sample | walk µs/sample | dump ms | stop ms | dump KB |\n");
        sb.append("|---|---|---|---|---|---|---|---|---|---|\n");
        for (String mode : modes) {
            for (int threads : threadCounts) {
                List<Run> rs = new ArrayList<>();
                for (Run r : runs) {
                    if (r.mode.equals(mode) && r.threads == threads) {
                        rs.add(r);
                    }
                }
                if (rs.isEmpty()) {
                    continue;
                }
                if (mode.equals("none")) {
                    double nsPerOp = median(rs, Run::cpuNsPerOp);
                    sb.append(String.format(Locale.ROOT, "| none | %d | 1 (%.1f µs CPU/op, CPU share %.2f) | 1 "
                                    + "| — | — | — | — | — | — |\n",
                            threads, nsPerOp / 1e3, median(rs, Run::cpuShare)));
                    continue;
                }
                List<Double> ratios = new ArrayList<>();
                List<Double> wallRatios = new ArrayList<>();
                List<Double> costs = new ArrayList<>();
                for (Run r : rs) {
                    Run base = baseline.get(r.round + "/" + r.threads);
                    if (base == null) {
                        continue;
                    }
                    ratios.add(r.opsPerCpuSecond() / base.opsPerCpuSecond());
                    wallRatios.add((r.ops / (double) r.wallNs) / (base.ops / (double) base.wallNs));
                    if (r.samples > 0) {
                        double extraNsPerOp = r.cpuNsPerOp() - base.cpuNsPerOp();
                        costs.add(extraNsPerOp * r.ops / r.samples / 1e3);
                    }
                }
                boolean counters = rs.get(0).walkNs >= 0;
                sb.append(String.format(Locale.ROOT, "| %s | %d | %s | %s | %.0f | %s | %s | %s | %s | %.0f |\n",
                        mode, threads,
                        ratios.isEmpty() ? "—" : String.format(Locale.ROOT, "%.3f [%.3f-%.3f]",
                                medianOf(ratios), Collections.min(ratios), Collections.max(ratios)),
                        wallRatios.isEmpty() ? "—" : String.format(Locale.ROOT, "%.3f", medianOf(wallRatios)),
                        median(rs, r -> r.samples / (r.wallNs / 1e9) / r.threads),
                        costs.isEmpty() ? "—" : String.format(Locale.ROOT, "%.1f [%.1f-%.1f]",
                                medianOf(costs), Collections.min(costs), Collections.max(costs)),
                        counters ? String.format(Locale.ROOT, "%.2f",
                                median(rs, r -> r.samples > 0 ? r.walkNs / (double) r.samples / 1e3 : 0)) : "—",
                        rangeMs(rs, r -> r.dumpNs / 1e6),
                        String.format(Locale.ROOT, "%.1f", median(rs, r -> r.stopNs / 1e6)),
                        median(rs, r -> r.dumpBytes / 1024.0)));
            }
        }
        sb.append(String.format(Locale.ROOT, "%nRatio: (ops/process-CPU-s) / (same for the `none` run of the same round "
                + "and thread count); >1 is noise. CPU µs/sample = (cpu/op - cpu_none/op) x ops / samples. "
                + "Walk = ddprof's `unwinding_ticks_async` / samples (signal handler: walk + record). "
                + "Dump/stop: wall time of `dump(Path)` / `stop()` after %.0f s of the measured window, "
                + "workers still busy.%n", measure));
        return sb.toString();
    }

    private static String rangeMs(List<Run> rs, ToDoubleFunction<Run> f) {
        List<Double> v = new ArrayList<>();
        for (Run r : rs) {
            v.add(f.applyAsDouble(r));
        }
        return String.format(Locale.ROOT, "%.1f [%.1f-%.1f]", medianOf(v), Collections.min(v), Collections.max(v));
    }

    private static double median(List<Run> rs, ToDoubleFunction<Run> f) {
        List<Double> v = new ArrayList<>();
        for (Run r : rs) {
            v.add(f.applyAsDouble(r));
        }
        return medianOf(v);
    }

    static double medianOf(List<Double> values) {
        List<Double> v = new ArrayList<>(values);
        Collections.sort(v);
        int n = v.size();
        if (n == 0) {
            return Double.NaN;
        }
        return n % 2 == 1 ? v.get(n / 2) : (v.get(n / 2 - 1) + v.get(n / 2)) / 2;
    }

    private static void writeCsv(Path file, List<Run> runs) throws IOException {
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(file, StandardCharsets.UTF_8))) {
            w.println("round,mode,threads,ops,cpu_ns,wall_ns,samples,walk_ns,dump_ns,stop_ns,native_dump_ns,"
                    + "dump_bytes,load1");
            for (Run r : runs) {
                w.printf(Locale.ROOT, "%d,%s,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%s%n", r.round, r.mode, r.threads, r.ops,
                        r.cpuNs, r.wallNs, r.samples, r.walkNs, r.dumpNs, r.stopNs, r.nativeDumpNs, r.dumpBytes,
                        r.load);
            }
        }
    }

    private static String loadAverage() {
        try {
            String s = new String(Files.readAllBytes(Paths.get("/proc/loadavg")), StandardCharsets.US_ASCII);
            return s.split(" ")[0];
        } catch (IOException | RuntimeException e) {
            return "?";
        }
    }

    private static String hostLine() {
        Map<String, String> info = new LinkedHashMap<>();
        info.put("cpus", Integer.toString(Runtime.getRuntime().availableProcessors()));
        try {
            for (String line : Files.readAllLines(Paths.get("/proc/cpuinfo"))) {
                if (line.startsWith("model name")) {
                    info.put("cpu", line.substring(line.indexOf(':') + 1).trim());
                    break;
                }
            }
        } catch (IOException | RuntimeException ignored) {
            // not Linux: leave it out
        }
        info.put("os", System.getProperty("os.name") + " " + System.getProperty("os.version"));
        info.put("jdk", System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version"));
        info.put("load", loadAverage());
        StringBuilder sb = new StringBuilder();
        info.forEach((k, v) -> sb.append(k).append('=').append(v).append("; "));
        return sb.toString();
    }
}
