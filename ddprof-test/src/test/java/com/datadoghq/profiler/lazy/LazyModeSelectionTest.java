package com.datadoghq.profiler.lazy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.LongUnaryOperator;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.CpuBurner;
import com.datadoghq.profiler.testing.CpuWorkloadMain;
import com.datadoghq.profiler.testing.IsolatingLoader;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.ProfilerExtension;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Which method-ID mode {@code fjmethodid=lazy} gets: lazy with the VMStructs walker; preloading
 * (with a warning and {@code fjmethodid_lazy_fallback}) with AsyncGetCallTrace; {@code false}
 * behaviour when the trace-ID offset cannot be calibrated. Restarts in other modes keep naming
 * every frame.
 */
@ExtendWith(ProfilerExtension.class)
class LazyModeSelectionTest {
    @TempDir
    Path dir;

    private final JavaProfiler profiler;

    LazyModeSelectionTest(JavaProfiler profiler) {
        this.profiler = profiler;
    }

    @Test
    void lazyWithTheVmWalkerRunsLazily() throws Exception {
        Path file = dir.resolve("lazy.jfr");
        String reply = TestEnv.start(profiler, "start,cpu=1ms,fjmethodid=lazy,file=" + file);
        assertFalse(reply.contains("WARNING"), "start warned: " + reply);
        Map<String, Long> c = profiler.getDebugCounters();
        assertEquals(0L, c.get("fjmethodid_lazy_fallback"), c.toString());
        assertTrue(c.get("klass_trace_id_offset") > 0, c.toString());
        assertTrue(c.get("klass_registry_entries") > 100, c.toString());
        assertTrue(c.get("klass_registry_bytes") > 0, c.toString());
        spinFreshClass(400);
        profiler.stop();
        assertNamed(file, "lazy");
        Map<String, Long> after = profiler.getDebugCounters();
        assertTrue(after.get("method_resolve_lazy_metadata") > 0,
                "the freshly loaded class's frames were named from metadata: " + after);
        assertEquals(0L, after.get("method_resolve_lazy_jmethodids_created"), "lazy made jmethodIDs: " + after);
    }

    @Test
    void lazyWithAsyncGetCallTracePreloadsAndSaysSo() throws Exception {
        Path file = dir.resolve("agct.jfr");
        String reply = TestEnv.start(profiler, "start,cpu=1ms,cstack=fp,fjmethodid=lazy,file=" + file);
        assertTrue(reply.contains("WARNING: fjmethodid=lazy needs the VMStructs stack walker"), reply);
        assertEquals(1L, profiler.getDebugCounters().get("fjmethodid_lazy_fallback"));
        spinFreshClass(400);
        profiler.stop();
        assertNamed(file, "agct");
        assertEquals(0L, profiler.getDebugCounters().get("walkvm_frames_raw"));
        // The warning is in the recording too.
        assertTrue(JfrReader.readAll(file).stream().anyMatch(e -> e.getEventType().getName().endsWith("Log")
                && e.getString("message").contains("fjmethodid=lazy")), "no log event about the fallback");
    }

    @Test
    void restartsInEveryOrderOfModesNameEveryFrame() throws Exception {
        String[] modes = {"lazy", "false", "lazy", "true", "lazy", "false", "true"};
        for (int i = 0; i < modes.length; i++) {
            Path file = dir.resolve("round" + i + "-" + modes[i] + ".jfr");
            String reply = TestEnv.start(profiler, "start,cpu=1ms,fjmethodid=" + modes[i] + ",file=" + file);
            assertFalse(reply.contains("WARNING"), modes[i] + ": " + reply);
            spinFreshClass(250);
            CpuBurner.burn(100);
            // A dump mid-session, then the rest at stop.
            Path mid = dir.resolve("round" + i + "-mid.jfr");
            profiler.dump(mid);
            spinFreshClass(250);
            profiler.stop();
            assertNamed(mid, modes[i] + " (round " + i + ", dump)");
            assertNamed(file, modes[i] + " (round " + i + ", stop)");
        }
    }

    @Test
    void calibrationFailureFallsBackToFalse() throws Exception {
        // JDK 11's experimental ZGC exports none of its address masks, so the colored pointers in
        // JNI handles cannot be decoded and the mirror -> Klass* read the calibration needs is
        // refused: a real case of the fallback. Later ZGCs are decoded (LazyZgcTest).
        assumeTrue(TestEnv.jdk() < 15, "needs a ZGC without exported masks (JDK 11); JDK " + TestEnv.jdk());
        Path file = dir.resolve("zgc.jfr");
        ChildJvm.Result r = new ChildJvm()
                .jvmArgs("-XX:+UnlockExperimentalVMOptions", "-XX:+UseZGC",
                        "-agentpath:" + TestEnv.nativeLib() + "=start,cpu=1ms,fjmethodid=lazy,file=" + file)
                .main(CpuWorkloadMain.class, "1000")
                .timeout(Duration.ofSeconds(60))
                .run(dir);
        assertEquals(0, r.exitCode, r.describe());
        assertTrue(r.stderr.contains("fjmethodid=lazy is unavailable") && r.stderr.contains("using fjmethodid=false"),
                r.describe());
        List<RecordedEvent> events = JfrReader.readAll(file);
        assertTrue(JfrReader.ofType(events, JfrReader.PROFILER_COUNTER).stream()
                .anyMatch(e -> "fjmethodid_lazy_fallback".equals(e.getString("name")) && e.getLong("count") == 1),
                "fjmethodid_lazy_fallback is not 1 in the recording");
        List<RecordedEvent> samples = JfrReader.onThread(JfrReader.ofType(events, JfrReader.EXECUTION_SAMPLE), "cpu-worker");
        assertTrue(samples.stream().anyMatch(e -> JfrReader.contains(e, CpuBurner.class, "chainC")),
                "no named sample under the fallback:" + JfrReader.describe(samples, 5));
    }

    /** Runs a fresh custom-loaded LazySpin (no jmethodIDs yet) on this thread. */
    private static void spinFreshClass(long millis) {
        IsolatingLoader.newInstance(LazySpin.class, LongUnaryOperator.class).applyAsLong(millis);
    }

    /** This thread's samples in LazySpin are named, and almost none has an unknown frame. */
    private static void assertNamed(Path file, String what) throws Exception {
        List<RecordedEvent> samples = JfrReader.onThread(JfrReader.executionSamples(file), Thread.currentThread().getName());
        long spin = samples.stream().filter(e -> JfrReader.frames(e).stream().anyMatch(f -> f.getMethod() != null
                && f.getMethod().getType() != null && LazySpin.class.getName().equals(f.getMethod().getType().getName())
                && "spinLoop".equals(f.getMethod().getName()))).count();
        assertTrue(spin >= 10, what + ": samples in LazySpin.spinLoop: " + spin + JfrReader.describe(samples, 5));
        long unknown = samples.stream().filter(e -> JfrReader.frames(e).stream().anyMatch(JfrReader::isUnnamed))
                .count();
        assertTrue(unknown * 20 <= samples.size(), what + ": " + unknown + " of " + samples.size()
                + " samples with unknown frames:" + JfrReader.describe(samples, 8));
    }

}
