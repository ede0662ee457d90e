package com.datadoghq.profiler.wall;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.CpuBurner;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.TestEnv;
import com.datadoghq.profiler.testing.ThrottledHost;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedMethod;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Wall-clock sampling beside CPU sampling on a throttled host (a CPU quota, {@link ThrottledHost}):
 * a thread that was descheduled for tens of milliseconds resumes with a CPU signal and a wall signal
 * both pending. The CPU sample must still name the application's code, never our own wall handler
 * (issue 32: a quarter of the CPU samples had {@code sample::wall::on_wall_signal} as their leaf,
 * mostly unwalkable below it), and CPU sampling must count the same CPU time with wall on as
 * without it.
 */
class WallOnThrottledHostTest {
    /** A CPU quota of a quarter of one CPU: 25 ms of every 100 ms, then 75 ms descheduled. */
    private static final double SHARE = 0.25;

    @TempDir
    Path dir;

    @Test
    void oneRegisteredThreadKeepsItsCpuSamples() throws Exception {
        compare("cpu=10ms,wall=20ms", 1, 2000, true);
    }

    @Test
    void allThreadsWithFilterKeepTheirCpuSamples() throws Exception {
        compare("cpu=10ms,wall=20ms,filter=", 4, 500, false);
    }

    /**
     * Runs {@code workers} x {@code millis} of CPU work under {@code options} and under the same
     * options without wall, both throttled, and compares their CPU samples.
     */
    private void compare(String options, int workers, long millis, boolean register) throws Exception {
        Run wall = run("wall", options, workers, millis, register);
        Run cpuOnly = run("cpu", options.replaceAll(",wall=[^,]*", "").replace(",filter=", ""), workers, millis, register);
        for (Run r : new Run[] {wall, cpuOnly}) {
            // The throttle is what this test is about: the workers must really have waited.
            assertTrue(r.wallNanos >= 2 * r.cpuNanos,
                    r.name + ": the workers were not throttled (wall " + r.wallNanos / 1_000_000 + " ms for "
                            + r.cpuNanos / 1_000_000 + " ms of CPU) on " + r.host);
            // cpu=10ms: about 100 per CPU-second of the workers, by weight.
            assertTrue(r.weight >= 0.8 * 100 * r.cpuNanos / 1e9,
                    r.name + ": CPU samples weighing " + r.weight + " for " + r.cpuNanos / 1_000_000 + " ms of CPU on "
                            + r.host + r.leaves());
        }
        System.out.printf("%s on %s: with wall %d of %d CPU events in our frames, %d in chainC, weight %d for %d ms"
                + " of CPU (wall %d ms), %d wall samples, cpu_samples_in_handlers %s; without wall %d events (%d in"
                + " chainC) weighing %d for %d ms%n", options, wall.host, wall.own, wall.samples, wall.hot, wall.weight,
                wall.cpuNanos / 1_000_000, wall.wallNanos / 1_000_000, wall.methodSamples,
                wall.counters.get("cpu_samples_in_handlers"), cpuOnly.samples, cpuOnly.hot, cpuOnly.weight,
                cpuOnly.cpuNanos / 1_000_000);
        assertTrue(wall.methodSamples > 0, "no wall samples with " + options + " on " + wall.host);
        // Our handlers anywhere in a CPU sample's stack: at most 1% (issue 32 saw 22-27%).
        assertTrue(wall.own * 100 <= wall.samples,
                wall.own + " of " + wall.samples + " CPU samples of the workers have a frame of the profiler's own"
                        + " library (" + options + ", " + wall.host + "); first ones:" + JfrReader.describe(wall.ownSamples, 5)
                        + wall.leaves());
        assertEquals(0, cpuOnly.own, "frames of the profiler without wall:" + JfrReader.describe(cpuOnly.ownSamples, 5));
        // And they name the interrupted code: the workload's hot loop, as often as without wall
        // (a sample that lost its stack below our frame was `unknown` there).
        for (Run r : new Run[] {wall, cpuOnly}) {
            assertTrue(r.hot * 10 >= r.samples * 9, r.name + ": only " + r.hot + " of " + r.samples
                    + " CPU samples of the workers name CpuBurner.chainC, where they spend nearly all their CPU"
                    + r.leaves());
        }
        // Per CPU-second, by weight: a per-thread CPU timer merges the expirations it could not
        // deliver into one signal (si_overrun, the sample's weight), as the scheduler happens to
        // run the thread, so the count of events varies from run to run while the weights add
        // up to the CPU time.
        double withWall = wall.weight / (wall.cpuNanos / 1e9);
        double without = cpuOnly.weight / (cpuOnly.cpuNanos / 1e9);
        assertTrue(Math.abs(withWall / without - 1) <= 0.10,
                String.format("CPU samples (by weight) per CPU-second: %.1f with wall (%d events weighing %d, %d ms),"
                        + " %.1f without (%d events weighing %d, %d ms), on %s", withWall, wall.samples, wall.weight,
                        wall.cpuNanos / 1_000_000, without, cpuOnly.samples, cpuOnly.weight,
                        cpuOnly.cpuNanos / 1_000_000, wall.host));
        assertTrue(wall.counters.containsKey("cpu_samples_in_handlers"),
                "the profiler's own CPU (cpu_samples_in_handlers) is not reported: " + wall.counters.keySet());
    }

