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
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;

/**
 * CPU overhead of ddprof beside the JDK's own JFR, async-profiler and upstream java-profiler, on a
 * CPU-bound workload ({@link CpuWorkload}).
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
 *   <li>{@code modes} ({@code none,ddprof-10ms,ddprof-1ms,jfr-10ms,jfr-1ms}, plus
 *       {@code asprof-{cpu,ctimer,itimer}-{10ms,1ms}} when async-profiler's jar is on the class path and
 *       {@code upstream-{10ms,1ms}} with {@code upstream}): {@code none} is always added;
 *       {@code ddprof-itimer-<interval>} selects ddprof's itimer engine; extra ddprof options follow a
 *       colon, {@code ;}-separated ({@code ddprof-1ms:cstack=fp}); see {@link OverheadWorker}</li>
 *   <li>{@code upstream} (none): upstream java-profiler's jar, run in place of ours in its modes</li>
 *   <li>{@code threads} ({@code 1,2}): busy-thread counts</li>
 *   <li>{@code warmup} (3) and {@code measure} (8): seconds per child</li>
 *   <li>{@code seed} (time): shuffle seed</li>
 *   <li>{@code retries} (1), {@code retryBudget} (10), {@code minShare} (0.9): a run whose JVM got
 *       less than {@code minShare} of the CPU it asked for (process CPU / wall / threads) ran on a
 *       busy host; it is run again, up to {@code retries} times (and {@code retryBudget} reruns in
 *       all, which bounds the wall time); the attempt that got the most CPU counts</li>
 *   <li>{@code java} (this JVM's {@code bin/java}): the child JVM</li>
 *   <li>{@code quietWait} (30), {@code quietBudget} (120): before each child, wait up to
 *       {@code quietWait} seconds (and {@code quietBudget} seconds in all) until the rest of the host
 *       uses less than 0.2 CPU (from {@code /proc/stat}), so that a build elsewhere on the machine
 *       finishes rather than lands in a measurement</li>
 *   <li>{@code jvmArgs} ({@code -Xms256m -Xmx256m}): extra child JVM options, space separated</li>
 *   <li>{@code out} (none): also write every raw run as CSV to this file</li>
 *   <li>{@code from} (none): run nothing; print the summary of these CSV files (comma separated,
 *       as written by {@code out}; their rounds are kept apart)</li>
 *   <li>{@code reportMinShare} (0): leave runs that got less than this share of their CPU out of
 *       the summary (with {@code from}, to read a run made on a busy host)</li>
 *   <li>{@code bench.workload} ({@code cpu}): {@code switch} runs {@link OverheadWorker}'s context-switch-heavy
 *       workload instead of {@link CpuWorkload} (each worker ping-pongs with an echo thread through pipes;
 *       use it with {@code minShare=0}, since blocked threads never ask for a whole CPU)</li>
 *   <li>{@code bench.levelIters} (500), {@code bench.leafIters} (12500): work per op, passed on to
 *       the children</li>
 * </ul>
 */
public final class OverheadBenchmark {
    private static final String DEFAULT_MODES = "none,ddprof-10ms,ddprof-1ms,jfr-10ms,jfr-1ms";
    /** Added to the default modes when the peers are there (async-profiler's jar, {@code -Dupstream}). */
    private static final String ASPROF_MODES =
            "asprof-cpu-10ms,asprof-cpu-1ms,asprof-ctimer-10ms,asprof-ctimer-1ms,asprof-itimer-10ms,asprof-itimer-1ms";
    private static final String UPSTREAM_MODES = "upstream-10ms,upstream-1ms";

