package com.datadoghq.profiler.lazy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.IsolatingLoader;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedMethod;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code fjmethodid=false} in a fresh JVM ({@link FjmethodidFalseMain}), where no earlier
 * {@code true} start gave the application's classes jmethodIDs:
 * <ul>
 *   <li>with the VM walker, the frames of an application-loader class are raw {@code Method*}
 *   frames, named at dump time from VM metadata: class, method, descriptor, modifiers and line
 *   numbers match what AsyncGetCallTrace's jmethodIDs give for the same code;</li>
 *   <li>a copy of the same class from a custom loader gets jmethodIDs at ClassPrepare: the same
 *   workload, differing only in its loader, turns from mostly raw frames into mostly jmethodID
 *   frames, and is named the same;</li>
 *   <li>with AsyncGetCallTrace ({@code cstack=dwarf}) the mode preloads like {@code true} and
 *   says so.</li>
 * </ul>
 * The workload's thread holds {@value FalseModeSpin#DEPTH}+ frames of {@link FalseModeSpin} on top
 * of a few frames of {@code java.lang.Thread}, and no other thread runs Java code meanwhile, so the
 * walker's frame counters of a session are dominated by the workload class's frames.
 */
class FjmethodidFalseTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    private static final String SPIN = FalseModeSpin.class.getName();

    @TempDir
    static Path dir;

    private static ChildJvm.Result result;
    /** session -> counter -> value, read before the session's stop. */
    private static final Map<String, Map<String, Long>> counters = new HashMap<>();

    @BeforeAll
    static void runWorkload() throws Exception {
        result = new ChildJvm()
                .classpath(TestEnv.libJar())
                .jvmArgs("-Xmx256m")
                .main(FjmethodidFalseMain.class, dir.toString())
                .timeout(TIMEOUT)
                .run(dir);
        assertFalse(result.timedOut, "child JVM hung:\n" + result.describe());
        assertEquals(0, result.exitCode, "child JVM failed:\n" + result.describe());
        assertTrue(result.stdout.contains("workload done"), result.describe());
        for (String line : result.stdout.split("\n")) {
            if (line.startsWith("counter ")) {
                String[] parts = line.substring(8).split(" ", 2);
                String[] kv = parts[1].split("=", 2);
                counters.computeIfAbsent(parts[0], k -> new TreeMap<>()).put(kv[0], Long.parseLong(kv[1].trim()));
            }
        }
    }

    private static long counter(String session, String name) {
        Map<String, Long> c = counters.get(session);
        assertTrue(c != null, "no counters of session " + session + "\n" + result.describe());
        Long v = c.get(name);
        assertTrue(v != null, "no counter " + name + " in session " + session + ": " + c.keySet());
        return v;
    }

    private static String walkCounters(String session) {
        Map<String, Long> shown = new TreeMap<>();
        counters.getOrDefault(session, new TreeMap<>()).forEach((k, v) -> {
            if (k.startsWith("walkvm_frames") || k.contains("preloaded")) {
                shown.put(k, v);
            }
        });
        return session + " counters " + shown;
    }

    private static String reply(String session) throws Exception {
        return new String(Files.readAllBytes(dir.resolve(session + ".reply")), StandardCharsets.UTF_8);
    }

    @Test
    void applicationClassFramesAreRawAndNamedFromMetadata() throws Exception {
        String reply = reply("app");
        assertFalse(reply.contains("WARNING"), "cstack=vm,fjmethodid=false warned: " + reply);
        long raw = counter("app", "walkvm_frames_raw");
        long ids = counter("app", "walkvm_frames_jmethodid");
        assertTrue(raw > 0, "no raw frames: " + walkCounters("app"));
        // Nearly every walked frame is FalseModeSpin's or Thread's, none of which has a jmethodID.
        assertTrue(raw >= 10 * ids, "the application class's frames should be raw: " + walkCounters("app"));
        assertActiveWalker("app", "vm");

        List<RecordedEvent> samples = workerSamples("app", "app-worker");
        assertWorkloadNamed("app", samples);
        // Raw frames are named from metadata; AsyncGetCallTrace's from jmethodIDs (JVMTI). Both
        // must say the same about the same class.
        List<RecordedEvent> reference = workerSamples("agct", "agct-worker");
        assertEquals(methods(reference), methods(samples), "methods named from metadata vs. from jmethodIDs");
        Set<Integer> recursiveLine = recursiveCallLines(samples);
        assertEquals(1, recursiveLine.size(), "descend frames under descend, lines " + recursiveLine);
        assertEquals(recursiveCallLines(reference), recursiveLine, "line of the recursive call, raw vs. jmethodID frames");
    }

    @Test
    void customLoaderClassGetsJmethodIdsAtClassPrepare() throws Exception {
        assertFalse(reply("custom").contains("WARNING"), reply("custom"));
        assertTrue(result.stdout.contains("custom runs " + SPIN + " of " + IsolatingLoader.class.getName()),
                "the custom session's class was not the isolated copy:\n" + result.describe());
        long raw = counter("custom", "walkvm_frames_raw");
        long ids = counter("custom", "walkvm_frames_jmethodid");
        // The same workload as in the app session, only defined by another loader: now its frames
        // carry jmethodIDs (created at ClassPrepare), and only Thread's few frames stay raw.
        assertTrue(ids > 0, "no jmethodID frames: " + walkCounters("custom"));
        assertTrue(ids >= 5 * raw, "the custom-loader class's frames should have jmethodIDs: " + walkCounters("custom"));
        assertTrue(counter("custom", "jmethodids_preloaded") >= 4,
                "the class prepared during the session got no IDs: " + walkCounters("custom"));

        List<RecordedEvent> samples = workerSamples("custom", "custom-worker");
        assertWorkloadNamed("custom", samples);
        assertEquals(methods(workerSamples("app", "app-worker")), methods(samples),
                "the custom-loader copy named like the application-loader class");
        assertEquals(recursiveCallLines(workerSamples("app", "app-worker")), recursiveCallLines(samples));
    }

    @Test
    void asyncGetCallTracePreloadsAsTrue() throws Exception {
        String reply = reply("agct");
        assertTrue(reply.contains("WARNING: fjmethodid=false needs the VMStructs stack walker")
                && reply.contains("preloaded"), "no preload warning: " + reply);
        assertActiveWalker("agct", "asgct");
        assertEquals(0, counter("agct", "walkvm_frames_raw"), walkCounters("agct"));
        assertTrue(counter("agct", "classes_preloaded") > 100, "the start preloaded no classes: " + walkCounters("agct"));
        assertTrue(JfrReader.readAll(dir.resolve("agct.jfr")).stream()
                        .anyMatch(e -> e.getEventType().getName().endsWith("Log") && e.hasField("message")
                                && e.getString("message").contains("fjmethodid=false")),
                "no log event about the preload");
        // AsyncGetCallTrace names only methods with jmethodIDs: named frames of an application
        // class that had none before this session prove the preload.
        assertWorkloadNamed("agct", workerSamples("agct", "agct-worker"));
    }

    private static void assertActiveWalker(String session, String expected) throws Exception {
        Optional<RecordedEvent> walker = JfrReader.events(dir.resolve(session + ".jfr"), JfrReader.ACTIVE_SETTING).stream()
                .filter(e -> "stackwalker".equals(e.getString("name"))).findFirst();
        assertTrue(walker.isPresent(), session + ": no stackwalker setting in the recording");
        assertEquals(expected, walker.get().getString("value"), session + ": the walker that ran");
    }

    private static List<RecordedEvent> workerSamples(String session, String thread) throws Exception {
        List<RecordedEvent> samples = JfrReader.onThread(JfrReader.executionSamples(dir.resolve(session + ".jfr")), thread);
        assertTrue(samples.size() >= 20, session + ": " + samples.size() + " samples on " + thread + "\n" + result.describe());
        return samples;
    }

    private static boolean isSpin(RecordedFrame f) {
        RecordedMethod m = f.getMethod();
        return m != null && m.getType() != null && SPIN.equals(m.getType().getName());
    }


    /**
     * Most samples hold spin(J)J with a line, {@value FalseModeSpin#DEPTH}+ descend(IJ)J frames
     * with lines, and run()V; almost none has an unknown frame.
     */
    private static void assertWorkloadNamed(String session, List<RecordedEvent> samples) {
        int good = 0;
        int unknown = 0;
        for (RecordedEvent e : samples) {
            boolean spin = false;
            boolean run = false;
            int descend = 0;
            boolean unlocated = false;
            for (RecordedFrame f : JfrReader.frames(e)) {
                if (JfrReader.isUnnamed(f)) {
                    unknown++;
                    continue;
                }
                if (!isSpin(f)) {
                    continue;
                }
                RecordedMethod m = f.getMethod();
                String sig = m.getName() + m.getDescriptor();
                unlocated |= f.getLineNumber() <= 0;
                if ("spin(J)J".equals(sig)) {
                    spin = true;
                } else if ("descend(IJ)J".equals(sig)) {
                    descend++;
                } else if ("run()V".equals(sig)) {
                    run = true;
                }
            }
            if (spin && run && !unlocated && descend >= FalseModeSpin.DEPTH) {
                good++;
            }
        }
        assertTrue(good * 10 >= samples.size() * 7, session + ": only " + good + " of " + samples.size()
                + " samples hold run()V, " + FalseModeSpin.DEPTH + "+ descend(IJ)J and spin(J)J, all with lines:"
                + JfrReader.describe(samples, 5));
        assertTrue(unknown * 20 <= samples.size(), session + ": " + unknown + " unknown frames in " + samples.size()
                + " samples:" + JfrReader.describe(samples, 5));
    }

    /** The workload's methods as recorded: name, descriptor and modifiers. */
    private static Set<String> methods(List<RecordedEvent> samples) {
        Set<String> out = new TreeSet<>();
        for (RecordedEvent e : samples) {
            for (RecordedFrame f : JfrReader.frames(e)) {
                if (isSpin(f)) {
                    RecordedMethod m = f.getMethod();
                    out.add(m.getName() + m.getDescriptor() + " modifiers 0x" + Integer.toHexString(m.getModifiers()));
                }
            }
        }
        return out;
    }

    /** The lines of descend frames whose callee is descend: the recursive call's line. */
    private static Set<Integer> recursiveCallLines(List<RecordedEvent> samples) {
        Set<Integer> lines = new TreeSet<>();
        for (RecordedEvent e : samples) {
            boolean calleeIsDescend = false;
            for (RecordedFrame f : JfrReader.frames(e)) {
                boolean descend = isSpin(f) && "descend".equals(f.getMethod().getName());
                if (descend && calleeIsDescend) {
                    lines.add(f.getLineNumber());
                }
                calleeIsDescend = descend;
            }
        }
        return lines;
    }
}
