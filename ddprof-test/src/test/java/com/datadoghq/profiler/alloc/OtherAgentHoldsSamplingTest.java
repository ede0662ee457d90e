package com.datadoghq.profiler.alloc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.TestEnv;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Only one JVMTI environment may hold {@code can_generate_sampled_object_alloc_events}. With
 * another agent holding it (a small C agent built here), a {@code memory} start fails with an
 * IllegalStateException that says so, the JVM goes on, and the profiler still profiles CPU.
 */
class OtherAgentHoldsSamplingTest {
    @TempDir
    Path dir;

    @Test
    void aClearErrorWhenAnotherAgentHoldsHeapSampling() throws Exception {
        Path source = dir.resolve("holder_agent.c");
        try (InputStream in = OtherAgentHoldsSamplingTest.class.getResourceAsStream("/alloc/holder_agent.c")) {
            Files.copy(in, source);
        }
        Path lib = dir.resolve("libholder.so");
        Process cc;
        try {
            cc = new ProcessBuilder("cc", "-shared", "-fPIC", "-o", lib.toString(), source.toString())
                    .redirectErrorStream(true).start();
        } catch (java.io.IOException noCompiler) {
            assumeTrue(false, "no C compiler (cc) to build the other agent");
            return;
        }
        assertTrue(cc.waitFor(60, TimeUnit.SECONDS) && cc.exitValue() == 0,
                "cc failed: " + new String(cc.getInputStream().readAllBytes()));

        ChildJvm.Result r = new ChildJvm()
                .classpath(TestEnv.libJar())
                .jvmArgs("-agentpath:" + lib)
                .main(OtherAgentMain.class, dir.toString())
                .timeout(Duration.ofSeconds(60))
                .run(dir);
        assertFalse(r.timedOut, r.describe());
        assertEquals(0, r.exitCode, r.describe());
        assertTrue(r.stdout.contains("AddCapabilities(can_generate_sampled_object_alloc_events) = 0"),
                "the other agent should hold the capability:\n" + r.describe());
        assertTrue(r.stdout.contains("memory start: IllegalStateException:")
                && r.stdout.contains("held by another agent"), r.describe());
        assertTrue(r.stdout.contains("Profiling started") && r.stdout.contains("workload done"), r.describe());
    }
}
