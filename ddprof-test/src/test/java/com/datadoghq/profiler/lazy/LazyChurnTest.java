package com.datadoghq.profiler.lazy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedMethod;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Class churn under {@code fjmethodid=lazy} ({@link LazyChurnMain}): hundreds of uniquely named,
 * same-shaped classes run one after the other and unload, their metadata reusing what the previous
 * ones left, while dumps run every 300 ms. No frame may carry the name of a class other than the one
 * running when the sample was taken (the sample's context says which). Before the fix a name kept
 * from an earlier dump for an address was handed to the next class's method at that address: 13 of
 * 2,060 churn frames on JDK 17, 342 of 5,845 on JDK 11. The run yields thousands of churn frames, so
 * a rate of that order fails it with near certainty.
 *
 * <p>The same churn in the default mode, where every frame is a jmethodID: there the library
 * watcher reads the new IDs' metadata ahead of the dump ({@code methods/ahead_ids.rs}) while the
 * classes it read unload within the next few hundred milliseconds and the next ones reuse their
 * memory. A dump may take only what the IDs' slots still vouch for.
 */
class LazyChurnTest {
    private static final int CLASSES = 700;

    @TempDir
    Path dir;

    @Test
    void noFrameIsNamedAfterAClassOutsideItsRunWindow() throws Exception {
        ChildJvm.Result r = churn("cpu=1ms,fjmethodid=lazy");
        assertTrue(r.stdout.contains("counter fjmethodid_lazy_fallback=0"), "lazy mode did not run:\n" + r.describe());
        assertTrue(r.stdout.contains("counter method_resolve_lazy_jmethodids_created=0"), r.describe());
        assertEveryChurnFrameIsItsRunningClass();
    }

    @Test
    void jmethodIdFramesNamedFromMetadataReadAheadAreNeverAnotherClass() throws Exception {
        ChildJvm.Result r = churn("cpu=1ms");
        long takenAhead = r.values("counter ").getOrDefault("jmethodid_names_taken_ahead", -1L);
        if (TestEnv.jdk() < 25) {
            assertTrue(takenAhead > 0, "no name read ahead was taken:\n" + r.describe());
        }
        assertEveryChurnFrameIsItsRunningClass();
    }

    private ChildJvm.Result churn(String options) throws Exception {
        ChildJvm.Result r = new ChildJvm()
                .classpath(TestEnv.libJar())
                .jvmArgs("-Xmx256m")
                .main(LazyChurnMain.class, dir.toString(), String.valueOf(CLASSES), options)
                .timeout(Duration.ofSeconds(180))
                .run(dir);
        assertFalse(r.timedOut, "child JVM hung:\n" + r.describe());
        assertEquals(0, r.exitCode, "child JVM failed:\n" + r.describe());
        assertTrue(r.stdout.contains("workload done"), r.describe());
        return r;
    }

    private void assertEveryChurnFrameIsItsRunningClass() throws Exception {

        String prefix = LazyChurnMain.TEMPLATE.substring(0, LazyChurnMain.TEMPLATE.length() - 8);
        List<Path> files;
        try (Stream<Path> s = Files.list(dir)) {
            files = s.filter(p -> p.getFileName().toString().endsWith(".jfr")).sorted().collect(Collectors.toList());
        }
        int named = 0;
        int unloaded = 0;
        List<String> wrong = new ArrayList<>();
        for (Path file : files) {
            for (RecordedEvent e : JfrReader.executionSamples(file)) {
                long running = e.getLong("spanId") - 1;
                for (RecordedFrame f : JfrReader.frames(e)) {
                    RecordedMethod m = f.getMethod();
                    if (m == null || m.getType() == null) {
                        continue;
                    }
                    String type = m.getType().getName();
                    if (!type.startsWith(prefix)) {
                        if (m.getName().equals("<unloaded>") && running >= 0) {
                            unloaded++;
                        }
                        continue;
                    }
                    named++;
                    long index = Long.parseLong(type.substring(prefix.length()));
                    if (index != running && wrong.size() < 1000) {
                        wrong.add(file.getFileName() + ": " + type.substring(prefix.length() - 5) + "." + m.getName()
                                + " sampled while " + (running < 0 ? "no churn class" : "class " + running) + " ran");
                    }
                }
            }
        }
        assertTrue(wrong.isEmpty(), wrong.size() + " of " + named + " churn frames named after another class: "
                + wrong.subList(0, Math.min(20, wrong.size())));
        // About 10 per class at 1 ms (5 ms of CPU each, two churn frames a sample); refusals
        // (<unloaded>) are allowed, the bulk must be named.
        assertTrue(named >= 2 * CLASSES, "too few churn frames to judge: " + named + " named, "
                + unloaded + " <unloaded>, in " + files.size() + " files");
    }
}
