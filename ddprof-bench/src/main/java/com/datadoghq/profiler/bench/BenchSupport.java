package com.datadoghq.profiler.bench;

import com.datadoghq.profiler.JavaProfiler;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.management.ObjectName;

/**
 * What the lazy-jmethodID benchmarks ({@link MemoryBenchmark}, {@link ClassChurnBenchmark},
 * {@link DumpLatencyBenchmark}) share: the parent's round runner (fresh child JVM per run, modes
 * shuffled inside a round, a wait for a quiet host before each child), the child's profiler
 * start, and the {@code RESULT key=value ...} line between them.
 *
 * <p>Parent options (system properties): {@code rounds} (3), {@code seed} (time),
 * {@code java} (this JVM's), {@code jvmArgs} (extra child options, space separated),
 * {@code quietWait} (20 s per child) and {@code quietBudget} (60 s in all): before each child,
 * wait until the rest of the host uses less than {@code quietCpu} (0.3) CPUs.
 */
final class BenchSupport {
    static final List<String> PROFILED_MODES = Arrays.asList("true", "false", "lazy");

    private BenchSupport() {
    }

    // ------------------------------------------------------------------ child side

    /** Defines the generated classes; one per group of classes, like a framework's module loader. */
    static final class GenLoader extends ClassLoader {
        GenLoader(ClassLoader parent) {
            super(parent);
        }

        Class<?> define(String binaryName, byte[] bytes) {
            return defineClass(binaryName, bytes, 0, bytes.length);
        }
    }

    /**
     * Defines a class and links and initializes it (JVMTI ClassPrepare is posted at link time, and
     * it is there that the profiler registers or preloads the class).
     */
    static Class<?> defineAndLink(GenLoader loader, String binaryName, byte[] bytes) throws ClassNotFoundException {
        loader.define(binaryName, bytes);
        return Class.forName(binaryName, true, loader);
    }

    /**
     * Starts ddprof with {@code fjmethodid=<mode>}, or nothing for {@code none} (the library is then
     * not even loaded); {@code upstream} starts whichever library the class path holds with no
     * {@code fjmethodid} (the parent puts upstream's jar there). Prints what {@code execute} said beyond the usual to stderr.
     */
    static JavaProfiler startProfiler(String mode, String options, Path dir) throws IOException {
        if (mode.equals("none")) {
            return null;
        }
        // -Dddprof.bench.lib: a native library of our own build in place of the jar's (a
        // measurement build such as the load census, docs/benchmarks.md).
        String lib = System.getProperty("ddprof.bench.lib");
        JavaProfiler p = lib == null || lib.isEmpty() ? JavaProfiler.getInstance() : JavaProfiler.getInstance(lib, null);
        // upstream: upstream's jar is on the class path in place of ours, with its default method IDs;
        // default: ours with the command string as given (its default method IDs).
        String ids = mode.equals("upstream") || mode.equals("default") ? "" : ",fjmethodid=" + mode;
        String r = p.execute("start," + options + ids + ",file=" + dir.resolve("profile.jfr"));
        if (r != null && !r.trim().equals("Profiling started")) {
            System.err.println("[" + mode + "] execute: " + r.trim());
        }
        return p;
    }

    static Map<String, Long> counters(JavaProfiler p) {
        return p == null ? Collections.emptyMap() : p.getDebugCounters();
    }

    static long processCpuNs() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    /**
     * NMT summary (the JVM needs {@code -XX:NativeMemoryTracking=summary}) through the
     * DiagnosticCommand MBean: category -> committed KB, with {@code Total}.
     */
    static Map<String, Long> nmtCommittedKb() throws Exception {
        String text = (String) ManagementFactory.getPlatformMBeanServer().invoke(
                new ObjectName("com.sun.management:type=DiagnosticCommand"), "vmNativeMemory",
                new Object[] {new String[] {"summary", "scale=KB"}}, new String[] {String[].class.getName()});
        Map<String, Long> m = new LinkedHashMap<>();
        Matcher total = Pattern.compile("Total: reserved=(\\d+)KB, committed=(\\d+)KB").matcher(text);
        if (!total.find()) {
            throw new IllegalStateException("no NMT total in: " + text);
        }
        m.put("Total", Long.parseLong(total.group(2)));
        Matcher cat = Pattern.compile("(?m)^-\\s+([A-Za-z][A-Za-z ]*?) \\(reserved=(\\d+)KB, committed=(\\d+)KB\\)")
                .matcher(text);
        while (cat.find()) {
            m.put(cat.group(1).trim(), Long.parseLong(cat.group(3)));
        }
        return m;
    }

    static void deleteTree(Path dir) throws IOException {
        if (dir == null || !Files.exists(dir)) {
            return;
        }
        try (var files = Files.walk(dir)) {
            List<Path> all = new ArrayList<>();
            files.forEach(all::add);
            Collections.reverse(all);
            for (Path p : all) {
                Files.deleteIfExists(p);
            }
        }
    }

    /** The one line the parent reads. */
    static final class Result {
        private final StringBuilder sb = new StringBuilder("RESULT");

