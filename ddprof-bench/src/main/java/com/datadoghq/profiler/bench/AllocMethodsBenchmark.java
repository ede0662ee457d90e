package com.datadoghq.profiler.bench;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Native memory of allocation profiling over many distinct allocating methods (docs/benchmarks.md,
 * "Allocation profiling"): {@link AllocMethodsWorker} in a fresh JVM per run, for no profiler,
 * ddprof {@code memory=262144:a} with {@code fjmethodid=lazy} and with the default method IDs, and
 * upstream's {@code com.datadoghq:ddprof} ({@code -Dupstream=/path/ddprof-X.jar}, in a JVM whose
 * class path has only that jar and the benchmark classes: the two libraries have the same class
 * names). Upstream takes allocation stacks through JVMTI {@code GetStackTrace}, which makes a
 * jmethodID for every sampled frame. Prints NMT committed deltas against the median of
 * {@code none} for the total, Class and Internal, and the jmethodIDs our counters report.
 * Properties: {@code rounds} (3), {@code classes} (20), {@code methods} (500 per class),
 * {@code perMethod} (524288 bytes), {@code modes}, {@code java}, {@code upstream}.
 */
public final class AllocMethodsBenchmark {
    private AllocMethodsBenchmark() {}

    public static void main(String[] args) throws Exception {
        String java = System.getProperty("java", System.getProperty("java.home") + "/bin/java");
        String cp = System.getProperty("java.class.path");
        String upstream = System.getProperty("upstream", "");
        int rounds = Integer.getInteger("rounds", 3);
        String classes = System.getProperty("classes", "20");
        String methods = System.getProperty("methods", "500");
        String perMethod = System.getProperty("perMethod", "524288");
        List<String> modes = BenchSupport.modes("modes", "none,lazy,true" + (upstream.isEmpty() ? "" : ",upstream"));
        // Upstream's jar in place of ours (the same class names).
        String upstreamCp = upstream.isEmpty() ? "" : BenchSupport.classPathWith(upstream);
        Map<String, List<Map<String, Long>>> runs = new HashMap<>();
        for (int round = 1; round <= rounds; round++) {
            for (String mode : modes) {
                List<String> cmd = new ArrayList<>(Arrays.asList(java, "-Xms256m", "-Xmx256m",
                        "-XX:NativeMemoryTracking=summary", "-cp",
                        mode.equals("upstream") ? upstreamCp : cp,
                        AllocMethodsWorker.class.getName(), mode, classes, methods, perMethod));
                ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
                // Both profilers honour it: every sampled method is seen in a run of seconds, as a
                // long-running service's rate-limited sampling eventually sees its allocation sites.
                pb.environment().put("DDPROF_TEST_DISABLE_RATE_LIMIT", "1");
                Process p = pb.start();
                Map<String, Long> kv = new HashMap<>();
                List<String> output = new ArrayList<>();
                try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(),
                        StandardCharsets.UTF_8))) {
                    for (String line; (line = r.readLine()) != null; ) {
                        output.add(line);
                        if (line.startsWith("RESULT ")) {
                            for (String f : line.substring(7).split(" ")) {
                                String[] x = f.split("=", 2);
                                if (!x[0].equals("mode")) {
                                    kv.put(x[0], Long.parseLong(x[1]));
                                }
                            }
                        }
                    }
                }
                p.waitFor();
                if (!kv.containsKey("Total")) {
                    System.out.printf("round %d %s: no result (exit %d):%n  %s%n", round, mode, p.exitValue(),
                            String.join("\n  ", output.subList(Math.max(0, output.size() - 15), output.size())));
                    continue;
                }
                runs.computeIfAbsent(mode, k -> new ArrayList<>()).add(kv);
                System.out.printf(Locale.ROOT, "round %d %-9s Total %d KB  Class %d KB  Internal %d KB  samples %d"
                        + "  ids preloaded %d  ids made by lazy %d%n", round, mode, kv.get("Total"), kv.get("Class"),
                        kv.get("Internal"), kv.getOrDefault("counter_alloc_samples", -1L),
                        kv.getOrDefault("counter_jmethodids_preloaded", -1L),
                        kv.getOrDefault("counter_method_resolve_lazy_jmethodids_created", -1L));
            }
        }
        System.out.println();
        System.out.println("| mode | NMT committed vs none: Total | Class | Internal | allocation samples "
                + "| jmethodIDs made (our counters) |");
        System.out.println("|---|---|---|---|---|---|");
        for (String mode : modes) {
            List<Map<String, Long>> r = runs.getOrDefault(mode, new ArrayList<>());
            String ids = mode.equals("lazy") ? fmt(median(r, "counter_method_resolve_lazy_jmethodids_created"))
                    : mode.equals("true") ? fmt(median(r, "counter_jmethodids_preloaded")) + " preloaded"
                    : "-";
            System.out.printf(Locale.ROOT, "| %s | %+,.0f KB | %+,.0f KB | %+,.0f KB | %s | %s |%n", mode,
                    median(r, "Total") - median(runs.get("none"), "Total"),
                    median(r, "Class") - median(runs.get("none"), "Class"),
                    median(r, "Internal") - median(runs.get("none"), "Internal"),
                    mode.equals("none") ? "-" : fmt(median(r, "counter_alloc_samples")), ids);
        }
    }

    private static String fmt(double v) {
        return Double.isNaN(v) ? "-" : String.format(Locale.ROOT, "%,.0f", v);
    }

    private static double median(List<Map<String, Long>> runs, String key) {
        List<Double> v = new ArrayList<>();
        if (runs != null) {
            for (Map<String, Long> m : runs) {
                if (m.containsKey(key)) {
                    v.add((double) m.get(key));
                }
            }
        }
        return v.isEmpty() ? Double.NaN : BenchSupport.median(v);
    }
}
