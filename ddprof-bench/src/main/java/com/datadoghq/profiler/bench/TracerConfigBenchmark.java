package com.datadoghq.profiler.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The cost of the Datadog tracer's default command string (CPU, wall-clock with the thread filter,
 * allocation and live-heap sampling, the tracer's context attribute) against CPU sampling alone, ours
 * beside upstream java-profiler, on a real program: the Kotlin compiler compiling a generated source
 * set several times in one JVM ({@link KotlinCompileWorker}), a dump after each compile.
 *
 * <p>Modes: {@code none}; {@code upstream-cpu} and {@code ours-cpu} ({@code cpu=10ms}); {@code
 * upstream-tracer} and {@code ours-tracer} ({@link #TRACER}). Ours runs with its default method IDs, as
 * the tracer's string sets none. Each run is a fresh JVM; a round runs every mode once, shuffled; a
 * mode's cost is its wall time (profiler start to the last dump) and its process CPU time over that
 * span, each divided by {@code none}'s in the same round.
 *
 * <p>Options: {@code kt.files} (40), {@code kt.compiles} (4), {@code kt.modes}, {@code upstream}
 * (required for the upstream modes: its jar), {@code kotlin.cp} (required), and those of {@link
 * BenchSupport} ({@code rounds}, {@code seed}, {@code jvmArgs}, {@code quietWait}, ...).
 * {@code scripts/bench-tracer.sh} sets them.
 */
public final class TracerConfigBenchmark {
    /**
     * The tracer's default profiler options (dd-java-agent's command, less {@code start} and {@code file}):
     * docs/benchmarks.md, "The tracer's full configuration".
     */
    static final String TRACER = "jfr,loglevel=NONE,jstackdepth=512,cstack=vm,safemode=20,"
            + "attributes=_dd.trace.operation,generations=false,cpu=10m,wall=~50m,filter=0,memory=262144b:aL:0.50";

    private static final Map<String, String> OPTIONS = new LinkedHashMap<>();

    static {
        OPTIONS.put("upstream-cpu", "cpu=10ms");
        OPTIONS.put("ours-cpu", "cpu=10ms");
        OPTIONS.put("upstream-tracer", TRACER);
        OPTIONS.put("ours-tracer", TRACER);
    }

    private TracerConfigBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        int files = Integer.getInteger("kt.files", 40);
        int compiles = Integer.getInteger("kt.compiles", 4);
        String upstream = System.getProperty("upstream", "");
        List<String> modes = BenchSupport.modes("kt.modes",
                upstream.isEmpty() ? "none,ours-cpu,ours-tracer" : "none,upstream-cpu,ours-cpu,upstream-tracer,ours-tracer");
        for (String m : modes) {
            if (!m.equals("none") && !OPTIONS.containsKey(m)) {
                throw new IllegalArgumentException("unknown mode " + m + "; modes: none, " + OPTIONS.keySet());
            }
            if (m.startsWith("upstream") && upstream.isEmpty()) {
                throw new IllegalArgumentException("mode " + m + " needs -Dupstream=/path/ddprof-X.jar");
            }
        }
        if (!modes.contains("none")) {
            modes.add(0, "none");
        }
        String upstreamCp = upstream.isEmpty() ? "" : BenchSupport.classPathWith(upstream);
        String cp = System.getProperty("kotlin.cp");
        if (cp == null) {
            throw new IllegalArgumentException("-Dkotlin.cp is required (scripts/bench-tracer.sh sets it)");
        }
        BenchSupport.Rounds rounds = new BenchSupport.Rounds("TracerConfigBenchmark");
        List<String> jvm = rounds.jvmArgs("-XX:NativeMemoryTracking=summary", "-Xms512m", "-Xmx512m",
                "-Dsettle=0", "-Dkotlin.cp=" + cp);
        List<BenchSupport.Run> runs = rounds.run(modes, mode -> {
            if (mode.equals("none")) {
                return rounds.child(jvm, KotlinCompileWorker.class, "none", files, compiles);
            }
            boolean up = mode.startsWith("upstream");
            String workerMode = up ? "upstream" : "default";
            return up
                    ? rounds.child(upstreamCp, jvm, KotlinCompileWorker.class, workerMode, files, compiles, OPTIONS.get(mode))
                    : rounds.child(jvm, KotlinCompileWorker.class, workerMode, files, compiles, OPTIONS.get(mode));
        });

        System.out.println();
        System.out.printf(Locale.ROOT, "Kotlin compiler, %d generated files compiled %d times in one JVM, a dump after"
                + " each compile; %d rounds, modes shuffled in each; %s%n", files, compiles, rounds.rounds,
                rounds.loadSummary());
        System.out.println("tracer string: " + TRACER);
        System.out.println();
        System.out.println("| mode | wall time vs none, each round | process CPU vs none, each round"
                + " | first dump ms, each round | later dumps ms (median of medians) | samples (median) |");
        System.out.println("|---|---|---|---|---|---|");
        for (String mode : modes) {
            if (mode.equals("none")) {
                continue;
            }
            List<String> wall = new ArrayList<>();
            List<String> cpu = new ArrayList<>();
            List<String> first = new ArrayList<>();
            List<Double> later = new ArrayList<>();
            List<Double> samples = new ArrayList<>();
            for (BenchSupport.Run r : BenchSupport.of(runs, mode)) {
                BenchSupport.Run base = baseOf(runs, r.round);
                wall.add(String.format(Locale.ROOT, "%.3f", r.d("total_ms") / base.d("total_ms")));
                cpu.add(String.format(Locale.ROOT, "%.3f", r.d("total_cpu_ms") / base.d("total_cpu_ms")));
                first.add(String.format(Locale.ROOT, "%.0f", r.d("first_dump_ms")));
                later.add(r.d("later_dump_ms"));
                samples.add((double) r.l("samples", 0));
            }
            System.out.printf(Locale.ROOT, "| %s | %s | %s | %s | %.0f | %.0f |%n", mode, String.join(" / ", wall),
                    String.join(" / ", cpu), String.join(" / ", first), BenchSupport.median(later),
                    BenchSupport.median(samples));
        }
    }

    private static BenchSupport.Run baseOf(List<BenchSupport.Run> runs, int round) {
        for (BenchSupport.Run r : BenchSupport.of(runs, "none")) {
            if (r.round == round) {
                return r;
            }
        }
        throw new IllegalStateException("no run of none in round " + round);
    }
}