        Result put(String k, Object v) {
            sb.append(' ').append(k).append('=').append(v);
            return this;
        }

        void print() {
            System.out.println(sb);
            System.out.flush();
        }
    }

    // ------------------------------------------------------------------ parent side

    /** One child's RESULT line, by key. */
    static final class Run {
        final int round;
        final String mode;
        final Map<String, String> values;

        Run(int round, String mode, Map<String, String> values) {
            this.round = round;
            this.mode = mode;
            this.values = values;
        }

        double d(String key) {
            String v = values.get(key);
            if (v == null) {
                throw new IllegalStateException("run " + mode + " round " + round + " has no " + key);
            }
            return Double.parseDouble(v);
        }

        long l(String key) {
            return (long) d(key);
        }

        long l(String key, long dflt) {
            String v = values.get(key);
            return v == null ? dflt : Long.parseLong(v);
        }
    }

    /** The parent's settings and round runner. */
    static final class Rounds {
        final String name;
        final int rounds = Integer.getInteger("rounds", 3);
        final long seed = Long.getLong("seed", System.nanoTime());
        final String java = System.getProperty("java",
                Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        final String classpath = System.getProperty("java.class.path");
        final double quietWait = Double.parseDouble(System.getProperty("quietWait", "20"));
        final double quietCpu = Double.parseDouble(System.getProperty("quietCpu", "0.3"));
        private double quietBudget = Double.parseDouble(System.getProperty("quietBudget", "60"));
        final List<String> loads = new ArrayList<>();
        double quietWaited;

        Rounds(String name) {
            this.name = name;
        }

        /** Child JVM options: the benchmark's defaults, then {@code -DjvmArgs}. */
        List<String> jvmArgs(String... defaults) {
            List<String> a = new ArrayList<>(Arrays.asList(defaults));
            for (String s : System.getProperty("jvmArgs", "").trim().split("\\s+")) {
                if (!s.isEmpty()) {
                    a.add(s);
                }
            }
            return a;
        }

        /**
         * Runs {@code rounds} rounds; each runs every mode once in shuffled order in a fresh JVM made
         * by {@code command} (the arguments after {@code java}).
         */
        List<Run> run(List<String> modes, Function<String, List<String>> command) throws Exception {
            System.out.printf(Locale.ROOT, "%s: %d rounds of %s, seed %d, %s%n", name, rounds, modes, seed,
                    "load " + loadavg());
            Random rnd = new Random(seed);
            List<Run> runs = new ArrayList<>();
            for (int round = 1; round <= rounds; round++) {
                List<String> order = new ArrayList<>(modes);
                Collections.shuffle(order, rnd);
                for (String mode : order) {
                    waitForQuiet();
                    loads.add(loadavg().split(" ")[0]);
                    List<String> cmd = new ArrayList<>();
                    cmd.add(java);
                    cmd.addAll(command.apply(mode));
                    Map<String, String> v = runChild(cmd);
                    Run r = new Run(round, mode, v);
                    runs.add(r);
                    System.out.println("  round " + round + " " + mode + ": " + v);
                }
            }
            return runs;
        }

        /** The command line of a child: JVM options, classpath, main class, its arguments. */
        List<String> child(List<String> jvmArgs, Class<?> main, Object... args) {
            return child(classpath, jvmArgs, main, args);
        }

        /** {@link #child(List, Class, Object...)} on another class path (upstream's jar in place of ours). */
        List<String> child(String classpath, List<String> jvmArgs, Class<?> main, Object... args) {
            List<String> c = new ArrayList<>(jvmArgs);
            c.add("-cp");
            c.add(classpath);
            c.add(main.getName());
            for (Object a : args) {
                c.add(String.valueOf(a));
            }
            return c;
        }

        private Map<String, String> runChild(List<String> cmd) throws Exception {
            ProcessBuilder pb = new ProcessBuilder(cmd);
            pb.redirectError(ProcessBuilder.Redirect.INHERIT);
            Process p = pb.start();
            Thread hook = new Thread(p::destroyForcibly);
            Runtime.getRuntime().addShutdownHook(hook);
            Map<String, String> result = null;
            List<String> other = new ArrayList<>();
            try (BufferedReader r = new BufferedReader(
                    new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    if (line.startsWith("RESULT ")) {
                        result = new LinkedHashMap<>();
                        for (String kv : line.substring(7).trim().split(" ")) {
                            int eq = kv.indexOf('=');
                            result.put(kv.substring(0, eq), kv.substring(eq + 1));
                        }
                    } else {
                        other.add(line);
                    }
                }
            }
            if (!p.waitFor(10, TimeUnit.MINUTES)) {
                p.destroyForcibly();
            }
            Runtime.getRuntime().removeShutdownHook(hook);
            if (p.exitValue() != 0 || result == null) {
                throw new IllegalStateException("child failed (exit " + p.exitValue() + "): " + cmd
                        + "\n" + String.join("\n", other));
            }
            return result;
        }

        /**
         * Waits until the rest of the host (all CPUs, from /proc/stat; this parent is asleep) is
         * below {@code quietCpu} CPUs, at most {@code quietWait} s now and {@code quietBudget} s in all.
         */
        private void waitForQuiet() throws Exception {
            long deadline = System.nanoTime() + (long) (Math.min(quietWait, quietBudget) * 1e9);
            long t0 = System.nanoTime();
            while (true) {
                double busy = busyCpus(500);
                if (busy < quietCpu || System.nanoTime() >= deadline) {
                    break;
                }
            }
            double waited = (System.nanoTime() - t0) / 1e9;
            quietWaited += waited;
            quietBudget = Math.max(0, quietBudget - waited);
        }

        /** Summary of the host load seen when children started. */
        String loadSummary() {
            List<Double> l = new ArrayList<>();
            for (String s : loads) {
                l.add(Double.parseDouble(s));
            }
            return String.format(Locale.ROOT, "1-min load at child starts: median %.2f [%.2f-%.2f] on %d CPUs;"
                    + " waited %.0f s for a quiet host", median(l), Collections.min(l), Collections.max(l),
                    Runtime.getRuntime().availableProcessors(), quietWaited);
        }
    }

