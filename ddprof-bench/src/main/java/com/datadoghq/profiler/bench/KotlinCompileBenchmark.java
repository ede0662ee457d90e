package com.datadoghq.profiler.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Native memory and dump latency of the jmethodID modes on a real program (issue "fjmethodid=lazy with no
 * jmethodIDs at all", "Benchmarks"): the Kotlin compiler compiling a generated source set repeatedly in one
 * JVM ({@link KotlinCompileWorker}), thousands of classes loaded and many of them sampled.
 *
 * <p>Each run is a fresh child JVM ({@code -XX:NativeMemoryTracking=summary -Xms512m -Xmx512m}); a round
 * runs every mode once, shuffled; a mode's cost beyond {@code none} is its NMT committed Class + Internal
 * at the end minus {@code none}'s in the same round; tables give the median [min..max] over the rounds.
 *
 * <p>Options: {@code kt.files} (40), {@code kt.compiles} (3), {@code kt.modes}
 * ({@code none,true,false,lazy}), {@code kt.settle} (5500 ms), {@code kotlin.cp} (required: the compiler's
 * classpath; {@code scripts/bench-kotlin.sh} resolves it), and those of {@link BenchSupport}
 * ({@code rounds} (3), {@code seed}, {@code jvmArgs}, {@code quietWait}, ...).
 */
public final class KotlinCompileBenchmark {
    private KotlinCompileBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        int files = Integer.getInteger("kt.files", 40);
        int compiles = Integer.getInteger("kt.compiles", 3);
        String upstream = System.getProperty("upstream", "");
        List<String> modes = BenchSupport.modes("kt.modes", "none,true,false,lazy" + (upstream.isEmpty() ? "" : ",upstream"));
        if (modes.contains("upstream") && upstream.isEmpty()) {
            throw new IllegalArgumentException("mode upstream needs -Dupstream=/path/ddprof-X.jar");
        }
        String upstreamCp = upstream.isEmpty() ? "" : BenchSupport.classPathWith(upstream);
        if (!modes.contains("none")) {
            modes.add(0, "none");
        }
        String cp = System.getProperty("kotlin.cp");
        if (cp == null) {
            throw new IllegalArgumentException("-Dkotlin.cp is required (scripts/bench-kotlin.sh sets it)");
        }
        BenchSupport.Rounds rounds = new BenchSupport.Rounds("KotlinCompileBenchmark");
        List<String> jvm = rounds.jvmArgs("-XX:NativeMemoryTracking=summary", "-Xms512m", "-Xmx512m",
                "-Dsettle=" + Long.getLong("kt.settle", 5500), "-Dkotlin.cp=" + cp);
        List<BenchSupport.Run> runs = rounds.run(modes,
                mode -> mode.equals("upstream")
                        ? rounds.child(upstreamCp, jvm, KotlinCompileWorker.class, mode, files, compiles)
                        : rounds.child(jvm, KotlinCompileWorker.class, mode, files, compiles));

        System.out.println();
        System.out.printf(Locale.ROOT, "Kotlin compiler, %d generated files compiled %d times in one JVM, cpu=10ms,"
                + " a dump after each compile; NMT committed at the end, MiB; median [min..max] of %d fresh JVMs%n",
                files, compiles, rounds.rounds);
        System.out.println();
        System.out.println("| mode | Class + Internal beyond none | Class beyond none | Internal beyond none"
                + " | Total - heap beyond none | classes loaded | samples | jmethodIDs (preloaded / lazy-created)"
                + " | first dump (ms) | later dumps (ms) | first dump, CPU (ms) | later dumps, CPU (ms) | first dump, page faults | compile (ms) |");
        System.out.println("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
        for (String mode : modes) {
            List<Double> both = new ArrayList<>();
            List<Double> cls = new ArrayList<>();
            List<Double> internal = new ArrayList<>();
            List<Double> total = new ArrayList<>();
            List<Double> classes = new ArrayList<>();
            List<Double> samples = new ArrayList<>();
            List<Double> preloaded = new ArrayList<>();
            List<Double> created = new ArrayList<>();
            List<Double> first = new ArrayList<>();
            List<Double> later = new ArrayList<>();
            List<Double> firstCpu = new ArrayList<>();
            List<Double> laterCpu = new ArrayList<>();
            List<Double> faults = new ArrayList<>();
            List<Double> compile = new ArrayList<>();
            for (BenchSupport.Run r : BenchSupport.of(runs, mode)) {
                BenchSupport.Run none = BenchSupport.find(runs, "none", r.round);
                if (none != null) {
                    cls.add((r.d("Class") - none.d("Class")) / 1024);
                    internal.add((r.d("Internal") - none.d("Internal")) / 1024);
                    both.add((r.d("Class") + r.d("Internal") - none.d("Class") - none.d("Internal")) / 1024);
                    total.add((r.d("Total_minus_heap") - none.d("Total_minus_heap")) / 1024);
                }
                classes.add(r.d("classes"));
                samples.add(r.d("samples"));
                preloaded.add(r.d("jmethodids_preloaded"));
                created.add(r.d("method_resolve_lazy_jmethodids_created"));
                first.add(r.d("first_dump_ms"));
                later.add(r.d("later_dump_ms"));
                firstCpu.add(r.d("first_dump_cpu_ms"));
                laterCpu.add(r.d("later_dump_cpu_ms"));
                faults.add(r.d("first_dump_minflt"));
                compile.add(r.d("compile_ms"));
            }
            boolean base = mode.equals("none");
            System.out.printf(Locale.ROOT, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |%n",
                    base ? "no profiler" : "`" + mode + "`",
                    base ? "-" : "**" + BenchSupport.mmm(both, "%+.2f") + "**",
                    base ? "-" : BenchSupport.mmm(cls, "%+.2f"),
                    base ? "-" : BenchSupport.mmm(internal, "%+.2f"),
                    base ? "-" : BenchSupport.mmm(total, "%+.2f"),
                    BenchSupport.mmm(classes, "%,.0f"),
                    base ? "-" : BenchSupport.mmm(samples, "%,.0f"),
                    base ? "-" : BenchSupport.mmm(preloaded, "%,.0f") + " / " + BenchSupport.mmm(created, "%,.0f"),
                    base ? "-" : BenchSupport.mmm(first, "%.1f"),
                    base ? "-" : BenchSupport.mmm(later, "%.1f"),
                    base ? "-" : BenchSupport.mmm(firstCpu, "%.1f"),
                    base ? "-" : BenchSupport.mmm(laterCpu, "%.1f"),
                    base ? "-" : BenchSupport.mmm(faults, "%,.0f"),
                    BenchSupport.mmm(compile, "%,.0f"));
        }
        System.out.println();
        System.out.println(rounds.loadSummary());
    }
}