    /** The child JVM running now, stopped with us if we are interrupted or killed. */
    private static volatile Process current;

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
        /** The dumping thread's CPU time in the dump (-1: not measured, an older CSV). */
        long dumpCpuNs = -1;
        long walkMaxNs = -1;
        /** The median handler of the dumped chunk (-1: not measured, an older CSV or a peer). */
        long walkP50Ns = -1;
        String walker = "-";
        long dumpBytes;
        /** Context switches of the whole process over the window ({@code bench.workload=switch} prices them). */
        long ctxSwitches;
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
        int retries = Integer.getInteger("retries", 1);
        int retryBudget = Integer.getInteger("retryBudget", 10);
        double minShare = Double.parseDouble(System.getProperty("minShare", "0.9"));
        long quietWaitMs = (long) (Double.parseDouble(System.getProperty("quietWait", "30")) * 1000);
        long quietBudgetMs = (long) (Double.parseDouble(System.getProperty("quietBudget", "120")) * 1000);
        String upstream = System.getProperty("upstream", "");
        String defaultModes = DEFAULT_MODES + (hasAsyncProfiler() ? "," + ASPROF_MODES : "")
                + (upstream.isEmpty() ? "" : "," + UPSTREAM_MODES);
        List<String> modes = new ArrayList<>(Arrays.asList(System.getProperty("modes", defaultModes).split(",")));
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
        // The work per op (bench.levelIters, bench.leafIters) goes to every child.
        for (String name : System.getProperties().stringPropertyNames()) {
            if (name.startsWith("bench.")) {
                jvmArgs.add("-D" + name + "=" + System.getProperty(name));
            }
        }
        String classpath = System.getProperty("java.class.path");
        String upstreamClasspath = upstream.isEmpty() ? "" : BenchSupport.classPathWith(upstream);

        String from = System.getProperty("from");
        if (from != null) {
            List<Run> runs = new ArrayList<>();
            int roundBase = 0;
            for (String file : from.split(",")) {
                List<Run> part = readCsv(Paths.get(file.trim()));
                int maxRound = 0;
                for (Run r : part) {
                    maxRound = Math.max(maxRound, r.round);
                    r.round += roundBase;
                    if (!modes.contains(r.mode)) {
                        modes.add(r.mode);
                    }
                    if (!threadCounts.contains(r.threads)) {
                        threadCounts.add(r.threads);
                    }
                }
                roundBase += maxRound;
                runs.addAll(part);
            }
            System.out.print(summary(runs, modes, threadCounts, measure));
            return;
        }