    static String loadavg() {
        try {
            String[] f = new String(Files.readAllBytes(Paths.get("/proc/loadavg")), StandardCharsets.US_ASCII)
                    .trim().split(" ");
            return f[0] + " " + f[1] + " " + f[2];
        } catch (IOException e) {
            return "?";
        }
    }

    /** CPUs busy across the host over {@code ms} milliseconds, from /proc/stat. */
    static double busyCpus(long ms) throws Exception {
        long[] a = cpuTimes();
        Thread.sleep(ms);
        long[] b = cpuTimes();
        double total = b[0] - a[0];
        double idle = b[1] - a[1];
        return total <= 0 ? 0 : (total - idle) / total * Runtime.getRuntime().availableProcessors();
    }

    private static long[] cpuTimes() throws IOException {
        String first = Files.readAllLines(Paths.get("/proc/stat")).get(0);
        String[] f = first.trim().split("\\s+");
        long total = 0;
        for (int i = 1; i < f.length && i <= 8; i++) {
            total += Long.parseLong(f[i]);
        }
        long idle = Long.parseLong(f[4]) + Long.parseLong(f[5]); // idle + iowait
        return new long[] {total, idle};
    }

    // ------------------------------------------------------------------ statistics and output

    static double median(List<Double> v) {
        List<Double> s = new ArrayList<>(v);
        Collections.sort(s);
        int n = s.size();
        if (n == 0) {
            return Double.NaN;
        }
        return n % 2 == 1 ? s.get(n / 2) : (s.get(n / 2 - 1) + s.get(n / 2)) / 2;
    }

    /** {@code median [min-max]} with a format for each number. */
    static String mmm(List<Double> v, String fmt) {
        if (v.isEmpty()) {
            return "-";
        }
        if (v.size() == 1) {
            return String.format(Locale.ROOT, fmt, v.get(0));
        }
        return String.format(Locale.ROOT, fmt + " [" + fmt + ".." + fmt + "]", median(v), Collections.min(v),
                Collections.max(v));
    }

    /** The runs of one mode, in round order. */
    static List<Run> of(List<Run> runs, String mode) {
        List<Run> r = new ArrayList<>();
        for (Run x : runs) {
            if (x.mode.equals(mode)) {
                r.add(x);
            }
        }
        return r;
    }

    /** The run of {@code mode} in {@code round}, or null. */
    static Run find(List<Run> runs, String mode, int round) {
        for (Run x : runs) {
            if (x.mode.equals(mode) && x.round == round) {
                return x;
            }
        }
        return null;
    }

    static String mib(double kb) {
        return String.format(Locale.ROOT, "%+.2f", kb / 1024.0);
    }

    /**
     * This JVM's class path without the entry our {@code JavaProfiler} was loaded from, followed by
     * {@code peerJar}: for a child that runs upstream's library, which has the same class names. Found by
     * the class's code source, not by a file name (the scripts run copies of the jars).
     */
    static String classPathWith(String peerJar) {
        String ours;
        try {
            ours = Paths.get(JavaProfiler.class.getProtectionDomain().getCodeSource().getLocation().toURI())
                    .toAbsolutePath().normalize().toString();
        } catch (java.net.URISyntaxException e) {
            throw new IllegalStateException(e);
        }
        List<String> kept = new ArrayList<>();
        for (String e : System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
            if (!e.isEmpty() && !Paths.get(e).toAbsolutePath().normalize().toString().equals(ours)) {
                kept.add(e);
            }
        }
        kept.add(peerJar);
        return String.join(java.io.File.pathSeparator, kept);
    }

    static List<String> modes(String property, String dflt) {
        List<String> m = new ArrayList<>();
        for (String s : System.getProperty(property, dflt).split(",")) {
            if (!s.trim().isEmpty()) {
                m.add(s.trim().toLowerCase(Locale.ROOT));
            }
        }
        return m;
    }
}
