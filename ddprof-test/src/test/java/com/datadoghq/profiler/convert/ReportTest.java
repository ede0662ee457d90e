package com.datadoghq.profiler.convert;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.CpuWorkloadMain;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedMethod;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code java -jar ddprof.jar report} on a real recording with CPU and wall samples (a child JVM
 * profiled from its start by {@code -javaagent}): each event kind gets its own unwalked share,
 * printed before anything else and equal to what the JDK's parser counts in that kind alone;
 * {@code --event} keeps one kind. Then what {@code report} and {@code convert} say of an empty
 * and of a truncated recording.
 */
class ReportTest {
    static final String WALL_SAMPLE = "datadog.MethodSample";
    /** "cpu:  unwalked 1.5% (1 of 67 samples) | ... | threads 2" */
    static final Pattern KIND_LINE =
            Pattern.compile("^(\\w+):\\s+unwalked (\\d+\\.\\d)% \\((\\d+) of (\\d+) samples\\)(.*)$");

    static Path dir;
    static Path jfr;
    static List<RecordedEvent> cpu;
    static List<RecordedEvent> wall;

    @BeforeAll
    static void record() throws Exception {
        dir = Files.createTempDirectory("ddprof-report-");
        jfr = dir.resolve("cpu-wall.jfr");
        ChildJvm.Result run = new ChildJvm()
                .jvmArgs("-javaagent:" + TestEnv.libJar() + "=start,cpu=10ms,wall=10ms,filter=,file=" + jfr)
                .main(CpuWorkloadMain.class, "1500")
                .timeout(Duration.ofMinutes(2))
                .run(dir);
        assertEquals(0, run.exitCode, run.describe());
        cpu = JfrReader.events(jfr, JfrReader.EXECUTION_SAMPLE);
        wall = JfrReader.events(jfr, WALL_SAMPLE);
        // The worker burns CPU for 1.5 s of its own CPU time; the main thread waits for it all along.
        assertFalse(cpu.isEmpty(), "no CPU samples in " + jfr + "\n" + run.describe());
        assertFalse(wall.isEmpty(), "no wall samples in " + jfr + "\n" + run.describe());
    }

    @AfterAll
    static void cleanUp() throws IOException {
        TestEnv.deleteTree(dir);
    }

    static ChildJvm.Result jar(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(Arrays.asList("-jar", TestEnv.toolsJar().toString()));
        cmd.addAll(Arrays.asList(args));
        ChildJvm.Result r = new ChildJvm().jvmArgs(cmd.toArray(new String[0])).timeout(Duration.ofMinutes(2)).run(dir);
        assertFalse(r.timedOut, r.describe());
        return r;
    }

    /**
     * The documented meaning of unwalked (docs/converters.md, "report"): no frames, or a frame
     * without a method, or a class-less frame named "", "unknown", "<unloaded>" or "[...]".
     */
    static boolean unwalked(RecordedEvent e) {
        List<RecordedFrame> frames = JfrReader.frames(e);
        if (frames.isEmpty()) {
            return true;
        }
        for (RecordedFrame f : frames) {
            RecordedMethod m = f.getMethod();
            if (m == null) {
                return true;
            }
            boolean classless = m.getType() == null || m.getType().getName() == null || m.getType().getName().isEmpty();
            String name = m.getName() == null ? "" : m.getName();
            if (classless && (name.isEmpty() || name.equals("unknown") || name.equals("<unloaded>")
                    || name.startsWith("["))) {
                return true;
            }
        }
        return false;
    }

    /** The per-kind lines at the top of the report, kind -> {unwalked, samples}, in printed order. */
    static Map<String, long[]> kindLines(String out) {
        Map<String, long[]> kinds = new LinkedHashMap<>();
        for (String line : out.split("\n")) {
            if (line.isEmpty()) {
                break; // the summary block ends at the first blank line; the tables follow
            }
            Matcher m = KIND_LINE.matcher(line);
            assertTrue(m.matches(), "not a per-kind line at the top of the report: '" + line + "'\n" + out);
            long unwalked = Long.parseLong(m.group(3));
            long samples = Long.parseLong(m.group(4));
            assertEquals(String.format(java.util.Locale.ROOT, "%.1f", 100.0 * unwalked / samples), m.group(2),
                    "the percentage of " + line);
            kinds.put(m.group(1), new long[] {unwalked, samples});
        }
        return kinds;
    }

