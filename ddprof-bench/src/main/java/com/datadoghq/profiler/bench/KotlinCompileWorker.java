package com.datadoghq.profiler.bench;

import com.datadoghq.profiler.JavaProfiler;

import java.io.File;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * One run of {@link KotlinCompileBenchmark}, in a fresh JVM started with
 * {@code -XX:NativeMemoryTracking=summary}:
 * {@code KotlinCompileWorker <none|true|false|lazy> <files> <compiles>}, with {@code -Dkotlin.cp} the
 * Kotlin compiler's classpath (kotlin-compiler-embeddable and its dependencies, kotlin-stdlib among them).
 *
 * <p>A real program that loads thousands of classes and runs many of them: the Kotlin compiler, loaded
 * through its own class loader, compiles a generated source set of {@code files} files (data classes,
 * interfaces, generics, lambdas, extension functions, {@code when}, cross-file references)
 * {@code compiles} times into fresh output directories, with ddprof sampling it at {@code cpu=10ms} in
 * the given {@code fjmethodid} mode and a dump after every compile (the first dump and the later ones
 * timed on the dumping thread). Then, after HotSpot's arena pool had a pass to empty, the NMT summary.
 * Prints {@code RESULT mode=.. Class=<KB> Internal=<KB> Total_minus_heap=<KB> classes=.. first_dump_ms=..
 * later_dump_ms=.. compile_ms=.. first_dump_cpu_ms=.. later_dump_cpu_ms=.. first_dump_minflt=..} (the dumping
 * thread's CPU time and minor page faults)
 * and the profiler's counters. {@code -Dkt.keepDumps=true} keeps the working directory with the dumps
 * ({@code dumpN.jfr}) and prints its path.
 */
public final class KotlinCompileWorker {
    private KotlinCompileWorker() {
    }

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        int files = Integer.parseInt(args[1]);
        int compiles = Integer.parseInt(args[2]);
        // The profiler's options besides the method-ID mode (TracerConfigBenchmark passes the tracer's).
        String options = args.length > 3 ? args[3] : "cpu=10ms";
        String cp = System.getProperty("kotlin.cp");
        if (cp == null || cp.isEmpty()) {
            throw new IllegalArgumentException("-Dkotlin.cp (the Kotlin compiler's classpath) is required");
        }
        List<URL> urls = new ArrayList<>();
        String stdlib = null;
        for (String p : cp.split(File.pathSeparator)) {
            urls.add(new File(p).toURI().toURL());
            if (new File(p).getName().matches("kotlin-stdlib-[0-9.]+\\.jar")) {
                stdlib = p;
            }
        }
        if (stdlib == null) {
            throw new IllegalArgumentException("no kotlin-stdlib jar in -Dkotlin.cp");
        }
        Path dir = Files.createTempDirectory("ddprof-kotlin-");
        Path src = dir.resolve("src");
        generate(src, files);

        BenchSupport.nmtCommittedKb(); // loads the JMX classes before anything is measured
        long total0 = System.nanoTime();
        long cpu0 = BenchSupport.processCpuNs();
        JavaProfiler profiler = BenchSupport.startProfiler(mode, options, dir);
        URLClassLoader loader = new URLClassLoader(urls.toArray(new URL[0]), ClassLoader.getPlatformClassLoader());
        Class<?> k2 = Class.forName("org.jetbrains.kotlin.cli.jvm.K2JVMCompiler", true, loader);
        Object compiler = k2.getConstructor().newInstance();
        Method exec = k2.getMethod("exec", PrintStream.class, String[].class);
        PrintStream quiet = new PrintStream(OutputStream.nullOutputStream(), true, StandardCharsets.UTF_8);

        long compileNs = 0;
        long firstDumpNs = -1;
        long firstDumpCpuNs = -1;
        long firstDumpFaults = -1;
        List<Double> laterDumps = new ArrayList<>();
        List<Double> laterDumpsCpu = new ArrayList<>();
        // The dump runs on the calling thread: its CPU time is the dump's cost without the waits for
        // a CPU that a loaded host adds to the wall time.
        java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
        for (int i = 0; i < compiles; i++) {
            Path out = dir.resolve("out" + i);
            String[] kargs = {"-d", out.toString(), "-no-stdlib", "-no-reflect", "-classpath", stdlib,
                "-Xno-call-assertions", src.toString()};
            long t0 = System.nanoTime();
            Object code = exec.invoke(compiler, quiet, kargs);
            compileNs += System.nanoTime() - t0;
            if (!"OK".equals(String.valueOf(code))) {
                throw new IllegalStateException("kotlinc exit " + code + " on compile " + i);
            }
            if (profiler != null) {
                if (i == 0) {
                    pauseForProfiler();
                }
                long f0 = minorFaults();
                long c0 = threads.getCurrentThreadCpuTime();
                long d0 = System.nanoTime();
                profiler.dump(dir.resolve("dump" + i + ".jfr"));
                long d = System.nanoTime() - d0;
                long c = threads.getCurrentThreadCpuTime() - c0;
                if (firstDumpNs < 0) {
                    firstDumpNs = d;
                    firstDumpCpuNs = c;
                    firstDumpFaults = minorFaults() - f0;
                } else {
                    laterDumps.add(d / 1e6);
                    laterDumpsCpu.add(c / 1e6);
                }
            }
        }
        long totalNs = System.nanoTime() - total0;
        long totalCpuNs = BenchSupport.processCpuNs() - cpu0;
        Map<String, Long> counters = BenchSupport.counters(profiler);
        // HotSpot empties its arena-chunk pool every 5 s: let one pass run before the summary.
        Thread.sleep(Long.getLong("settle", 5500));
        Map<String, Long> nmt = BenchSupport.nmtCommittedKb();
        long classes = java.lang.management.ManagementFactory.getClassLoadingMXBean().getLoadedClassCount();

        BenchSupport.Result r = new BenchSupport.Result()
                .put("mode", mode)
                .put("Class", nmt.getOrDefault("Class", 0L))
                .put("Internal", nmt.getOrDefault("Internal", 0L))
                .put("Total_minus_heap", nmt.get("Total") - nmt.getOrDefault("Java Heap", 0L))
                .put("classes", classes)
                .put("compile_ms", String.format(Locale.ROOT, "%.0f", compileNs / 1e6))
                .put("total_ms", String.format(Locale.ROOT, "%.0f", totalNs / 1e6))
                .put("total_cpu_ms", String.format(Locale.ROOT, "%.0f", totalCpuNs / 1e6))
                .put("first_dump_ms", String.format(Locale.ROOT, "%.1f", firstDumpNs / 1e6))
                .put("later_dump_ms", String.format(Locale.ROOT, "%.1f",
                        laterDumps.isEmpty() ? -1 : BenchSupport.median(laterDumps)))
                .put("first_dump_cpu_ms", String.format(Locale.ROOT, "%.1f", firstDumpCpuNs / 1e6))
                .put("later_dump_cpu_ms", String.format(Locale.ROOT, "%.1f",
                        laterDumpsCpu.isEmpty() ? -1 : BenchSupport.median(laterDumpsCpu)))
                .put("first_dump_minflt", firstDumpFaults);
        for (String k : new String[] {"samples", "jmethodids_preloaded", "method_resolve_lazy_jmethodids_created",
                "method_resolve_lazy_metadata", "klass_registry_entries", "klass_registry_bytes",
                "fjmethodid_lazy_fallback"}) {
            r.put(k, counters.getOrDefault(k, 0L));
        }
        r.print();
        if (Boolean.getBoolean("kt.printCounters")) {
            // Every counter and gauge after the dumps (peaks of the memory categories among them).
            new java.util.TreeMap<>(counters).forEach((k, v) -> System.out.println("COUNTER " + k + "=" + v));
        }
        if (profiler != null) {
            profiler.stop();
        }
        loader.close();
        if (Boolean.getBoolean("kt.keepDumps")) {
            // For reading the recordings afterwards (event counts by type, stack depths).
            System.out.println("KEPT " + dir);
        } else {
            BenchSupport.deleteTree(dir);
        }
    }

    /**
     * With {@code -Dkt.pauseBeforeFirstDump=MS}: prints {@code PAUSE <pid>} and sleeps that long before the
     * first dump, so that a sampling profiler (perf) can be attached to the dump alone.
     */
    private static void pauseForProfiler() throws InterruptedException {
        long ms = Long.getLong("kt.pauseBeforeFirstDump", 0);
        if (ms > 0) {
            System.out.println("PAUSE " + ProcessHandle.current().pid());
            System.out.flush();
            Thread.sleep(ms);
        }
    }

    /**
     * Minor page faults of the calling thread so far ({@code /proc/thread-self/stat}, field 10): a
     * dump's first touches of fresh memory, which in a VM guest cost several microseconds each.
     * -1 where the file is not there.
     */
    static long minorFaults() {
        try {
            String stat = Files.readString(Path.of("/proc/thread-self/stat"));
            // Fields after the command name (which may hold spaces), from field 3 on.
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return Long.parseLong(f[7]);
        } catch (java.io.IOException | RuntimeException e) {
            return -1;
        }
    }

    /** {@code files} Kotlin files, each using the previous one's types so resolution crosses files. */
    private static void generate(Path src, int files) throws Exception {
        Files.createDirectories(src);
        for (int i = 0; i < files; i++) {
            String prev = i == 0 ? null : "gen.p" + (i - 1);
            StringBuilder k = new StringBuilder();
            k.append("package gen.p").append(i).append("\n\n");
            if (prev != null) {
                k.append("import ").append(prev).append(".Record").append(i - 1).append("\n");
                k.append("import ").append(prev).append(".render\n\n");
            }
            k.append("data class Record").append(i).append("(val id: Int, val name: String, val tags: List<String>)\n\n");
            k.append("interface Shape").append(i).append(" { fun area(): Double }\n");
            k.append("class Circle").append(i).append("(val r: Double) : Shape").append(i)
                    .append(" { override fun area() = Math.PI * r * r }\n");
            k.append("class Rect").append(i).append("(val w: Double, val h: Double) : Shape").append(i)
                    .append(" { override fun area() = w * h }\n\n");
            k.append("fun Record").append(i).append(".render(): String = \"$name#$id\" + tags.joinToString(prefix = \"[\", postfix = \"]\")\n\n");
            k.append("object Util").append(i).append(" {\n");
            k.append("    fun <T : Comparable<T>> top(xs: List<T>, n: Int): List<T> = xs.sortedDescending().take(n)\n");
            k.append("    fun group(rs: List<Record").append(i).append(">): Map<String, Int> =\n");
            k.append("        rs.groupBy { it.name }.mapValues { (_, v) -> v.sumOf { it.id } }\n");
            k.append("    fun describe(x: Any?): String = when (x) {\n");
            k.append("        is Int -> \"int $x\"\n        is String -> \"str ${x.length}\"\n");
            k.append("        is Record").append(i).append(" -> x.render()\n        null -> \"null\"\n        else -> x.toString()\n    }\n");
            for (int m = 0; m < 12; m++) {
                k.append("    fun m").append(m).append("(xs: List<Int>): Int {\n");
                k.append("        var acc = ").append(m).append("\n");
                k.append("        for (x in xs.filter { it % ").append(m + 2).append(" != 0 }.map { it * ").append(m + 1)
                        .append(" }) acc += x\n");
                k.append("        val s: Shape").append(i).append(" = if (acc % 2 == 0) Circle").append(i)
                        .append("(acc.toDouble()) else Rect").append(i).append("(1.0, acc.toDouble())\n");
                k.append("        return acc + s.area().toInt() + top(xs, 3).sum()\n    }\n");
            }
            if (prev != null) {
                k.append("    fun link(r: Record").append(i - 1).append("): Record").append(i)
                        .append(" = Record").append(i).append("(r.id + 1, r.render(), r.tags + \"p").append(i)
                        .append("\")\n");
            }
            k.append("}\n");
            Files.writeString(src.resolve("F" + i + ".kt"), k.toString());
        }
    }
}