        for (String mode : modes) {
            if (mode.startsWith("upstream") && upstream.isEmpty()) {
                throw new IllegalArgumentException("mode " + mode + " needs -Dupstream=/path/ddprof-X.jar "
                        + "(scripts/bench.sh fetches com.datadoghq:ddprof:1.22.0)");
            }
            if (mode.startsWith("asprof") && !hasAsyncProfiler()) {
                throw new IllegalArgumentException("mode " + mode + " needs async-profiler's jar on the class path "
                        + "(tools.profiler:async-profiler, a dependency of ddprof-bench)");
            }
        }
        int perRound = modes.size() * threadCounts.size();
        System.out.printf(Locale.ROOT, "# overhead benchmark: %d rounds x %d runs, warmup %.0f s, measure %.0f s, "
                        + "seed %d (est. %.1f min)%n", rounds, perRound, warmup, measure, seed,
                rounds * perRound * (warmup + measure + 1.5) / 60);
        System.out.println("# java: " + java + " " + String.join(" ", jvmArgs));
        System.out.println("# host: " + hostLine());

        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            Process p = current;
            if (p != null) {
                p.destroyForcibly();
            }
        }));
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
                quietBudgetMs -= waitForQuietHost(Math.min(quietWaitMs, quietBudgetMs));
                String cp = job[0].startsWith("upstream") ? upstreamClasspath : classpath;
                Run run = runChild(java, jvmArgs, cp, job[0], Integer.parseInt(job[1]), warmup, measure);
                for (int retry = 1; retry <= retries && retryBudget > 0 && run.cpuShare() < minShare; retry++) {
                    retryBudget--;
                    System.out.printf(Locale.ROOT, "round %d %-18s threads=%d got %.2f of its CPU (load %s): "
                            + "host busy, run again (%d/%d, %d reruns left)%n", round, run.mode, run.threads,
                            run.cpuShare(), run.load, retry, retries, retryBudget);
                    quietBudgetMs -= waitForQuietHost(Math.min(quietWaitMs, quietBudgetMs));
                    Run again = runChild(java, jvmArgs, cp, job[0], Integer.parseInt(job[1]), warmup, measure);
                    if (again.cpuShare() > run.cpuShare()) {
                        run = again;
                    }
                }
                run.round = round;
                runs.add(run);
                System.out.printf(Locale.ROOT,
                        "round %d %-18s threads=%d ops=%d cpu=%.2fs cpu-share=%.2f ns/op=%.0f samples=%d "
                                + "dump=%.1fms walker=%s load=%s%n",
                        round, run.mode, run.threads, run.ops, run.cpuNs / 1e9, run.cpuShare(), run.cpuNsPerOp(),
                        run.samples, run.dumpNs / 1e6, run.walker, run.load);
            }
        }

        String out = System.getProperty("out");
        if (out != null) {
            writeCsv(Paths.get(out), runs);
        }
        System.out.println();
        System.out.print(summary(runs, modes, threadCounts, measure));
    }

    private static boolean hasAsyncProfiler() {
        try {
            Class.forName("one.profiler.AsyncProfiler", false, OverheadBenchmark.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException e) {
            return false;
        }
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
        current = p;
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
        run.dumpCpuNs = Long.parseLong(kv.getOrDefault("dump_cpu_ns", "-1"));
        run.walkMaxNs = Long.parseLong(kv.getOrDefault("walk_max_ns", "-1"));
        run.walkP50Ns = Long.parseLong(kv.getOrDefault("walk_p50_ns", "-1"));
        run.walker = kv.getOrDefault("walker", "-");
        run.dumpBytes = Long.parseLong(kv.get("dump_bytes"));
        run.ctxSwitches = Long.parseLong(kv.getOrDefault("ctx_switches", "-1"));
        run.load = loadAverage();
        return run;
    }

    /** The markdown summary: one row per profiled mode and thread count. */
    static String summary(List<Run> allRuns, List<String> modes, List<Integer> threadCounts, double measure) {
        StringBuilder sb = new StringBuilder();
        double reportMinShare = Double.parseDouble(System.getProperty("reportMinShare", "0"));
        List<Run> runs = new ArrayList<>();
        for (Run r : allRuns) {
            if (r.cpuShare() >= reportMinShare) {
                runs.add(r);
            }
        }
        Map<String, Run> baseline = new HashMap<>();
        for (Run r : runs) {
            if (r.mode.equals("none")) {
                baseline.put(r.round + "/" + r.threads, r);
            }
        }
        sb.append("| mode | threads | work/CPU-s vs none, median [min-max] | CPU share | samples/s/thread "
                + "| CPU µs/sample | walk µs/sample (median) | dump ms | dump CPU ms | stop ms | dump KB |\n");
        sb.append("|---|---|---|---|---|---|---|---|---|---|---|\n");
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
                    sb.append(String.format(Locale.ROOT, "| none | %d | 1 (%.1f µs CPU/op, %.0f context switches/s) | %.2f "
                                    + "| — | — | — | — | — | — |\n",
                            threads, nsPerOp / 1e3, median(rs, r -> r.ctxSwitches / (r.wallNs / 1e9)),
                            median(rs, Run::cpuShare)));
                    continue;
                }
                List<Double> ratios = new ArrayList<>();
                List<Double> costs = new ArrayList<>();
                for (Run r : rs) {
                    Run base = baseline.get(r.round + "/" + r.threads);
                    if (base == null) {
                        continue;
                    }
                    ratios.add(r.opsPerCpuSecond() / base.opsPerCpuSecond());
                    if (r.samples > 0) {
                        double extraNsPerOp = r.cpuNsPerOp() - base.cpuNsPerOp();
                        costs.add(extraNsPerOp * r.ops / r.samples / 1e3);
                    }
                }
                boolean counters = rs.get(0).walkNs >= 0;
                String label = mode;
                String walker = rs.get(0).walker;
                if (!"-".equals(walker)) {
                    for (Run r : rs) {
                        if (!walker.equals(r.walker)) {
                            walker = "mixed";
                        }
                    }
                    label = mode + " (" + walker + " walker)";
                }
                sb.append(String.format(Locale.ROOT, "| %s | %d | %s | %s | %.0f | %s | %s | %s | %s | %s | %.0f |\n",
                        label, threads,
                        ratios.isEmpty() ? "—" : String.format(Locale.ROOT, "%.3f [%.3f-%.3f]%s",
                                medianOf(ratios), Collections.min(ratios), Collections.max(ratios),
                                ratios.size() == rounds(allRuns) ? "" : " (" + ratios.size() + " rounds)"),
                        String.format(Locale.ROOT, "%.2f", median(rs, Run::cpuShare)),
                        median(rs, r -> r.samples / (r.cpuNs / 1e9)),
                        costs.isEmpty() ? "—" : String.format(Locale.ROOT, "%.1f [%.1f-%.1f]",
                                medianOf(costs), Collections.min(costs), Collections.max(costs)),
                        counters ? String.format(Locale.ROOT, "%.2f%s",
                                median(rs, r -> r.samples > 0 ? r.walkNs / (double) r.samples / 1e3 : 0),
                                rs.stream().allMatch(r -> r.walkP50Ns >= 0)
                                        ? String.format(Locale.ROOT, " (%.2f)", median(rs, r -> r.walkP50Ns / 1e3))
                                        : "") : "—",
                        rangeMs(rs, r -> r.dumpNs / 1e6),
                        rs.stream().allMatch(r -> r.dumpCpuNs >= 0) ? rangeMs(rs, r -> r.dumpCpuNs / 1e6) : "—",
                        String.format(Locale.ROOT, "%.1f", median(rs, r -> r.stopNs / 1e6)),
                        median(rs, r -> r.dumpBytes / 1024.0)));
            }
        }
        sb.append(String.format(Locale.ROOT, "%nRatio: (ops/process-CPU-s) / (same for the `none` run of the same round "
                + "and thread count); >1 is noise. CPU µs/sample = (cpu/op - cpu_none/op) x ops / samples. "
                + "Walk = ddprof's `unwinding_ticks_async` / samples (signal handler: walk + record, a mean of wall "
                + "time, so handlers preempted on a busy host weigh on it); in brackets the median handler "
                + "of the dumped chunk (`unwinding_ns_p50`). "
                + "Dump/stop: wall time of `dump(Path)` / `stop()` after %.0f s of the measured window, "
                + "workers still busy. Dump CPU: the dumping thread's CPU time in `dump(Path)` (without the "
                + "waits for a CPU; JFR's dump also works on threads of its own). CPU share: median process CPU / wall / threads (1.00 = the JVM got every "
                + "core it asked for). Samples/s/thread: samples per second of process CPU, i.e. per second a "
                + "thread ran (equal to samples/s/thread when the JVM got its cores).%n", measure));
        if (runs.size() < allRuns.size()) {
            sb.append(String.format(Locale.ROOT, "Left out: %d of %d runs that got less than %.2f of their CPU "
                    + "(and the profiled runs of their round); the ratio cell says from how many rounds it is.%n",
                    allRuns.size() - runs.size(), allRuns.size(), reportMinShare));
        }
        int starved = 0;
        for (Run r : runs) {
            if (r.cpuShare() < 0.9) {
                starved++;
            }
        }
        if (starved > 0) {
            sb.append(String.format(Locale.ROOT, "WARNING: %d of %d runs got less than 90%% of the CPU they asked for: "
                    + "the host was busy; consider a rerun.%n", starved, runs.size()));
        }
        return sb.toString();
    }

    private static int rounds(List<Run> runs) {
        Set<Integer> rounds = new HashSet<>();
        for (Run r : runs) {
            rounds.add(r.round);
        }
        return rounds.size();
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
                    + "dump_bytes,load1,walk_max_ns,walker,dump_cpu_ns,walk_p50_ns");
            for (Run r : runs) {
                w.printf(Locale.ROOT, "%d,%s,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%s,%d,%s,%d,%d%n", r.round, r.mode, r.threads,
                        r.ops, r.cpuNs, r.wallNs, r.samples, r.walkNs, r.dumpNs, r.stopNs, r.nativeDumpNs, r.dumpBytes,
                        r.load, r.walkMaxNs, r.walker, r.dumpCpuNs, r.walkP50Ns);
            }
        }
    }

    private static List<Run> readCsv(Path file) throws IOException {
        List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        List<Run> runs = new ArrayList<>();
        for (String line : lines.subList(1, lines.size())) {
            if (line.isBlank()) {
                continue;
            }
            String[] f = line.split(",");
            Run r = new Run();
            r.round = Integer.parseInt(f[0]);
            r.mode = f[1];
            r.threads = Integer.parseInt(f[2]);
            r.ops = Long.parseLong(f[3]);
            r.cpuNs = Long.parseLong(f[4]);
            r.wallNs = Long.parseLong(f[5]);
            r.samples = Long.parseLong(f[6]);
            r.walkNs = Long.parseLong(f[7]);
            r.dumpNs = Long.parseLong(f[8]);
            r.stopNs = Long.parseLong(f[9]);
            r.nativeDumpNs = Long.parseLong(f[10]);
            r.dumpBytes = Long.parseLong(f[11]);
            r.load = f.length > 12 ? f[12] : "?";
            r.walkMaxNs = f.length > 13 ? Long.parseLong(f[13]) : -1;
            r.walker = f.length > 14 ? f[14] : "-";
            r.dumpCpuNs = f.length > 15 ? Long.parseLong(f[15]) : -1;
            r.walkP50Ns = f.length > 16 ? Long.parseLong(f[16]) : -1;
            runs.add(r);
        }
        return runs;
    }

    /**
     * Waits (up to {@code maxMs}) until the host's other work uses less than 0.2 CPU over a second,
     * judged from {@code /proc/stat}; no child runs meanwhile, so that is everybody else.
     *
     * @return the milliseconds spent waiting
     */
    static long waitForQuietHost(long maxMs) throws InterruptedException {
        long start = System.currentTimeMillis();
        boolean announced = false;
        while (true) {
            double busy = busyCpus(1000);
            long waited = System.currentTimeMillis() - start;
            if (Double.isNaN(busy) || busy < 0.2 || waited >= maxMs) {
                if (announced) {
                    System.out.printf(Locale.ROOT, "# waited %.0f s for the host (now %.2f CPUs busy)%n",
                            waited / 1e3, busy);
                }
                return waited;
            }
            if (!announced) {
                System.out.printf(Locale.ROOT, "# host busy (%.2f CPUs used elsewhere): waiting up to %.0f s%n",
                        busy, maxMs / 1e3);
                announced = true;
            }
        }
    }

    /** CPUs kept busy on the whole host over {@code ms}, from {@code /proc/stat}; NaN if unreadable. */
    private static double busyCpus(long ms) throws InterruptedException {
        long[] a = procStat();
        Thread.sleep(ms);
        long[] b = procStat();
        if (a == null || b == null) {
            return Double.NaN;
        }
        long total = b[0] - a[0];
        long idle = b[1] - a[1];
        int cpus = Runtime.getRuntime().availableProcessors();
        return total <= 0 ? Double.NaN : (double) (total - idle) / total * cpus;
    }

    /** {total, idle+iowait} jiffies of the "cpu" line of /proc/stat, or null. */
    private static long[] procStat() {
        try {
            for (String line : Files.readAllLines(Paths.get("/proc/stat"), StandardCharsets.US_ASCII)) {
                if (line.startsWith("cpu ")) {
                    String[] f = line.trim().split("\\s+");
                    long total = 0;
                    for (int i = 1; i < f.length && i <= 8; i++) {
                        total += Long.parseLong(f[i]);
                    }
                    return new long[] {total, Long.parseLong(f[4]) + Long.parseLong(f[5])};
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux
        }
        return null;
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