    @Test
    void eachKindGetsItsOwnUnwalkedShareBeforeAnythingElse() throws Exception {
        ChildJvm.Result r = jar("report", jfr.toString());
        assertEquals(0, r.exitCode, r.describe());
        Map<String, long[]> kinds = kindLines(r.stdout);
        assertEquals(Arrays.asList("cpu", "wall"), new ArrayList<>(kinds.keySet()), r.stdout);
        long cpuUnwalked = cpu.stream().filter(ReportTest::unwalked).count();
        long wallUnwalked = wall.stream().filter(ReportTest::unwalked).count();
        assertEquals(cpu.size(), kinds.get("cpu")[1], "cpu samples\n" + r.stdout);
        assertEquals(cpuUnwalked, kinds.get("cpu")[0], "cpu unwalked, counted among cpu samples only\n" + r.stdout);
        assertEquals(wall.size(), kinds.get("wall")[1], "wall samples\n" + r.stdout);
        assertEquals(wallUnwalked, kinds.get("wall")[0], "wall unwalked, counted among wall samples only\n" + r.stdout);
        // Then one table per kind, each headed by its kind and its own total.
        long cpuWeight = cpu.stream().mapToLong(ConvertTest::weightOf).sum();
        assertTrue(r.stdout.contains("\ncpu: top methods by self value, in sampling intervals (total " + cpuWeight + ")\n"),
                r.stdout);
        long wallWeight = wall.stream().mapToLong(ConvertTest::weightOf).sum();
        assertTrue(r.stdout.contains("\nwall: top methods by self value, in sampling intervals (total " + wallWeight
                + ")\n"), r.stdout);
        assertTrue(r.stdout.contains(CpuWorkloadMain.class.getPackageName()), "the workload's methods:\n" + r.stdout);
        assertTrue(r.stderr.isEmpty(), r.describe());
    }

    @Test
    void eventOptionKeepsOneKind() throws Exception {
        for (String kind : new String[] {"cpu", "wall"}) {
            ChildJvm.Result r = jar("report", jfr.toString(), "--event", kind);
            assertEquals(0, r.exitCode, r.describe());
            assertEquals(Collections.singletonList(kind), new ArrayList<>(kindLines(r.stdout).keySet()), r.stdout);
            String other = kind.equals("cpu") ? "wall" : "cpu";
            assertFalse(r.stdout.contains("\n" + other + ": top methods"), r.stdout);
        }
        // A kind the recording lacks is a failure, said in one line, not an empty report.
        ChildJvm.Result r = jar("report", "--event", "alloc", jfr.toString());
        assertEquals(1, r.exitCode, r.describe());
        assertEquals(1, r.stderr.strip().lines().count(), r.describe());
        assertTrue(r.stderr.startsWith("No alloc sample events in "), r.describe());
        assertTrue(r.stdout.isEmpty(), r.describe());
    }

    /** report and convert on an empty file and on a recording cut in half: one line each, exit 1, no output. */
    @Test
    void emptyAndTruncatedFilesGetOneLineErrors() throws Exception {
        Path empty = Files.createFile(dir.resolve("empty.jfr"));
        byte[] whole = Files.readAllBytes(jfr);
        Path cut = Files.write(dir.resolve("cut.jfr"), Arrays.copyOf(whole, whole.length / 2));
        Path head = Files.write(dir.resolve("head.jfr"), Arrays.copyOf(whole, 10));
        Object[][] cases = {
            {empty, "empty.jfr is empty (0 bytes), not a JFR recording"},
            {cut, "cut.jfr is truncated: chunk "},
            {head, "head.jfr is truncated: chunk 1's header is cut off after 10 bytes"},
        };
        for (Object[] c : cases) {
            Path file = (Path) c[0];
            String expected = (String) c[1];
            for (String[] args : new String[][] {
                {"report", file.toString()},
                {"report", file.toString(), "--memory"},
                {"convert", "--to", "pprof", file.toString(), "out.pb.gz"},
            }) {
                ChildJvm.Result r = jar(args);
                String what = String.join(" ", args) + "\n" + r.describe();
                assertEquals(1, r.exitCode, what);
                assertEquals(1, r.stderr.strip().lines().count(), "one line: " + what);
                assertTrue(r.stderr.contains(expected), what);
                assertTrue(r.stdout.isEmpty(), what);
                assertFalse(Files.exists(dir.resolve("out.pb.gz")), what);
            }
        }
    }
}
