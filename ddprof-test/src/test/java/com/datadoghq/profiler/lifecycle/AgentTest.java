package com.datadoghq.profiler.lifecycle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.CpuBurner;
import com.datadoghq.profiler.testing.CpuWorkloadMain;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The profiler started from the command line of a fresh JVM: the recording is complete when the
 * JVM exits normally, with no call to stop().
 */
class AgentTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(60);

    @TempDir
    Path dir;

    @Test
    void agentpathRecordsUntilJvmExit() throws Exception {
        Path file = dir.resolve("agentpath.jfr");
        ChildJvm.Result r = new ChildJvm()
                .jvmArgs("-agentpath:" + TestEnv.nativeLib() + "=start,cpu=10ms,file=" + file)
                .main(CpuWorkloadMain.class, "2000")
                .timeout(TIMEOUT)
                .run(dir);
        assertWorkloadRecorded(r, file);
    }

    @Test
    void javaagentRecordsUntilJvmExit() throws Exception {
        Path file = dir.resolve("javaagent.jfr");
        ChildJvm.Result r = new ChildJvm()
                .jvmArgs("-javaagent:" + TestEnv.libJar() + "=start,cpu=10ms,file=" + file)
                .main(CpuWorkloadMain.class, "2000")
                .timeout(TIMEOUT)
                .run(dir);
        assertWorkloadRecorded(r, file);
    }

    @Test
    void libraryLoadsFromTheJarOnTheClassPath() throws Exception {
        Path file = dir.resolve("classpath.jfr");
        ChildJvm.Result r = new ChildJvm()
                .classpath(TestEnv.libJar())
                .main(ClasspathProfilerMain.class, file.toString(), "2000")
                .timeout(TIMEOUT)
                .run(dir);
        assertWorkloadRecorded(r, file);
        assertTrue(r.stdout.contains("Profiling started"), "execute(start) reply missing:\n" + r.describe());
    }

    private static void assertWorkloadRecorded(ChildJvm.Result r, Path file) throws Exception {
        assertFalse(r.timedOut, "child JVM hung:\n" + r.describe());
        assertEquals(0, r.exitCode, "child JVM failed:\n" + r.describe());
        assertTrue(r.stdout.contains("workload done") || r.stdout.contains("samples="), "workload did not finish:\n" + r.describe());
        assertTrue(Files.isRegularFile(file), "no recording at " + file + ":\n" + r.describe());
        List<RecordedEvent> events = JfrReader.readAll(file);
        List<RecordedEvent> samples = JfrReader.onThread(JfrReader.ofType(events, JfrReader.EXECUTION_SAMPLE), "cpu-worker");
        assertTrue(samples.size() >= 20, "samples on cpu-worker: " + samples.size() + "\n" + r.describe());
        assertTrue(samples.stream().anyMatch(e -> JfrReader.contains(e, CpuBurner.class, "chainC")),
                "no sample in chainC:" + JfrReader.describe(samples, 5));
        assertFalse(JfrReader.ofType(events, JfrReader.PROFILER_CONFIG).isEmpty(),
                "the recording was not closed at JVM exit (no config event)");
    }
}
