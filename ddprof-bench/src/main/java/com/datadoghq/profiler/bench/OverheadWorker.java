package com.datadoghq.profiler.bench;

import com.datadoghq.profiler.JavaProfiler;

import one.profiler.AsyncProfiler;

import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLongArray;

import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;

/**
 * One measurement of {@link OverheadBenchmark}, run in a fresh JVM:
 * {@code OverheadWorker <mode> <threads> <measureSeconds> [warmupSeconds]}.
 *
 * <p>Starts the profiler of {@code mode}, runs {@code threads} busy threads on
 * {@link CpuWorkload}, warms up, then measures ops and process CPU time over the window. After
 * the window (threads still busy) it times one dump and the stop. It prints one line,
 * {@code RESULT key=value ...}, that the parent parses; everything else on stdout is ignored.
 *
 * <p>Modes: {@code none}; {@code ddprof-<interval>} (ddprof {@code start,cpu=<interval>}, the
 * default ctimer engine); {@code ddprof-itimer-<interval>} ({@code event=itimer}); either may
 * carry extra ddprof options after a colon, {@code ;}-separated ({@code ddprof-1ms:cstack=fp});
 * {@code jfr-<interval>} (a {@code jdk.jfr.Recording} with only {@code jdk.ExecutionSample}
 * enabled at that period, every other event off); the peers: {@code asprof-<event>-<interval>}
 * (async-profiler's {@code event=cpu|ctimer|itimer}, JFR output, its library taken from its jar on the
 * class path) and {@code upstream-<interval>} (upstream java-profiler's {@code start,cpu=<interval>}: the
 * parent puts upstream's jar on the class path in place of ours, same class names; its samples are
 * counted from its dump with JMC's parser, since {@code jdk.jfr.consumer} cannot read its recordings).
 */
public final class OverheadWorker {
    private static final int SLOT = 16; // longs per thread in the ops array: 128 bytes apart

    private static volatile boolean running = true;
    private static volatile long sink;

