package com.datadoghq.profiler.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Predicate;

import com.datadoghq.profiler.JavaProfiler;

/**
 * The wall sampler's CPU per sample and per registered thread, ours beside upstream java-profiler, as
 * the tracer runs it ({@code wall=~50m,filter=0}: only threads that called {@code addThread()} are
 * sampled), with nothing else enabled (no CPU, no allocation sampling).
 *
 * <p>Workload per child JVM: {@code N} threads, each registered with {@link JavaProfiler#addThread()}
 * from itself (the call both libraries have). Half are parked for good (a pool's idle workers); half
 * run short bursts ({@code burst} {@link CpuWorkload} ops, about 50 µs each) then sleep, the sleep
 * scaled with N so that the bursts add up to about {@code load} CPUs whatever N is. A burst's work is
 * fixed, so a mode's CPU above {@code none}'s in the same round, for as many bursts, is what the profiler
 * costs.
 *
 * <p>Per child: process CPU over a window of {@code seconds} after {@code warmup} seconds, and the
 * {@code datadog.MethodSample} events of the recording that fall in the window (both libraries write
 * a wall sample as that event; read with JMC's parser). The window's CPU is also split by thread
 * (schedstat): the bursting threads (work plus the handler when signalled: noisy), the parked ones
 * (nothing but signal handling: none's is ~0) and all others (the JVM's and the profiler's own
 * threads; the JIT's compiler threads and the main thread, which takes the snapshots, left out: their
 * CPU moves from run to run by more than the profiler costs), each against {@code none}; the three
 * other threads with the most CPU are named. A mode's
 * cost is the sum of the three excesses, the bursting threads' taken per burst (their CPU less as many
 * bursts at none's CPU per burst): on a busy host the whole process's CPU above none's moves with the
 * bursts the host let run, far more than the profiler costs.
 *
 * <p>Modes {@code none}, {@code ours}, {@code upstream} (needs {@code -Dupstream=}, its jar) at each
 * thread count of {@code threads} (10,100,1000): every pair is one child per round, all shuffled in a
 * round. Options: {@code rounds} (3), {@code seconds} (10), {@code warmup} (3), {@code burst} (2),
 * {@code load} (0.05), {@code wall.modes}, {@code seed}, {@code jvmArgs}, the quiet-host wait of
 * {@link BenchSupport.Rounds}. {@code scripts/bench-wall-threads.sh} sets them.
 */
public final class WallThreadsBenchmark {
    static final String OPTIONS = "wall=~50m,filter=0";

