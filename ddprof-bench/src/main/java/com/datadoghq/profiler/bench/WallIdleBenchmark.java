package com.datadoghq.profiler.bench;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;

import com.datadoghq.profiler.JavaProfiler;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;

/**
 * Wall-clock sampling of a mostly idle process: 1,000 parked threads and 2 busy ones
 * ({@link CpuWorkload}) at a 50 ms wall interval. Per mode, a fresh child JVM measures the busy
 * threads' ops per second and per process CPU-second (the host may starve a run; work per CPU-second
 * does not depend on how much CPU the run got), the process CPU per second, and the signals (ddprof's
 * {@code wallclock_signals_sent}) and wall events per second; modes are shuffled inside each round.
 *
 * <p>Modes: {@code none}; ddprof with every thread a candidate ({@code wall=50ms,filter=}) with
 * and without idle-thread skipping; ddprof as the tracer runs it (every thread registered,
 * {@code wall=~50ms,filter=0}) with and without skipping; async-profiler's wall mode
 * ({@code event=wall,interval=50ms}, its jar given by {@code -Dap.jar=}).
 *
 * <p>Parent: {@code java -cp bench.jar:lib.jar com.datadoghq.profiler.bench.WallIdleBenchmark}
 * with {@code -Drounds=3 -Dseconds=8 -Dwarmup=3 -Dap.jar=PATH}.
 */
public final class WallIdleBenchmark {
    static final int IDLE = Integer.getInteger("idle", 1000);
    static final int BUSY = 2;
    static final List<String> MODES = Arrays.asList("none", "ddprof-all", "ddprof-all-noskip",
            "ddprof-registered", "ddprof-registered-noskip", "ap-wall");

    private WallIdleBenchmark() {}