    private Run run(String name, String options, int workers, long millis, boolean register) throws Exception {
        Path file = dir.resolve(name + ".jfr");
        ChildJvm.Result r;
        String host;
        try (ThrottledHost throttled = ThrottledHost.open(SHARE)) {
            host = throttled.describe();
            r = throttled.run(new ChildJvm()
                    .classpath(TestEnv.libJar())
                    .main(CpuBesideWallMain.class, "start," + options + ",file=" + file, Integer.toString(workers),
                            Long.toString(millis), Boolean.toString(register))
                    .timeout(Duration.ofMinutes(3)), dir);
        }
        assertEquals(0, r.exitCode, host + "\n" + r.describe());
        assertTrue(r.stdout.contains("workload done") && Files.exists(file), host + "\n" + r.describe());
        Run run = new Run(name + " (" + options + ")", host);
        for (String line : r.stdout.split("\n")) {
            if (line.startsWith("cpuNanos=")) {
                run.cpuNanos = Long.parseLong(line.substring("cpuNanos=".length()).trim());
            } else if (line.startsWith("wallNanos=")) {
                run.wallNanos = Long.parseLong(line.substring("wallNanos=".length()).trim());
            } else if (line.startsWith("counter ")) {
                String[] kv = line.substring("counter ".length()).trim().split("=", 2);
                run.counters.put(kv[0], Long.parseLong(kv[1]));
            }
        }
        List<RecordedEvent> all = JfrReader.readAll(file);
        for (RecordedEvent e : JfrReader.ofType(all, JfrReader.EXECUTION_SAMPLE)) {
            String thread = JfrReader.threadName(e);
            if (thread == null || !thread.startsWith("busy-")) {
                continue;
            }
            run.samples++;
            run.weight += e.getLong("weight");
            List<RecordedFrame> frames = JfrReader.frames(e);
            RecordedMethod leaf = frames.isEmpty() ? null : frames.get(0).getMethod();
            run.leafCounts.merge(leaf == null ? "(no frames)" : leaf.getType().getName() + "." + leaf.getName(), 1,
                    Integer::sum);
            if (JfrReader.contains(e, CpuBurner.class, "chainC")) {
                run.hot++;
            }
            // Our JVMTI callbacks (ThreadEnd names the ending thread) are work the profiler really
            // does on the thread, after the workload: a CPU sample there is a true one. What this test
            // is about is a sample whose stack runs through our signal handlers.
            if (frames.stream().anyMatch(WallOnThrottledHostTest::isOurs)
                    && frames.stream().noneMatch(WallOnThrottledHostTest::isJvmtiCallback)) {
                run.own++;
                run.ownSamples.add(e);
            }
        }
        run.methodSamples = JfrReader.ofType(all, WallClockTest.METHOD_SAMPLE).size();
        return run;
    }

    /**
     * A frame of the profiler's native library: its Rust functions are named by the crate
     * ({@code javaProfiler::sample::wall::on_wall_signal}), its assembly loads {@code ddprof_*},
     * an unnamed address by the library.
     */
    static boolean isOurs(RecordedFrame f) {
        RecordedMethod m = f.getMethod();
        String name = m == null || m.getName() == null ? "" : m.getName();
        return name.startsWith("javaProfiler::") || name.startsWith("ddprof_") || name.contains("libjavaProfiler");
    }

    /** The VM calling into a JVMTI agent's event callback ({@code JvmtiExport::post_thread_end}). */
    static boolean isJvmtiCallback(RecordedFrame f) {
        RecordedMethod m = f.getMethod();
        return m != null && m.getName() != null && m.getName().startsWith("JvmtiExport::post_");
    }

    private static final class Run {
        final String name;
        final String host;
        long cpuNanos;
        long wallNanos;
        int samples;
        long weight;
        int own;
        /** Samples naming the workload's hot loop. */
        int hot;
        int methodSamples;
        final List<RecordedEvent> ownSamples = new ArrayList<>();
        final Map<String, Integer> leafCounts = new TreeMap<>();
        final Map<String, Long> counters = new TreeMap<>();

        Run(String name, String host) {
            this.name = name;
            this.host = host;
        }

        /** The leaf frames seen, most frequent first, for failure messages. */
        String leaves() {
            StringBuilder sb = new StringBuilder("\nleaf frames of " + name + ":");
            leafCounts.entrySet().stream()
                    .sorted((a, b) -> b.getValue() - a.getValue())
                    .limit(8)
                    .forEach(e -> sb.append("\n  ").append(e.getValue()).append("  ").append(e.getKey()));
            return sb.toString();
        }
    }
}
