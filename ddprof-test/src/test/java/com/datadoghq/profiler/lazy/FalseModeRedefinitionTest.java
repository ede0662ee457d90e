package com.datadoghq.profiler.lazy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.DataInputStream;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedMethod;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code fjmethodid=false} and redefinition ({@link FalseModeRedefineMain}): an application-loader
 * class's frames are raw {@code Method*}s named at dump time from VM metadata, which is safe only
 * while the class's methods are never freed. A redefinition frees the old ones once off every
 * stack, and their memory is reused by the class's next version, so a raw frame of a redefined
 * class is refused ({@code unknown}, counted in {@code method_resolve_lazy_redefined} as the lazy
 * mode's are), never named from what its address holds at dump time. Frames sampled after the
 * redefinition carry the jmethodIDs the redefinition hook made and are named.
 */
class FalseModeRedefinitionTest {
    private static final String TARGET = LazyRedefTarget.class.getName();

    @TempDir
    Path dir;

    @Test
    void rawFramesOfARedefinedClassAreRefusedNotNamed() throws Exception {
        ChildJvm.Result r = new ChildJvm()
                .classpath(TestEnv.libJar())
                .jvmArgs("-javaagent:" + LazyRedefinitionStressTest.agentJar(dir, FalseModeRedefineMain.class), "-Xmx256m")
                .main(FalseModeRedefineMain.class, dir.toString())
                .timeout(Duration.ofSeconds(90))
                .run(dir);
        assertFalse(r.timedOut, "child JVM hung:\n" + r.describe());
        assertEquals(0, r.exitCode, "child JVM failed:\n" + r.describe());
        assertTrue(r.stdout.contains("workload done") && r.stdout.contains("loader true"), r.describe());
        assertFalse(r.stdout.contains("WARNING"), r.describe());
        Map<String, Long> v = values(r.stdout);
        long t0 = v.get("redefine_start");
        long t1 = v.get("redefine_end");

        Path file = dir.resolve("dump.jfr");
        long[] header;
        try (InputStream in = Files.newInputStream(file); DataInputStream d = new DataInputStream(in)) {
            d.skipBytes(8);
            assertEquals(Files.size(file), d.readLong(), "one chunk");
            d.skipBytes(16);
            long startNanos = d.readLong();
            d.readLong();
            header = new long[] {startNanos, d.readLong()};
        }
        int before = 0;
        int beforeRefused = 0;
        List<String> beforeNamed = new ArrayList<>();
        int after = 0;
        int afterNamed = 0;
        for (RecordedEvent e : JfrReader.executionSamples(file)) {
            if (!"fr-worker".equals(JfrReader.threadName(e))) {
                continue;
            }
            Instant at = e.getStartTime();
            long ticks = header[1] + at.getEpochSecond() * 1_000_000_000L + at.getNano() - header[0];
            boolean named = false;
            boolean refused = false;
            for (RecordedFrame f : JfrReader.frames(e)) {
                RecordedMethod m = f.getMethod();
                named |= m != null && m.getType() != null && m.getType().getName().equals(TARGET);
                refused |= m != null && m.getName().equals("unknown");
            }
            if (ticks < t0) {
                before++;
                if (refused) {
                    beforeRefused++;
                }
                if (named && beforeNamed.size() < 10) {
                    beforeNamed.add(JfrReader.describe(e));
                }
            } else if (ticks > t1) {
                after++;
                if (named) {
                    afterNamed++;
                }
            }
        }
        String summary = "samples before the redefinition " + before + " (refused " + beforeRefused + "), after " + after
                + " (named " + afterNamed + "), CPU before " + v.get("cpu_before_ns") / 1_000_000 + " ms, after "
                + v.get("cpu_after_ns") / 1_000_000 + " ms, method_resolve_lazy_redefined "
                + v.get("method_resolve_lazy_redefined") + ", walkvm_frames_raw " + v.get("walkvm_frames_raw");
        System.out.println("FalseModeRedefinitionTest " + summary);
        // Floors from the CPU each phase got: the CPU timer fires at most once per scheduler tick.
        assertTrue(before >= v.get("cpu_before_ns") / 1_000_000 / 20, summary);
        assertTrue(after >= v.get("cpu_after_ns") / 1_000_000 / 20, summary);
        assertTrue(beforeNamed.isEmpty(), "raw frames of the redefined class named from metadata (" + summary + "):\n  "
                + String.join("\n  ", beforeNamed));
        assertTrue(beforeRefused >= before / 2, summary);
        assertTrue(v.get("method_resolve_lazy_redefined") > 0, summary);
        // Only a call running at the redefinition (1 ms of CPU) finishes in the old, unnamed methods.
        assertTrue(afterNamed >= after / 2, summary);
    }

    private static Map<String, Long> values(String stdout) {
        Map<String, Long> m = new HashMap<>();
        for (String line : stdout.split("\n")) {
            String l = line.startsWith("counter ") ? line.substring(8) : line;
            String[] kv = l.split("=", 2);
            if (kv.length == 2 && kv[1].trim().matches("-?\\d+")) {
                m.put(kv[0].trim(), Long.parseLong(kv[1].trim()));
            }
        }
        return m;
    }
}