    private OverheadWorker() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: OverheadWorker <mode> <threads> <measureSeconds> [warmupSeconds]");
            System.exit(2);
        }
        String mode = args[0];
        int threads = Integer.parseInt(args[1]);
        double measureSeconds = Double.parseDouble(args[2]);
        double warmupSeconds = args.length > 3 ? Double.parseDouble(args[3]) : 3.0;

        Path dir = Files.createTempDirectory("ddprof-overhead-");
        Profiler profiler = Profiler.of(mode, dir);
        profiler.start();

        AtomicLongArray ops = new AtomicLongArray(threads * SLOT);
        Thread[] workers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            final int slot = t * SLOT;
            workers[t] = SWITCH
                    ? new Thread(() -> pingPong(ops, slot), "overhead-worker-" + t)
                    : new Thread(() -> spin(ops, slot), "overhead-worker-" + t);
            workers[t].start();
        }

        com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

        Thread.sleep((long) (warmupSeconds * 1000));
        long switches0 = contextSwitches();
        Snapshot before = Snapshot.take(ops, threads, os, profiler);
        Thread.sleep((long) (measureSeconds * 1000));
        Snapshot after = Snapshot.take(ops, threads, os, profiler);
        long switches = contextSwitches() - switches0;

        // Dump and stop with the workers still busy, as a live service would.
        java.lang.management.ThreadMXBean me = ManagementFactory.getThreadMXBean();
        long c0 = me.getCurrentThreadCpuTime();
        long d0 = System.nanoTime();
        profiler.dump(dir.resolve("dump.jfr"));
        long d1 = System.nanoTime();
        // The calling thread's CPU time in the dump: its cost without the waits for a CPU that
        // the busy workers make (a JFR dump also works on other threads, not counted here).
        long dumpCpuNs = me.getCurrentThreadCpuTime() - c0;
        long nativeDumpNs = profiler.nativeDumpNs();
        // Set by the dump for the chunk it wrote: the median handler, preempted ones left aside.
        long walkP50Ns = profiler.hasCounters() ? profiler.counters().getOrDefault("unwinding_ns_p50", -1L) : -1;
        long walkP99Ns = profiler.hasCounters() ? profiler.counters().getOrDefault("unwinding_ns_p99", -1L) : -1;
        if (Boolean.getBoolean("bench.printCounters") && profiler.hasCounters()) {
            // What the first dump found (names kept, named ahead, ...), for looking into its cost.
            profiler.counters().forEach((k, v) -> System.out.println("counter " + k + "=" + v));
        }
        long d2s = System.nanoTime();
        profiler.stop();
        long d2 = System.nanoTime();

        running = false;
        for (Thread w : workers) {
            w.join();
        }

        long samples = after.samples >= 0
                ? after.samples - before.samples
                : profiler.countSamples(before.instant, after.instant);
        long walkNs = profiler.hasCounters() ? after.walkNs - before.walkNs : -1;
        StringBuilder line = new StringBuilder("RESULT");
        kv(line, "mode", mode);
        kv(line, "threads", threads);
        kv(line, "ops", after.ops - before.ops);
        kv(line, "cpu_ns", after.cpuNs - before.cpuNs);
        kv(line, "wall_ns", after.wallNs - before.wallNs);
        kv(line, "samples", profiler.enabled() ? samples : 0);
        kv(line, "walk_ns", walkNs);
        kv(line, "dump_ns", profiler.enabled() ? d1 - d0 : -1);
        kv(line, "stop_ns", profiler.enabled() ? d2 - d2s : -1);
        kv(line, "dump_cpu_ns", profiler.enabled() ? dumpCpuNs : -1);
        kv(line, "native_dump_ns", nativeDumpNs);
        kv(line, "walk_max_ns", profiler.hasCounters() ? after.walkMaxNs : -1);
        kv(line, "walk_p50_ns", walkP50Ns);
        kv(line, "walk_p99_ns", walkP99Ns);
        kv(line, "walker", profiler.walker());
        kv(line, "dump_bytes", profiler.enabled() ? Files.size(profiler.dumped(dir.resolve("dump.jfr"))) : -1);
        kv(line, "sink", sink & 1);
        kv(line, "ctx_switches", switches);
        System.out.println(line);
        System.out.flush();
        profiler.cleanUp(dir);
    }

    private static void spin(AtomicLongArray ops, int slot) {
        long seed = System.nanoTime();
        long n = 0;
        while (running) {
            seed = CpuWorkload.op(seed);
            ops.lazySet(slot, ++n);
        }
        sink += seed;
    }

    /**
     * {@code -Dbench.workload=switch}: each worker hands a byte back and forth with an echo thread of
     * its own through two pipes, with a little arithmetic on each side, so both threads block in a
     * read on every operation (two context switches per op, tens of thousands a second, as an
     * event-loop service waiting in epoll has). Per-thread CPU timers and perf events pay on every
     * switch; this workload prices that.
     */
    static final boolean SWITCH = "switch".equals(System.getProperty("bench.workload", "cpu"));

    /** Arithmetic rounds on each side of a hand-off (a few microseconds). */
    private static final int SWITCH_ROUNDS = Integer.getInteger("bench.switchRounds", 2000);

    private static void pingPong(AtomicLongArray ops, int slot) {
        try {
            java.nio.channels.Pipe ping = java.nio.channels.Pipe.open();
            java.nio.channels.Pipe pong = java.nio.channels.Pipe.open();
            Thread echo = new Thread(() -> {
                java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(1);
                long h = 1;
                try {
                    while (true) {
                        b.clear();
                        if (ping.source().read(b) < 0) {
                            break;
                        }
                        h = echoWork(h);
                        b.flip();
                        pong.sink().write(b);
                    }
                } catch (java.io.IOException e) {
                    // the worker closed its ends: done
                }
                sink += h;
            }, "overhead-echo-" + slot / SLOT);
            echo.setDaemon(true);
            echo.start();
            java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(1);
            long seed = System.nanoTime();
            long n = 0;
            while (running) {
                seed = pingWork(seed);
                b.clear();
                b.put((byte) n);
                b.flip();
                ping.sink().write(b);
                b.clear();
                pong.source().read(b);
                ops.lazySet(slot, ++n);
            }
            ping.sink().close();
            sink += seed;
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /**
     * Context switches of the whole process so far (voluntary and not, every thread's, from
     * {@code /proc/self/task/<tid>/status}); -1 where unreadable.
     */
    static long contextSwitches() {
        long sum = 0;
        try (java.util.stream.Stream<Path> tasks = Files.list(Path.of("/proc/self/task"))) {
            for (Path t : (Iterable<Path>) tasks::iterator) {
                try {
                    for (String l : Files.readAllLines(t.resolve("status"))) {
                        if (l.startsWith("voluntary_ctxt_switches:") || l.startsWith("nonvoluntary_ctxt_switches:")) {
                            sum += Long.parseLong(l.substring(l.indexOf(':') + 1).trim());
                        }
                    }
                } catch (java.io.IOException | RuntimeException e) {
                    // the thread ended meanwhile
                }
            }
        } catch (java.io.IOException e) {
            return -1;
        }
        return sum;
    }

    private static long pingWork(long h) {
        return CpuWorkload.mix(h, SWITCH_ROUNDS);
    }

    private static long echoWork(long h) {
        return CpuWorkload.mix(h + 0x9E3779B97F4A7C15L, SWITCH_ROUNDS);
    }

    private static void kv(StringBuilder sb, String k, Object v) {
        sb.append(' ').append(k).append('=').append(v);
    }

    /** Ops, CPU and profiler counters at one instant. */
    private static final class Snapshot {
        long ops;
        long cpuNs;
        long wallNs;
        long samples;
        long walkNs;
        long walkMaxNs;
        Instant instant;

        static Snapshot take(AtomicLongArray ops, int threads, com.sun.management.OperatingSystemMXBean os,
                             Profiler profiler) {
            Snapshot s = new Snapshot();
            s.instant = Instant.now();
            s.wallNs = System.nanoTime();
            s.cpuNs = os.getProcessCpuTime();
            for (int t = 0; t < threads; t++) {
                s.ops += ops.get(t * SLOT);
            }
            s.samples = profiler.liveSamples();
            if (profiler.hasCounters()) {
                Map<String, Long> c = profiler.counters();
                s.walkNs = c.getOrDefault("unwinding_ticks_async", 0L);
                s.walkMaxNs = c.getOrDefault("unwinding_ns_max", 0L);
            }
            return s;
        }
    }

    /** The profiler a mode names, behind one interface. */
    private abstract static class Profiler {
        static Profiler of(String mode, Path dir) {
            String m = mode.toLowerCase(Locale.ROOT);
            if (m.equals("none")) {
                return new None();
            }
            // ddprof modes may carry extra options after ':', ';'-separated: ddprof-1ms:cstack=fp
            String extra = "";
            int colon = m.indexOf(':');
            if (colon >= 0 && m.startsWith("ddprof-")) {
                extra = "," + mode.substring(colon + 1).replace(';', ',');
                m = m.substring(0, colon);
            }
            if (m.startsWith("ddprof-itimer-")) {
                return new Ddprof("event=itimer,cpu=" + m.substring("ddprof-itimer-".length()) + extra, dir);
            }
            if (m.startsWith("ddprof-")) {
                return new Ddprof("cpu=" + m.substring("ddprof-".length()) + extra, dir);
            }
            if (m.startsWith("jfr-")) {
                return new Jfr(m.substring("jfr-".length()), dir);
            }
            if (m.startsWith("asprof-") && m.indexOf('-', "asprof-".length()) > 0) {
                int dash = m.indexOf('-', "asprof-".length());
                return new Asprof(m.substring("asprof-".length(), dash), m.substring(dash + 1), dir);
            }
            if (m.startsWith("upstream-")) {
                return new Upstream(m.substring("upstream-".length()), dir);
            }
            throw new IllegalArgumentException("unknown mode " + mode);
        }

        boolean enabled() {
            return true;
        }

        /** Where {@link #dump} wrote when asked for {@code requested}. */
        Path dumped(Path requested) {
            return requested;
        }

        abstract void start() throws Exception;

        abstract void dump(Path file) throws Exception;

        abstract void stop() throws Exception;

        /** ddprof's debug counters (walk time), if this profiler has them. */
        boolean hasCounters() {
            return false;
        }

        /** Samples taken so far by a live count, or -1: then {@link #countSamples} reads the recording. */
        long liveSamples() {
            return -1;
        }

        Map<String, Long> counters() {
            return Map.of();
        }

        long nativeDumpNs() {
            return -1;
        }

        /** Which stack walker took the samples, as far as the counters tell. */
        String walker() {
            return "-";
        }

        /** Samples in [from, to] counted from the recording, for profilers without live counters. */
        long countSamples(Instant from, Instant to) throws Exception {
            return -1;
        }

        void cleanUp(Path dir) throws Exception {
            try (var files = Files.list(dir)) {
                for (Path p : (Iterable<Path>) files::iterator) {
                    Files.deleteIfExists(p);
                }
            }
            Files.deleteIfExists(dir);
        }
    }

    private static final class None extends Profiler {
        @Override
        boolean enabled() {
            return false;
        }

        @Override
        void start() {
        }

        @Override
        void dump(Path file) {
        }

        @Override
        void stop() {
        }

        @Override
        long countSamples(Instant from, Instant to) {
            return 0;
        }
    }

    private static class Ddprof extends Profiler {
        private final String options;
        private final Path dir;
        private JavaProfiler profiler;
        private long nativeDumpNs = -1;

        Ddprof(String options, Path dir) {
            this.options = options;
            this.dir = dir;
        }

        @Override
        void start() throws Exception {
            profiler = JavaProfiler.getInstance();
            profiler.execute("start," + options + ",file=" + dir.resolve("ddprof.jfr"));
        }

        @Override
        void dump(Path file) {
            profiler.dump(file);
        }

        @Override
        void stop() {
            profiler.stop();
        }

        @Override
        boolean hasCounters() {
            return true;
        }

        @Override
        Map<String, Long> counters() {
            return profiler.getDebugCounters();
        }

        @Override
        long liveSamples() {
            return profiler.getDebugCounters().getOrDefault("samples", 0L);
        }

        @Override
        long nativeDumpNs() {
            // Read after the timed dump: getDebugCounters measures our memory, which is not the dump's cost.
            if (nativeDumpNs < 0) {
                nativeDumpNs = profiler.getDebugCounters().getOrDefault("dump_ns_last", -1L);
            }
            return nativeDumpNs;
        }

        @Override
        String walker() {
            // The VM walker counts the frames it names (walkvm_frames_*); AsyncGetCallTrace does not.
            for (Map.Entry<String, Long> e : profiler.getDebugCounters().entrySet()) {
                if (e.getKey().startsWith("walkvm_frames") && e.getValue() > 0) {
                    return "vm";
                }
            }
            return "agct";
        }
    }

    private static final class Jfr extends Profiler {
        private final Recording recording = new Recording();
        private final Path dir;
        private Path dumped;

        Jfr(String period, Path dir) {
            this.dir = dir;
            Map<String, String> settings = new HashMap<>();
            settings.put("jdk.ExecutionSample#enabled", "true");
            settings.put("jdk.ExecutionSample#period", period.replaceAll("([0-9])([a-z])", "$1 $2"));
            recording.setSettings(settings); // every event not named here stays disabled
            recording.setToDisk(true);
            recording.setName("overhead-" + period);
        }

        @Override
        void start() throws Exception {
            recording.setDestination(dir.resolve("jfr.jfr"));
            recording.start();
        }

        @Override
        void dump(Path file) throws Exception {
            recording.dump(file);
            dumped = file;
        }

        @Override
        void stop() {
            recording.stop();
        }

        @Override
        long countSamples(Instant from, Instant to) throws Exception {
            Path file = dir.resolve("jfr.jfr");
            if (!Files.exists(file)) {
                file = dumped;
            }
            long n = 0;
            try (RecordingFile rf = new RecordingFile(file)) {
                while (rf.hasMoreEvents()) {
                    RecordedEvent e = rf.readEvent();
                    if (e.getEventType().getName().equals("jdk.ExecutionSample")) {
                        Instant t = e.getStartTime();
                        if (!t.isBefore(from) && !t.isAfter(to)) {
                            n++;
                        }
                    }
                }
            }
            return n;
        }

        @Override
        void cleanUp(Path dir) throws Exception {
            recording.close();
            super.cleanUp(dir);
        }
    }

    /** async-profiler 4.x through its Java API, recording JFR; {@code getSamples()} counts live. */
    private static final class Asprof extends Profiler {
        private final String event;
        private final String interval;
        private final Path dir;
        private AsyncProfiler profiler;

        Asprof(String event, String interval, Path dir) {
            this.event = event;
            this.interval = interval;
            this.dir = dir;
        }

        @Override
        void start() throws Exception {
            profiler = AsyncProfiler.getInstance(library(dir).toString());
            profiler.execute("start,event=" + event + ",interval=" + nanos(interval) + ",jfr,file="
                    + dir.resolve("asprof.jfr"));
        }

        /** The jar's own library for this machine, copied out (a library cannot load from a jar). */
        private static Path library(Path dir) throws Exception {
            String arch = System.getProperty("os.arch").equals("aarch64") ? "linux-arm64" : "linux-x64";
            Path lib = dir.resolve("libasyncProfiler.so");
            try (InputStream in = AsyncProfiler.class.getResourceAsStream("/" + arch + "/libasyncProfiler.so")) {
                if (in == null) {
                    throw new IllegalStateException("no " + arch + "/libasyncProfiler.so in async-profiler's jar");
                }
                Files.copy(in, lib, StandardCopyOption.REPLACE_EXISTING);
            }
            return lib;
        }

        /** async-profiler's {@code dump} writes the recording to the file given at start, whatever it is told. */
        @Override
        void dump(Path file) throws Exception {
            profiler.execute("dump,jfr");
        }

        @Override
        Path dumped(Path requested) {
            return dir.resolve("asprof.jfr");
        }

        @Override
        void stop() throws Exception {
            profiler.execute("stop");
        }

        @Override
        long liveSamples() {
            return profiler.getSamples();
        }
    }

    /**
     * Upstream java-profiler: whichever {@code JavaProfiler} the class path holds (the parent puts its
     * jar there), driven as ours; its counters are not ours, so its samples are counted from its dump.
     */
    private static final class Upstream extends Ddprof {
        private Path dumped;

        Upstream(String interval, Path dir) {
            super("cpu=" + interval, dir);
        }

        @Override
        void dump(Path file) {
            super.dump(file);
            dumped = file;
        }

        @Override
        boolean hasCounters() {
            return false;
        }

        @Override
        long liveSamples() {
            return -1;
        }

        @Override
        long nativeDumpNs() {
            return -1;
        }

        @Override
        String walker() {
            return "-";
        }

        @Override
        long countSamples(Instant from, Instant to) throws Exception {
            return JfrCounts.inWindow(dumped, "datadog.ExecutionSample", from, to);
        }
    }

    /** "10ms", "100us", "1s" or plain nanoseconds, in nanoseconds. */
    static long nanos(String interval) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("(\\d+)(ns|us|ms|s)?")
                .matcher(interval.trim().toLowerCase(Locale.ROOT));
        if (!m.matches()) {
            throw new IllegalArgumentException("bad interval " + interval);
        }
        long n = Long.parseLong(m.group(1));
        String unit = m.group(2) == null ? "ns" : m.group(2);
        switch (unit) {
            case "us":
                return n * 1_000L;
            case "ms":
                return n * 1_000_000L;
            case "s":
                return n * 1_000_000_000L;
            default:
                return n;
        }
    }
}