    static String ddprofOptions(String mode) {
        switch (mode) {
            case "ddprof-all": return "wall=50ms,filter=";
            case "ddprof-all-noskip": return "wall=50ms,filter=,wallidle=false";
            case "ddprof-registered": return "wall=~50ms,filter=0";
            case "ddprof-registered-noskip": return "wall=~50ms,filter=0,wallidle=false";
            default: return null;
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("child")) {
            child(args[1], Integer.parseInt(args[2]), Integer.parseInt(args[3]), args.length > 4 ? args[4] : null);
            return;
        }
        int rounds = Integer.getInteger("rounds", 3);
        int seconds = Integer.getInteger("seconds", 8);
        int warmup = Integer.getInteger("warmup", 3);
        String apJar = System.getProperty("ap.jar", "");
        List<String> modes = new ArrayList<>(MODES);
        if (apJar.isEmpty()) {
            modes.remove("ap-wall");
        }
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String cp = System.getProperty("java.class.path") + (apJar.isEmpty() ? "" : File.pathSeparator + apJar);
        Random rnd = new Random(Long.getLong("seed", System.nanoTime()));
        Map<String, List<Map<String, Double>>> results = new LinkedHashMap<>();
        for (String m : MODES) {
            results.put(m, new ArrayList<>());
        }
        for (int r = 0; r < rounds; r++) {
            List<String> order = new ArrayList<>(modes);
            Collections.shuffle(order, rnd);
            for (String mode : order) {
                ProcessBuilder pb = new ProcessBuilder(java, "-Xms256m", "-Xmx256m", "-cp", cp,
                        WallIdleBenchmark.class.getName(), "child", mode, String.valueOf(warmup), String.valueOf(seconds));
                pb.redirectErrorStream(true);
                Process p = pb.start();
                Map<String, Double> res = new LinkedHashMap<>();
                try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream()))) {
                    for (String line; (line = in.readLine()) != null; ) {
                        if (line.startsWith("RESULT ")) {
                            for (String kv : line.substring(7).trim().split(" ")) {
                                String[] x = kv.split("=", 2);
                                res.put(x[0], Double.parseDouble(x[1]));
                            }
                        } else {
                            System.err.println("[" + mode + "] " + line);
                        }
                    }
                }
                p.waitFor();
                System.err.println("round " + r + " " + mode + " " + res);
                results.get(mode).add(res);
            }
        }
        for (List<Map<String, Double>> runs : results.values()) {
            for (Map<String, Double> m : runs) {
                m.put("ops_cpu", m.get("ops_s") / m.get("cpu_s"));
            }
        }
        double noneOpsCpu = median(results.get("none"), "ops_cpu");
        System.out.println("| mode | ops per CPU-second vs none | busy ops/s vs none | process CPU/s | signals/s | wall events/s | idle samples/s |");
        System.out.println("|---|---|---|---|---|---|---|");
        double noneOps = median(results.get("none"), "ops_s");
        for (String mode : modes) {
            List<Map<String, Double>> runs = results.get(mode);
            System.out.println("| " + mode + " | " + fmt(median(runs, "ops_cpu") / noneOpsCpu) + " " + range(runs, "ops_cpu", noneOpsCpu)
                    + " | " + fmt(median(runs, "ops_s") / noneOps)
                    + " | " + fmt(median(runs, "cpu_s")) + " | " + fmt(median(runs, "signals_s")) + " | "
                    + fmt(median(runs, "events_s")) + " | " + fmt(median(runs, "idle_s")) + " |");
        }
    }

    static double median(List<Map<String, Double>> runs, String key) {
        double[] v = runs.stream().mapToDouble(m -> m.getOrDefault(key, Double.NaN)).sorted().toArray();
        return v.length == 0 ? Double.NaN : v[v.length / 2];
    }

    static String range(List<Map<String, Double>> runs, String key, double scale) {
        double[] v = runs.stream().mapToDouble(m -> m.getOrDefault(key, Double.NaN) / scale).sorted().toArray();
        return v.length == 0 ? "" : "[" + fmt(v[0]) + "-" + fmt(v[v.length - 1]) + "]";
    }

    static String fmt(double d) {
        return Double.isNaN(d) ? "-" : (Math.abs(d) >= 100 ? String.valueOf(Math.round(d)) : String.format("%.3f", d));
    }

    // ------------------------------------------------------------------ child

    static void child(String mode, int warmup, int seconds, String unused) throws Exception {
        Path dir = Files.createTempDirectory("wall-bench");
        Path jfr = dir.resolve("out.jfr");
        String options = ddprofOptions(mode);
        boolean registered = mode.startsWith("ddprof-registered");
        JavaProfiler ddprof = null;
        Object ap = null;
        Method apExecute = null;
        if (options != null) {
            ddprof = JavaProfiler.getInstance();
        }
        CountDownLatch ready = new CountDownLatch(IDLE);
        CountDownLatch release = new CountDownLatch(1);
        final JavaProfiler prof = ddprof;
        List<Thread> idle = new ArrayList<>();
        for (int i = 0; i < IDLE; i++) {
            Thread t = new Thread(() -> {
                if (registered) {
                    prof.addThread();
                }
                ready.countDown();
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "idle-" + i);
            t.setDaemon(true);
            t.start();
            idle.add(t);
        }
        ready.await();
        AtomicBoolean measuring = new AtomicBoolean();
        AtomicBoolean stop = new AtomicBoolean();
        LongAdder ops = new LongAdder();
        for (int i = 0; i < BUSY; i++) {
            Thread t = new Thread(() -> {
                if (registered) {
                    prof.addThread();
                }
                long seed = 1;
                while (!stop.get()) {
                    seed = CpuWorkload.op(seed);
                    if (measuring.get()) {
                        ops.increment();
                    }
                }
                if (seed == 42) {
                    System.out.println();
                }
            }, "busy-" + i);
            t.setDaemon(true);
            t.start();
        }
        if (ddprof != null) {
            ddprof.execute("start," + options + ",file=" + jfr);
        } else if (mode.equals("ap-wall")) {
            Class<?> c = Class.forName("one.profiler.AsyncProfiler");
            ap = c.getMethod("getInstance").invoke(null);
            apExecute = c.getMethod("execute", String.class);
            apExecute.invoke(ap, "start,event=wall,interval=50ms,file=" + jfr + ",jfr");
        }
        Thread.sleep(warmup * 1000L);
        java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
        com.sun.management.OperatingSystemMXBean sun = (com.sun.management.OperatingSystemMXBean) os;
        Map<String, Long> c0 = ddprof != null ? ddprof.getDebugCounters() : null;
        long cpu0 = sun.getProcessCpuTime();
        long t0 = System.nanoTime();
        measuring.set(true);
        Thread.sleep(seconds * 1000L);
        measuring.set(false);
        long t1 = System.nanoTime();
        long cpu1 = sun.getProcessCpuTime();
        Map<String, Long> c1 = ddprof != null ? ddprof.getDebugCounters() : null;
        double secs = (t1 - t0) / 1e9;
        StringBuilder out = new StringBuilder("RESULT");
        out.append(" ops_s=").append(ops.sum() / secs);
        out.append(" cpu_s=").append((cpu1 - cpu0) / 1e9 / secs);
        if (c1 != null) {
            out.append(" signals_s=").append((c1.get("wallclock_signals_sent") - c0.get("wallclock_signals_sent")) / secs);
            out.append(" idle_s=").append((c1.get("wallclock_idle_samples") - c0.get("wallclock_idle_samples")) / secs);
            out.append(" events_s=").append((c1.get("samples") - c0.get("samples")) / secs);
            ddprof.stop();
        } else if (ap != null) {
            apExecute.invoke(ap, "stop");
            // Events over the whole run (warm-up included): per second of the run.
            long events = 0;
            for (RecordedEvent e : RecordingFile.readAllEvents(jfr)) {
                String n = e.getEventType().getName();
                if (n.contains("Wall") || n.equals("jdk.ExecutionSample")) {
                    events++;
                }
            }
            out.append(" events_s=").append(events / (warmup + secs));
        }
        stop.set(true);
        release.countDown();
        System.out.println(out);
        System.exit(0);
    }
}
