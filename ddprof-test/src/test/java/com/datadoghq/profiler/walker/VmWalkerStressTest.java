package com.datadoghq.profiler.walker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The VMStructs walker ({@code cstack=vm}, 1 ms CPU samples) in a child JVM that, all at once,
 * throws NullPointerExceptions from implicit null checks (SIGSEGV that HotSpot must still get),
 * deoptimises in a storm, unloads classes and their code, churns the heap and starts and ends
 * hundreds of threads. The JVM must neither crash nor hang, its exceptions must all arrive, and
 * the recording must be whole.
 */
class VmWalkerStressTest {
    private static final long WORK_MILLIS = 8000;
    private static final Duration TIMEOUT = Duration.ofSeconds(90);

    @TempDir
    Path dir;

    @Test
    void vmWalkerSurvivesSignalsDeoptimisationUnloadingGcAndThreadChurn() throws Exception {
        Path file = dir.resolve("stress.jfr");
        long started = System.nanoTime();
        ChildJvm.Result r = new ChildJvm()
                .jvmArgs("-Xmx256m", "-XX:+UseG1GC",
                        "-agentpath:" + TestEnv.nativeLib() + "=start,cpu=1ms,cstack=vm,file=" + file)
                .main(WalkerStressMain.class, Long.toString(WORK_MILLIS))
                .timeout(TIMEOUT)
                .run(dir);
        long tookMillis = (System.nanoTime() - started) / 1_000_000;
        String crash = crashReports();
        assertFalse(r.timedOut, "child JVM hung (killed after " + TIMEOUT + "):\n" + r.describe() + crash);
        assertEquals(0, r.exitCode, "child JVM failed:\n" + r.describe() + crash);
        assertTrue(r.stdout.contains("stress done"), "the stress run did not finish:\n" + r.describe());
        System.out.println("child took " + tookMillis + " ms:\n" + r.stdout);

        // Every null dereference became exactly one caught NullPointerException.
        long[] npe = numbers(r, "^npe caught=(\\d+) expected=(\\d+)$");
        assertTrue(npe[1] > 0, "no NPE expected?\n" + r.describe());
        assertEquals(npe[1], npe[0], "NullPointerExceptions caught by stress-npe vs null dereferences:\n" + r.describe());
        long[] churn = numbers(r, "^churn rounds=(\\d+) npe caught=(\\d+) expected=(\\d+)$");
        assertTrue(churn[0] >= 3, "deoptimisation rounds: " + churn[0] + "\n" + r.describe());
        assertEquals(churn[2], churn[1], "NullPointerExceptions caught in the churn rounds vs null dereferences:\n" + r.describe());
        long[] classes = numbers(r, "^classes defined=(\\d+) unloaded=(\\d+)$");
        assertTrue(classes[1] > 0, "no class was unloaded:\n" + r.describe());
        long[] gc = numbers(r, "^alloc mb=(\\d+) gcs=(\\d+)$");
        assertTrue(gc[1] > 0, "no garbage collection:\n" + r.describe());
        long[] threads = numbers(r, "^threads spawned=(\\d+)$");
        assertTrue(threads[0] >= WalkerStressMain.MIN_THREADS, "threads spawned: " + threads[0]);
        long[] soe = numbers(r, "^soe caught=(\\d+) attempts=(\\d+)$");
        assertEquals(soe[1], soe[0], "each deep recursion should end in one caught StackOverflowError:\n" + r.describe());

        assertTrue(Files.isRegularFile(file), "no recording at " + file + ":\n" + r.describe());
        List<RecordedEvent> events = JfrReader.readAll(file);
        List<RecordedEvent> samples = JfrReader.ofType(events, JfrReader.EXECUTION_SAMPLE);
        Map<String, Long> counters = JfrReader.ofType(events, JfrReader.PROFILER_COUNTER).stream()
                .collect(Collectors.toMap(e -> e.getString("name"), e -> e.getLong("count"), (a, b) -> b, TreeMap::new));
        String walk = counters.entrySet().stream()
                .filter(e -> e.getKey().startsWith("walk") || e.getKey().equals("samples"))
                .map(e -> e.getKey() + "=" + e.getValue())
                .collect(Collectors.joining(", "));
        System.out.println(samples.size() + " samples; counters: " + walk);

        assertFalse(JfrReader.ofType(events, JfrReader.PROFILER_CONFIG).isEmpty(),
                "the recording was not closed at JVM exit (no config event); counters: " + walk);
        assertTrue(samples.size() > 0, "no " + JfrReader.EXECUTION_SAMPLE + " events; counters: " + walk);
        assertEquals("vm", events.stream()
                .filter(e -> JfrReader.ACTIVE_SETTING.equals(e.getEventType().getName()))
                .filter(e -> "stackwalker".equals(e.getString("name")))
                .map(e -> e.getString("value")).findFirst().orElse(null), "stackwalker setting");
        Long frames = counters.get("walkvm_frames_jmethodid");
        assertNotNull(frames, "no walkvm_frames_jmethodid counter among " + counters.keySet());
        TreeSet<String> threadsSampled = samples.stream().map(JfrReader::threadName)
                .filter(n -> n != null && n.startsWith("stress-"))
                .map(n -> n.startsWith("stress-short-") ? "stress-short-*" : n)
                .collect(Collectors.toCollection(TreeSet::new));
        System.out.println("stress threads sampled: " + threadsSampled);
        assertTrue(threadsSampled.contains("stress-npe") && threadsSampled.contains("stress-churn"),
                "no samples of stress-npe / stress-churn; sampled: " + threadsSampled + "; counters: " + walk);
    }

    /** Numbers captured by {@code regex} from one line of the child's stdout. */
    private static long[] numbers(ChildJvm.Result r, String regex) {
        Matcher m = Pattern.compile(regex, Pattern.MULTILINE).matcher(r.stdout);
        assertTrue(m.find(), "no line matching " + regex + " in the child's output:\n" + r.describe());
        long[] out = new long[m.groupCount()];
        for (int i = 0; i < out.length; i++) {
            out[i] = Long.parseLong(m.group(i + 1));
        }
        return out;
    }

    /** The head of any hs_err file the child left in its working directory. */
    private String crashReports() throws IOException {
        StringBuilder sb = new StringBuilder();
        try (Stream<Path> files = Files.list(dir)) {
            for (Path p : files.filter(f -> f.getFileName().toString().startsWith("hs_err")).collect(Collectors.toList())) {
                List<String> lines = Files.readAllLines(p, StandardCharsets.ISO_8859_1);
                sb.append("\n--- ").append(p.getFileName()).append(" ---\n")
                        .append(String.join("\n", lines.subList(0, Math.min(60, lines.size()))));
            }
        }
        return sb.toString();
    }
}
