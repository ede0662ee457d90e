package com.datadoghq.profiler.lazy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.CpuBurner;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedMethod;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A later dump of {@code fjmethodid=lazy} reuses the names the previous dump made for classes never
 * redefined ({@code methods/lazy/kept.rs}) and names the same frames the same way: the same
 * methods of the workload's class, with descriptors, modifiers and line numbers, no frame unknown.
 * (That a redefined class's names are never reused is {@link RedefinedFramesTest}'s: it dumps every
 * 200 ms while redefining.)
 */
class LazyKeptNamesTest {
    @TempDir
    Path dir;

    @Test
    void laterDumpReusesNamesAndNamesFramesAlike() throws Exception {
        ChildJvm.Result r = new ChildJvm()
                .classpath(TestEnv.libJar())
                .jvmArgs("-Xmx256m")
                .main(LazyKeptMain.class, dir.toString())
                .timeout(Duration.ofSeconds(90))
                .run(dir);
        assertFalse(r.timedOut, "child JVM hung:\n" + r.describe());
        assertEquals(0, r.exitCode, "child JVM failed:\n" + r.describe());
        assertTrue(r.stdout.contains("workload done"), r.describe());
        Map<String, Long> first = r.values("first ");
        Map<String, Long> second = r.values("second ");
        assertEquals(0L, second.get("fjmethodid_lazy_fallback"), r.describe());
        assertEquals(0L, first.get("method_resolve_lazy_kept"), "nothing to reuse in the first dump");
        assertTrue(first.get("method_resolve_lazy_kept_entries") > 0, "the first dump kept no name: " + first);
        assertTrue(second.get("method_resolve_lazy_kept") > 0, "the second dump reused no name: " + second);
        assertEquals(0L, second.get("method_resolve_lazy_jmethodids_created"), second.toString());

        Map<String, String> named1 = burnerMethods(dir.resolve("dump-1.jfr"));
        Map<String, String> named2 = burnerMethods(dir.resolve("dump-2.jfr"));
        assertTrue(named2.containsKey("chainC"), "no chainC frame in dump 2: " + named2);
        for (Map.Entry<String, String> e : named2.entrySet()) {
            if (named1.containsKey(e.getKey())) {
                assertEquals(named1.get(e.getKey()), e.getValue(), "named otherwise in dump 2: " + e.getKey());
            }
        }
    }

    /**
     * Per method of {@link CpuBurner} in the file's samples: descriptor and modifiers (which must
     * be one per method); asserts a line on every Java frame and no Java frame named {@code unknown}
     * (a frame the lazy checks refused). A walk that stopped (an {@code unknown} frame typed Native,
     * where the walker could not step on) is no naming failure: allowed in at most 2% of the samples.
     */
    private static Map<String, String> burnerMethods(Path file) throws Exception {
        List<RecordedEvent> samples = JfrReader.executionSamples(file);
        Map<String, String> named = new HashMap<>();
        Set<String> lineless = new TreeSet<>();
        int burnerSamples = 0;
        int stopped = 0;
        for (RecordedEvent e : samples) {
            List<RecordedFrame> frames = JfrReader.frames(e);
            boolean burner = false;
            for (RecordedFrame f : frames) {
                RecordedMethod m = f.getMethod();
                if (m == null || m.getType() == null || !m.getType().getName().equals(CpuBurner.class.getName())) {
                    continue;
                }
                burner = true;
                String was = named.put(m.getName(), m.getDescriptor() + " " + m.getModifiers());
                assertTrue(was == null || was.equals(named.get(m.getName())),
                        file + ": " + m.getName() + " named " + was + " and " + named.get(m.getName()));
                if (f.isJavaFrame() && f.getLineNumber() <= 0) {
                    lineless.add(m.getName() + "@" + f.getBytecodeIndex());
                }
            }
            if (burner) {
                burnerSamples++;
                // The frame's JFR type says which: a walk stop is typed Native, a refused method keeps
                // its Java type (RecordedFrame.isJavaFrame() is true for every frame).
                assertFalse(frames.stream().anyMatch(f -> f.getMethod() != null && !"Native".equals(f.getType())
                        && "unknown".equals(f.getMethod().getName())), file + ": " + JfrReader.describe(e));
                if (frames.stream().anyMatch(f -> f.getMethod() != null && "Native".equals(f.getType())
                        && "unknown".equals(f.getMethod().getName()))) {
                    stopped++;
                }
            }
        }
        assertTrue(stopped * 50 <= burnerSamples, file + ": walks that stopped: " + stopped + " of " + burnerSamples);
        assertTrue(lineless.isEmpty(), file + ": frames without a line: " + lineless);
        return named;
    }
}
