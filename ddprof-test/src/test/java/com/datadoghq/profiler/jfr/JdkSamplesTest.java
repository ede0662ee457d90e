package com.datadoghq.profiler.jfr;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.CpuBurner;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.JmcParser;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code jdksamples} (issue 37): each CPU sample is also written as the JDK's own
 * {@code jdk.ExecutionSample}, the only CPU event that {@code jfr view hot-methods}, JMC's Method
 * Profiling page and its rules know, so those tools see our samples; the {@code datadog.*} schema the
 * tracer's backend reads stays as it is, and our converters count each sample once.
 */
class JdkSamplesTest {
    static final String JDK_SAMPLE = "jdk.ExecutionSample";

    @TempDir
    Path dir;

    /** The burner's own CPU time in the last {@link #record}, in nanoseconds. */
    private volatile long burnerCpuNanos;

    private Path record(String options) throws Exception {
        Path jfr = dir.resolve("rec.jfr");
        JavaProfiler profiler = TestEnv.profiler();
        TestEnv.stopQuietly(profiler);
        profiler.execute("start,cpu=10ms," + options + "file=" + jfr);
        try {
            Thread t = new Thread(() -> {
                CpuBurner.burn(600);
                burnerCpuNanos = ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime();
            }, "jdk-samples-burner");
            t.start();
            t.join();
        } finally {
            profiler.stop();
        }
        return jfr;
    }

    /**
     * The burner's samples stand for at least half of the 10 ms periods of CPU it got. Weights, not
     * events: on a busy host one sample can carry several periods.
     */
    private void assertBurnerSampled(List<RecordedEvent> ours) {
        List<RecordedEvent> burner = JfrReader.onThread(ours, "jdk-samples-burner");
        long weight = burner.stream().mapToLong(e -> Math.max(1, e.getLong("weight"))).sum();
        long periods = burnerCpuNanos / 10_000_000L;
        System.out.println("JdkSamplesTest: the burner's samples: " + burner.size() + " weighing " + weight
                + " periods for its " + burnerCpuNanos / 1_000_000 + " ms of CPU");
        assertTrue(periods >= 20 && weight * 2 >= periods, "the burner's samples: " + burner.size() + " weighing "
                + weight + " periods for its " + burnerCpuNanos / 1_000_000 + " ms of CPU");
    }

    /** (time, thread, frames) of each event: the two kinds must describe the same samples. */
    private static Map<String, Integer> shape(List<RecordedEvent> events, String threadField) {
        Map<String, Integer> m = new TreeMap<>();
        for (RecordedEvent e : events) {
            StringBuilder k = new StringBuilder().append(e.getStartTime()).append(' ')
                    .append(e.getThread(threadField) == null ? "-" : e.getThread(threadField).getJavaName());
            for (RecordedFrame f : JfrReader.frames(e)) {
                k.append(';').append(f.getMethod() == null ? "?" : f.getMethod().getName());
            }
            m.merge(k.toString(), 1, Integer::sum);
        }
        return m;
    }

    @Test
    void everyCpuSampleIsAlsoTheJdksOwnEventAndToolsReadIt() throws Exception {
        Path jfr = record("jdksamples,");
        List<RecordedEvent> all = JfrReader.readAll(jfr);
        List<RecordedEvent> ours = JfrReader.ofType(all, JfrReader.EXECUTION_SAMPLE);
        List<RecordedEvent> jdk = JfrReader.ofType(all, JDK_SAMPLE);
        List<RecordedEvent> burner = JfrReader.onThread(ours, "jdk-samples-burner");
        assertBurnerSampled(ours);
        assertEquals(ours.size(), jdk.size(), "one jdk.ExecutionSample per datadog.ExecutionSample");
        assertEquals(shape(ours, "eventThread"), shape(jdk, "sampledThread"),
                "the same time, thread and stack in both");
        assertTrue(jdk.stream().allMatch(e -> e.getString("state") != null), "state set");

        // The JDK's tool: hot-methods reads jdk.ExecutionSample only (JDK 21+ has `jfr view`).
        if (Runtime.version().feature() >= 21) {
            Path tool = Paths.get(System.getProperty("java.home"), "bin", "jfr");
            if (Files.isExecutable(tool)) {
                Process p = new ProcessBuilder(tool.toString(), "view", "hot-methods", jfr.toString())
                        .redirectErrorStream(true).start();
                String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                assertTrue(p.waitFor(60, TimeUnit.SECONDS) && p.exitValue() == 0, out);
                assertTrue(out.contains("chainC"), "jfr view hot-methods names the hot method:\n" + out);
            }
        }

        // JMC's parser, which its Method Profiling page and rules read through.
        try {
            JmcParser.Summary jmc = JmcParser.read(jfr.toFile(), JDK_SAMPLE, "chainC");
            assertEquals((long) jdk.size(), jmc.countsByType.getOrDefault(JDK_SAMPLE, 0L), "JMC's count");
            assertTrue(jmc.stacksWithMethod * 2 >= burner.size(), "JMC's jdk.ExecutionSample stacks with chainC: "
                    + jmc.stacksWithMethod + " of the burner's " + burner.size());
        } catch (UnsupportedClassVersionError e) {
            Assumptions.assumeTrue(false, "JMC's parser needs a newer Java than " + TestEnv.jdk() + ": " + e);
        }

        // Our converters count each sample once.
        long weight = ours.stream().mapToLong(e -> Math.max(1, e.getLong("weight"))).sum();
        Path collapsed = dir.resolve("rec.collapsed");
        ChildJvm.Result r = new ChildJvm().jvmArgs("-jar", TestEnv.toolsJar().toString(), "convert", "--to", "collapsed",
                "--event", "cpu", jfr.toString(), collapsed.toString()).timeout(Duration.ofMinutes(3)).run(dir);
        assertEquals(0, r.exitCode, r.describe());
        long total = 0;
        for (String line : Files.readAllLines(collapsed)) {
            total += Long.parseLong(line.substring(line.lastIndexOf(' ') + 1));
        }
        assertEquals(weight, total, "collapsed total: the datadog samples' weights, not twice");
    }

    @Test
    void withoutTheOptionNoJdkSamples() throws Exception {
        List<RecordedEvent> all = JfrReader.readAll(record(""));
        assertBurnerSampled(JfrReader.ofType(all, JfrReader.EXECUTION_SAMPLE));
        assertEquals(0, JfrReader.ofType(all, JDK_SAMPLE).size());
    }
}