    private WallThreadsBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("child")) {
            child(args[1], Integer.parseInt(args[2]), Integer.parseInt(args[3]), Integer.parseInt(args[4]));
            return;
        }
        String upstream = System.getProperty("upstream", "");
        List<String> modes = BenchSupport.modes("wall.modes", upstream.isEmpty() ? "none,ours" : "none,ours,upstream");
        if (!modes.contains("none")) {
            modes.add(0, "none");
        }
        for (String m : modes) {
            if (!m.equals("none") && !m.equals("ours") && !m.equals("upstream")) {
                throw new IllegalArgumentException("unknown mode " + m + "; modes: none, ours, upstream");
            }
            if (m.equals("upstream") && upstream.isEmpty()) {
                throw new IllegalArgumentException("mode upstream needs -Dupstream=/path/ddprof-X.jar");
            }
        }
        List<Integer> counts = new ArrayList<>();
        for (String s : System.getProperty("threads", "10,100,1000").split(",")) {
            counts.add(Integer.parseInt(s.trim()));
        }
        int seconds = Integer.getInteger("seconds", 10);
        int warmup = Integer.getInteger("warmup", 3);
        String upstreamCp = upstream.isEmpty() ? "" : BenchSupport.classPathWith(upstream);
        BenchSupport.Rounds rounds = new BenchSupport.Rounds("WallThreadsBenchmark");
        List<String> jvm = rounds.jvmArgs("-Xms256m", "-Xmx256m",
                "-Dburst=" + Integer.getInteger("burst", 2), "-Dload=" + System.getProperty("load", "0.05"));
        List<String> pairs = new ArrayList<>();
        for (int n : counts) {
            for (String m : modes) {
                pairs.add(m + "@" + n);
            }
        }
        List<BenchSupport.Run> runs = rounds.run(pairs, pair -> {
            String mode = pair.substring(0, pair.indexOf('@'));
            String n = pair.substring(pair.indexOf('@') + 1);
            return mode.equals("upstream")
                    ? rounds.child(upstreamCp, jvm, WallThreadsBenchmark.class, "child", mode, n, warmup, seconds)
                    : rounds.child(jvm, WallThreadsBenchmark.class, "child", mode, n, warmup, seconds);
        });

        System.out.println();
        System.out.printf(Locale.ROOT, "%s, N registered threads (half parked, half %d-op bursts adding up to ~%s CPU),"
                + " %d s window after %d s; %d rounds, all (mode, N) shuffled in each; %s%n", OPTIONS,
                Integer.getInteger("burst", 2), System.getProperty("load", "0.05"), seconds, warmup, rounds.rounds,
                rounds.loadSummary());
        System.out.println();
        System.out.println("| N | mode | wall samples/s | process CPU ms/s (none's) | CPU above none, ms/s (work-normalised)"
                + " | **µs CPU per wall sample**, each round | µs CPU per registered thread-second"
                + " | above none, ms/s: bursting (per burst) / parked / other threads | top other threads, CPU ms/s |");
        System.out.println("|---|---|---|---|---|---|---|---|---|");
        for (int n : counts) {
            for (String mode : modes) {
                if (mode.equals("none")) {
                    continue;
                }
                List<Double> rate = new ArrayList<>();
                List<Double> cpu = new ArrayList<>();
                List<Double> base = new ArrayList<>();
                List<Double> delta = new ArrayList<>();
                List<Double> perSample = new ArrayList<>();
                List<Double> perThread = new ArrayList<>();
                List<String> each = new ArrayList<>();
                List<Double> busyD = new ArrayList<>();
                List<Double> idleD = new ArrayList<>();
                List<Double> otherD = new ArrayList<>();
                String top = "";
                for (BenchSupport.Run r : BenchSupport.of(runs, mode + "@" + n)) {
                    BenchSupport.Run b = BenchSupport.find(runs, "none@" + n, r.round);
                    // The bursting threads' CPU above what none's took for as many bursts (the host
                    // lets a run do more or fewer bursts a second), plus the other groups' excess.
                    double busyEx = r.d("busy_ms_s") - r.d("bursts_s") * b.d("busy_ms_s") / b.d("bursts_s");
                    double d = busyEx + (r.d("idle_ms_s") - b.d("idle_ms_s")) + (r.d("other_ms_s") - b.d("other_ms_s"));
                    rate.add(r.d("samples_s"));
                    cpu.add(r.d("cpu_ms_s"));
                    base.add(b.d("cpu_ms_s"));
                    delta.add(d);
                    double ps = r.d("samples_s") > 0 ? d * 1000 / r.d("samples_s") : Double.NaN;
                    perSample.add(ps);
                    each.add(String.format(Locale.ROOT, "%.1f", ps));
                    perThread.add(d * 1000 / n);
                    busyD.add(busyEx);
                    idleD.add(r.d("idle_ms_s") - b.d("idle_ms_s"));
                    otherD.add(r.d("other_ms_s") - b.d("other_ms_s"));
                    top = r.values.getOrDefault("top", "");
                }
                System.out.printf(Locale.ROOT, "| %d | %s | %.0f | %.1f (%.1f) | %.2f | **%.1f** (%s) | %.2f | %.2f / %.2f / %.2f | %s |%n",
                        n, mode, BenchSupport.median(rate), BenchSupport.median(cpu), BenchSupport.median(base),
                        BenchSupport.median(delta), BenchSupport.median(perSample), String.join(" / ", each),
                        BenchSupport.median(perThread), BenchSupport.median(busyD), BenchSupport.median(idleD),
                        BenchSupport.median(otherD), top.replace(',', ' '));
            }
        }
    }

    // ------------------------------------------------------------------ child

    static void child(String mode, int n, int warmup, int seconds) throws Exception {
        int burst = Integer.getInteger("burst", 2);
        double load = Double.parseDouble(System.getProperty("load", "0.05"));
        Path dir = Files.createTempDirectory("wall-threads");
        // Loaded before the threads start, so that addThread() reaches a live library.
        JavaProfiler prof = mode.equals("none") ? null : JavaProfiler.getInstance();
        int bursty = n / 2;
        // Sleep after each burst so that the bursts add up to about `load` CPUs (50 µs an op).
        long sleepNs = Math.max(1_000_000L, (long) (bursty * burst * 50_000L / load));
        CountDownLatch ready = new CountDownLatch(n);
        AtomicBoolean stop = new AtomicBoolean();
        LongAdder bursts = new LongAdder();
        for (int i = 0; i < n; i++) {
            boolean busy = i < bursty;
            Thread t = new Thread(() -> {
                if (prof != null) {
                    prof.addThread();
                }
                ready.countDown();
                if (!busy) {
                    while (!stop.get()) {
                        LockSupport.park();
                    }
                    return;
                }
                long seed = Thread.currentThread().getId();
                while (!stop.get()) {
                    for (int k = 0; k < burst; k++) {
                        seed = CpuWorkload.op(seed);
                    }
                    bursts.increment();
                    LockSupport.parkNanos(sleepNs);
                }
                if (seed == 42) {
                    System.out.println();
                }
            }, (busy ? "wt-busy-" : "wt-idle-") + i);
            t.setDaemon(true);
            t.start();
        }
        ready.await();
        if (prof != null) {
            BenchSupport.startProfiler(mode.equals("ours") ? "default" : "upstream", OPTIONS, dir);
        }
        Thread.sleep(warmup * 1000L);
        // This thread reads the snapshots, the same work in every mode: left out of "other".
        String mainTid = "/" + Files.readSymbolicLink(Path.of("/proc/thread-self")).getFileName();
        Map<String, Long> tasks0 = taskCpuNs();
        Map<String, Long> c0 = mode.equals("ours") ? BenchSupport.counters(prof) : null;
        long bursts0 = bursts.sum();
        Instant w0 = Instant.now();
        long cpu0 = BenchSupport.processCpuNs();
        long t0 = System.nanoTime();
        Thread.sleep(seconds * 1000L);
        long t1 = System.nanoTime();
        long cpu1 = BenchSupport.processCpuNs();
        Instant w1 = Instant.now();
        Map<String, Long> c1 = mode.equals("ours") ? BenchSupport.counters(prof) : null;
        Map<String, Long> tasks1 = taskCpuNs();
        long bursts1 = bursts.sum();
        double secs = (t1 - t0) / 1e9;
        BenchSupport.Result res = new BenchSupport.Result();
        res.put("cpu_ms_s", String.format(Locale.ROOT, "%.3f", (cpu1 - cpu0) / 1e6 / secs));
        if (prof != null) {
            prof.stop();
            long samples = JfrCounts.inWindow(dir.resolve("profile.jfr"), "datadog.MethodSample", w0, w1);
            res.put("samples_s", String.format(Locale.ROOT, "%.1f", samples / secs));
            if (c1 != null) {
                res.put("signals_s", String.format(Locale.ROOT, "%.1f",
                        (c1.getOrDefault("wallclock_signals_sent", 0L) - c0.getOrDefault("wallclock_signals_sent", 0L)) / secs));
            }
        }
        res.put("bursts_s", String.format(Locale.ROOT, "%.1f", (bursts1 - bursts0) / secs));
        res.put("busy_ms_s", groupMsPerS(tasks0, tasks1, k -> k.startsWith("wt-busy-"), secs));
        res.put("idle_ms_s", groupMsPerS(tasks0, tasks1, k -> k.startsWith("wt-idle-"), secs));
        res.put("jit_ms_s", groupMsPerS(tasks0, tasks1, WallThreadsBenchmark::jit, secs));
        res.put("main_ms_s", groupMsPerS(tasks0, tasks1, k -> k.endsWith(mainTid), secs));
        res.put("other_ms_s", groupMsPerS(tasks0, tasks1,
                k -> !k.startsWith("wt-") && !jit(k) && !k.endsWith(mainTid), secs));
        res.put("top", topOthers(tasks0, tasks1, mainTid, secs));
        res.print();
        stop.set(true);
        BenchSupport.deleteTree(dir);
        System.exit(0);
    }

    /**
     * On-CPU ns of each thread of this process by "name/tid": the first field of
     * /proc/self/task/TID/schedstat (nanoseconds; /proc's stat counts 10 ms ticks, too coarse here).
     */
    static Map<String, Long> taskCpuNs() throws IOException {
        Map<String, Long> m = new HashMap<>();
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(Path.of("/proc/self/task"))) {
            for (Path task : ds) {
                try {
                    String name = new String(Files.readAllBytes(task.resolve("comm")), StandardCharsets.UTF_8)
                            .trim().replace(' ', '_');
                    String sched = new String(Files.readAllBytes(task.resolve("schedstat")), StandardCharsets.UTF_8);
                    m.put(name + "/" + task.getFileName(), Long.parseLong(sched.substring(0, sched.indexOf(' '))));
                } catch (IOException e) {
                    // the thread ended
                }
            }
        }
        return m;
    }

    /** CPU ms per second between the snapshots of the threads ("name/tid") that {@code which} takes. */
    static String groupMsPerS(Map<String, Long> a, Map<String, Long> b, Predicate<String> which, double secs) {
        long ns = 0;
        for (Map.Entry<String, Long> e : b.entrySet()) {
            if (which.test(e.getKey())) {
                ns += e.getValue() - a.getOrDefault(e.getKey(), 0L);
            }
        }
        return String.format(Locale.ROOT, "%.3f", ns / 1e6 / secs);
    }

    /** The JIT's compiler threads (their work varies from run to run and is not the profiler's). */
    static boolean jit(String key) {
        return key.startsWith("C1_CompilerThre") || key.startsWith("C2_CompilerThre");
    }

    /**
     * The three threads with the most CPU between the snapshots, workload, JIT and main threads left
     * out (upstream's sampler thread keeps the launcher's name, "java").
     */
    static String topOthers(Map<String, Long> a, Map<String, Long> b, String mainTid, double secs) {
        List<Map.Entry<String, Long>> d = new ArrayList<>();
        for (Map.Entry<String, Long> e : b.entrySet()) {
            if (e.getKey().startsWith("wt-") || jit(e.getKey()) || e.getKey().endsWith(mainTid)) {
                continue;
            }
            d.add(Map.entry(e.getKey(), e.getValue() - a.getOrDefault(e.getKey(), 0L)));
        }
        d.sort((x, y) -> Long.compare(y.getValue(), x.getValue()));
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < Math.min(3, d.size()); i++) {
            String name = d.get(i).getKey();
            sb.append(i == 0 ? "" : ",").append(name, 0, name.lastIndexOf('/')).append(':')
                    .append(String.format(Locale.ROOT, "%.1f", d.get(i).getValue() / 1e6 / secs));
        }
        return sb.toString();
    }
}
