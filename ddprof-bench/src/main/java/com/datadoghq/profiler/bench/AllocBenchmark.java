package com.datadoghq.profiler.bench;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;

/**
 * Allocation profiling's cost (docs/benchmarks.md, "Allocation profiling"): an allocation-heavy
 * workload ({@link AllocWorker}) in a fresh JVM per run, throughput per CPU-second of the process
 * against no profiler, for ddprof's {@code memory=524287:a} (default and lazy method IDs, and with
 * liveness), the JDK's own {@code jdk.ObjectAllocationSample} and async-profiler's {@code alloc}
 * ({@code -Dasprof=/path/libasyncProfiler.so}). Every child runs with NMT summary, so native memory
 * is compared too. Rounds run every mode once, shuffled. Properties: {@code rounds} (5),
 * {@code threads} (1), {@code warmup} (3 s), {@code measure} (6 s), {@code modes}, {@code java}.
 *
 * <p>{@code -Dworkload=nativemem}: native allocations instead ({@link NativeMemWorker}, docs/benchmarks.md
 * "Native memory profiling"): ddprof's and async-profiler's {@code nativemem} at every allocation (the
 * default) and at 1 MiB.
 */
public final class AllocBenchmark {
    private AllocBenchmark() {}

    public static void main(String[] args) throws Exception {
        String java = System.getProperty("java", System.getProperty("java.home") + "/bin/java");
        String cp = System.getProperty("java.class.path");
        int rounds = Integer.getInteger("rounds", 5);
        int threads = Integer.getInteger("threads", 1);
        String warmup = System.getProperty("warmup", "3");
        String measure = System.getProperty("measure", "6");
        String asprof = System.getProperty("asprof", "");
        boolean nativemem = "nativemem".equals(System.getProperty("workload", "alloc"));
        String worker = (nativemem ? NativeMemWorker.class : AllocWorker.class).getName();
        List<String> modes = nativemem
                ? BenchSupport.modes("modes", "none,ddprof,ddprof-1m" + (asprof.isEmpty() ? "" : ",asprof,asprof-1m"))
                : BenchSupport.modes("modes", "none,ddprof,ddprof-lazy,ddprof-live,jfr" + (asprof.isEmpty() ? "" : ",asprof"));
        Map<String, List<double[]>> runs = new HashMap<>();
        Random rnd = new Random(Long.getLong("seed", System.nanoTime()));
        for (int round = 1; round <= rounds; round++) {
            List<String> order = new ArrayList<>(modes);
            Collections.shuffle(order, rnd);
            for (String mode : order) {
                List<String> cmd = new ArrayList<>();
                cmd.add(java);
                cmd.add("-Xms512m");
                cmd.add("-Xmx512m");
                cmd.add("-XX:NativeMemoryTracking=summary");
                Path out = Files.createTempDirectory("alloc-bench-");
                if (mode.startsWith("asprof")) {
                    String what = !nativemem ? "event=alloc,alloc=524287"
                            : mode.endsWith("-1m") ? "nativemem=1048576" : "nativemem=0";
                    cmd.add("-agentpath:" + asprof + "=start," + what + ",file=" + out.resolve("a.jfr"));
                }
                cmd.add("-cp");
                cmd.add(cp);
                cmd.add(worker);
                cmd.add(mode);
                cmd.add(Integer.toString(threads));
                cmd.add(measure);
                cmd.add(warmup);
                Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
                Map<String, String> kv = new HashMap<>();
                List<String> output = new ArrayList<>();
                try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(),
                        StandardCharsets.UTF_8))) {
                    for (String line; (line = r.readLine()) != null; ) {
                        output.add(line);
                        if (line.startsWith("RESULT ")) {
                            for (String f : line.substring(7).split(" ")) {
                                String[] x = f.split("=", 2);
                                kv.put(x[0], x[1]);
                            }
                        }
                    }
                }
                p.waitFor();
                BenchSupport.deleteTree(out);
                if (!kv.containsKey("ops")) {
                    System.out.printf("round %d %s: no result (exit %d):%n  %s%n", round, mode, p.exitValue(),
                            String.join("\n  ", output.subList(Math.max(0, output.size() - 15), output.size())));
                    continue;
                }
                double ops = Double.parseDouble(kv.get("ops"));
                double cpu = Double.parseDouble(kv.get("cpu_ns")) / 1e9;
                double[] v = {ops / cpu, Double.parseDouble(kv.get("samples")), Double.parseDouble(kv.get("nmt_kb")),
                    ops / Double.parseDouble(measure)};
                runs.computeIfAbsent(mode, k -> new ArrayList<>()).add(v);
                System.out.printf(Locale.ROOT, "round %d %-12s ops/CPU-s %.3e  ops/s %.3e  samples %.0f  NMT %.0f KB "
                        + "(load %s)%n", round, mode, v[0], v[3], v[1], v[2], BenchSupport.loadavg());
            }
        }
        double none = median(runs.get("none"), 0);
        double noneNmt = median(runs.get("none"), 2);
        double noneOps = median(runs.get("none"), 3);
        System.out.println();
        System.out.println("| mode | work/CPU-s vs none, median [min-max] | work/s vs none | samples in the window | NMT committed vs none |");
        System.out.println("|---|---|---|---|---|");
        for (String mode : modes) {
            List<double[]> r = runs.getOrDefault(mode, Collections.emptyList());
            List<Double> rel = new ArrayList<>();
            for (double[] v : r) {
                rel.add(v[0] / none);
            }
            System.out.printf(Locale.ROOT, "| %s | %s | %.3f | %.0f | %+.0f KB |%n", mode, BenchSupport.mmm(rel, "%.3f"),
                    median(r, 3) / noneOps, median(r, 1), median(r, 2) - noneNmt);
        }
    }

    private static double median(List<double[]> runs, int i) {
        List<Double> v = new ArrayList<>();
        if (runs != null) {
            for (double[] x : runs) {
                v.add(x[i]);
            }
        }
        return BenchSupport.median(v);
    }
}
