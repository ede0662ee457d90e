package com.datadoghq.profiler.lifecycle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Under {@code -Xcheck:jni} the profiler holds no more JNI local references than it asked room
 * for: checked JNI prints "WARNING: JNI local refs: N, exceeds capacity: M" with a stack for every
 * call past the room asked for, which fills the log of a service run that way. At start
 * (GetLoadedClasses hands over one reference per loaded class) and at a dump that names hundreds
 * of classes (a reference per class kept for the dump: the lazy mode's pins, the default mode's
 * class-name cache), in both modes. The frames of those classes are named right as well.
 */
class CheckedJniTest {
    @ParameterizedTest
    @ValueSource(strings = {"true", "lazy"})
    void noLocalReferenceWarnings(String mode, @org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        ChildJvm.Result r = new ChildJvm()
                .classpath(TestEnv.libJar())
                .jvmArgs("-Xcheck:jni", "-Xmx256m")
                .main(CheckedJniMain.class, dir.toString(), mode)
                .timeout(Duration.ofSeconds(120))
                .run(dir);
        assertFalse(r.timedOut, "child JVM hung:\n" + r.describe());
        assertEquals(0, r.exitCode, "child JVM failed:\n" + r.describe());
        assertTrue(r.stdout.contains("workload done"), r.describe());
        assertFalse(r.stderr.contains("JNI local refs"), "checked JNI warned:\n" + r.describe());

        // Enough of the copies were sampled that the dump kept hundreds of class references:
        // 400 x 8 ms of CPU is 800 samples at the 4 ms tick of the coarsest engine, a quarter of
        // that is asked for. Every frame of a copy carries the copy's method name.
        int inCopies = 0;
        for (RecordedEvent e : JfrReader.executionSamples(dir.resolve("dump.jfr"))) {
            for (RecordedFrame f : JfrReader.frames(e)) {
                if (f.getMethod().getType().getName().endsWith("ManyClassesSpin")) {
                    assertEquals("accept", f.getMethod().getName(), "misnamed: " + f);
                    assertEquals("(J)V", f.getMethod().getDescriptor(), "misnamed: " + f);
                    inCopies++;
                    break;
                }
            }
        }
        int expected = CheckedJniMain.CLASSES * CheckedJniMain.MILLIS / 4 / 4;
        assertTrue(inCopies >= expected, inCopies + " samples in the copies, expected at least " + expected);
    }
}
