package com.datadoghq.profiler.lifecycle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.CpuWorkloadMain;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The first start's host check (upstream's "sanity check") is advisory: a JVM whose -Xmx cannot
 * fit on this host still gets its profile, and the recording says why it may be in danger
 * ({@code sanityCheckFailed}, {@code sanityCheckDetail}); {@code nosanity} skips the check. Each
 * case is a fresh JVM: the check runs once per process.
 */
class SanityCheckTest {
    private static Map<String, String> settings(Path dir, String options, String... jvmArgs) throws Exception {
        Path file = dir.resolve("sanity.jfr");
        ChildJvm child = new ChildJvm().timeout(Duration.ofSeconds(90));
        String[] all = new String[jvmArgs.length + 1];
        System.arraycopy(jvmArgs, 0, all, 0, jvmArgs.length);
        all[jvmArgs.length] = "-agentpath:" + TestEnv.nativeLib() + "=start,cpu=10ms," + options + "file=" + file;
        ChildJvm.Result r = child.jvmArgs(all).main(CpuWorkloadMain.class, "500").run(dir);
        assertEquals(0, r.exitCode, r.describe());
        Map<String, String> out = new HashMap<>();
        for (RecordedEvent e : JfrReader.events(file, JfrReader.ACTIVE_SETTING)) {
            out.put(e.getString("name"), e.getString("value"));
        }
        out.put("stderr", r.stderr);
        assertTrue(JfrReader.executionSamples(file).size() > 0, "the profile is taken: " + r.describe());
        return out;
    }

    @Test
    void aHeapBeyondTheHostIsRecordedAndProfilingGoesOn(@TempDir Path dir) throws Exception {
        // G1 commits its initial heap in regions, whatever -Xmx says, so the JVM starts.
        Map<String, String> s = settings(dir, "", "-XX:+UseG1GC", "-Xmx900g", "-Xms8m");
        assertEquals("true", s.get("sanityCheckFailed"));
        String detail = s.get("sanityCheckDetail");
        assertTrue(detail != null && detail.startsWith("[sanity] cpu=ok,memory=fail,"), detail);
        assertTrue(detail.contains("heap_mb=921600"), detail);
        assertTrue(s.get("stderr").contains("despite failed sanity check"), s.get("stderr"));
    }

    @Test
    void aHostWithRoomPasses(@TempDir Path dir) throws Exception {
        Map<String, String> s = settings(dir, "", "-Xmx64m");
        assertEquals("false", s.get("sanityCheckFailed"));
        assertFalse(s.containsKey("sanityCheckDetail"));
    }

    @Test
    void nosanitySkipsTheCheck(@TempDir Path dir) throws Exception {
        Map<String, String> s = settings(dir, "nosanity,", "-XX:+UseG1GC", "-Xmx900g", "-Xms8m");
        assertEquals("false", s.get("sanityCheckFailed"));
        assertFalse(s.containsKey("sanityCheckDetail"));
    }
}
