package com.datadoghq.profiler.lazy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedMethod;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * In the default jmethodID mode a later dump reuses the names an earlier dump made
 * ({@code methods/kept_ids.rs}) and names the frames alike, and never reuses one across a
 * redefinition: {@link KeptIdNamesMain} redefines {@link LineShiftTarget} with every line moved
 * by {@value KeptIdNamesMain#SHIFT} after a dump that named its {@code hot} method, so a reused
 * name would put the old lines on the new version's samples.
 */
class KeptIdNamesTest {
    private static final String TARGET = LineShiftTarget.class.getName();

    @TempDir
    Path dir;

    @Test
    void laterDumpsReuseNamesButNotAcrossARedefinition() throws Exception {
        Path agent = LazyRedefinitionStressTest.agentJar(dir, KeptIdNamesMain.class);
        ChildJvm.Result r = new ChildJvm()
                .classpath(TestEnv.libJar())
                .jvmArgs("-javaagent:" + agent, "-Xmx256m")
                .main(KeptIdNamesMain.class, dir.toString())
                .timeout(Duration.ofSeconds(120))
                .run(dir);
        assertFalse(r.timedOut, "child JVM hung:\n" + r.describe());
        assertEquals(0, r.exitCode, "child JVM failed:\n" + r.describe());
        assertTrue(r.stdout.contains("workload done"), r.describe());
        Map<String, Long> first = r.values("first ");
        Map<String, Long> second = r.values("second ");
        assertTrue(first.get("jmethodid_names_kept_entries") > 0, "the first dump left no name: " + first);
        assertTrue(second.get("jmethodid_names_kept") > first.get("jmethodid_names_kept"),
                "the second dump reused no name: " + second);

        int shift = KeptIdNamesMain.SHIFT;
        Set<Integer> lines1 = hotLines(dir.resolve("dump-1.jfr"));
        Set<Integer> lines2 = hotLines(dir.resolve("dump-2.jfr"));
        Set<Integer> lines3 = hotLines(dir.resolve("dump-3.jfr"));
        Set<Integer> lines4 = hotLines(dir.resolve("dump-4.jfr"));
        for (Set<Integer> before : java.util.List.of(lines1, lines2, lines3)) {
            assertFalse(before.isEmpty(), "no hot frame before the redefinition");
            assertTrue(before.stream().allMatch(l -> l > 0 && l < shift), "lines before the redefinition: " + before);
        }
        assertFalse(lines4.isEmpty(), "no hot frame after the redefinition");
        assertTrue(lines4.stream().allMatch(l -> l > shift),
                "the new version's samples carry lines of the old one: " + lines4 + " (before: " + lines3 + ")");
    }

    /**
     * The lines of {@link LineShiftTarget#hot}'s frames in the file's samples; asserts the method
     * is named alike (descriptor, modifiers) in every frame.
     */
    private static Set<Integer> hotLines(Path file) throws Exception {
        Set<Integer> lines = new TreeSet<>();
        String named = null;
        for (RecordedEvent e : JfrReader.executionSamples(file)) {
            for (RecordedFrame f : JfrReader.frames(e)) {
                RecordedMethod m = f.getMethod();
                if (m == null || m.getType() == null || !TARGET.equals(m.getType().getName())
                        || !"hot".equals(m.getName())) {
                    continue;
                }
                String now = m.getDescriptor() + " " + m.getModifiers();
                assertTrue(named == null || named.equals(now), file + ": hot named " + named + " and " + now);
                named = now;
                lines.add(f.getLineNumber());
            }
        }
        if (named != null) {
            assertEquals("(J)J 8", named, file.toString());
        }
        return lines;
    }
}
