package com.datadoghq.profiler.attach;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.CpuBurner;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code java -jar ddprof.jar attach PID COMMAND} against a running JVM that was started
 * without any profiler: start, status, dump, stop, and the failures a user must be told about,
 * each with its exit code. The target burns CPU only when the test asks it to (a file), and the
 * test waits for it to say it is done, so the recording holds samples however loaded the host.
 */
class AttachTest {
    @TempDir
    Path dir;
    Process target;

    @BeforeEach
    void startTarget() throws Exception {
        target = new ProcessBuilder(TestEnv.javaExecutable(), "-XX:+IgnoreUnrecognizedVMOptions",
                "-XX:+EnableDynamicAgentLoading", "-cp", ChildJvm.testClasses().toString(),
                AttachTargetMain.class.getName(), dir.toString())
                .redirectError(dir.resolve("target.err").toFile())
                .start();
        BufferedReader out = new BufferedReader(new InputStreamReader(target.getInputStream(), StandardCharsets.UTF_8));
        assertEquals("ready", out.readLine(), "the target JVM's first line");
    }

    @AfterEach
    void stopTarget() throws Exception {
        if (target != null) {
            Files.write(dir.resolve("exit"), new byte[0]);
            if (!target.waitFor(60, TimeUnit.SECONDS)) {
                target.destroyForcibly();
            }
        }
    }

    ChildJvm.Result attach(String command) throws Exception {
        return new ChildJvm()
                .jvmArgs("-jar", TestEnv.toolsJar().toString(), "attach", String.valueOf(target.pid()), command)
                .timeout(Duration.ofMinutes(2)).run(dir);
    }

    void burn(int n) throws Exception {
        Files.write(dir.resolve("burn-" + n), new byte[0]);
        Path done = dir.resolve("burned-" + n);
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
        while (!Files.exists(done)) {
            assertTrue(target.isAlive(), "the target died: " + targetErr());
            assertTrue(System.nanoTime() < deadline, "the target did not finish burning");
            Thread.sleep(20);
        }
    }

    String targetErr() throws IOException {
        return new String(Files.readAllBytes(dir.resolve("target.err")), StandardCharsets.UTF_8);
    }

    static long workerSamplesOnChainC(Path jfr) throws IOException {
        List<RecordedEvent> samples = JfrReader.onThread(JfrReader.executionSamples(jfr), "cpu-worker");
        return samples.stream().filter(e -> JfrReader.contains(e, CpuBurner.class, "chainC")).count();
    }

    @Test
    void startDumpStatusStopInARunningJvm() throws Exception {
        Path jfr = dir.resolve("attached.jfr");
        Path snapshot = dir.resolve("snapshot.jfr");
        // The command reaches the profiler as one string, commas and all.
        ChildJvm.Result r = attach("start,cpu=10ms,attributes=op;tenant,file=" + jfr);
        assertEquals(0, r.exitCode, r.describe());
        assertTrue(r.stdout.contains("Profiling started"), r.describe());

        r = attach("status");
        assertEquals(0, r.exitCode, r.describe());
        assertTrue(r.stdout.contains("Profiling is running"), r.describe());

        burn(1);
        r = attach("dump,file=" + snapshot);
        assertEquals(0, r.exitCode, r.describe());
        long dumped = workerSamplesOnChainC(snapshot);
        assertTrue(dumped >= 10, "cpu-worker samples in chainC in the dump: " + dumped);

        burn(2);
        r = attach("stop");
        assertEquals(0, r.exitCode, r.describe());
        long stopped = workerSamplesOnChainC(jfr);
        assertTrue(stopped >= 10, "cpu-worker samples in chainC after the dump, in the file: " + stopped);
        // The file's config event says which command was run.
        RecordedEvent config = JfrReader.events(jfr, JfrReader.PROFILER_CONFIG).get(0);
        assertEquals(10, config.getLong("cpuInterval"));
        RecordedEvent sample = JfrReader.executionSamples(jfr).get(0);
        assertTrue(sample.hasField("op") && sample.hasField("tenant"),
                "attributes=op;tenant reached the profiler whole: " + sample.getEventType().getFields());

        r = attach("status");
        assertEquals(0, r.exitCode, r.describe());
        assertTrue(r.stdout.contains("Profiler is not active"), r.describe());
        r = attach("stop");
        assertEquals(1, r.exitCode, "stop when idle fails: " + r.describe());
        assertTrue(r.stderr.contains("Profiler is not active"), r.describe());
        assertTrue(target.isAlive());
    }

    @Test
    void failuresAreReportedWithTheirExitCodes() throws Exception {
        ChildJvm.Result r = attach("start,cpu=10ms,file=" + dir.resolve("a.jfr"));
        assertEquals(0, r.exitCode, r.describe());
        r = attach("start,cpu=10ms,file=" + dir.resolve("b.jfr"));
        assertEquals(1, r.exitCode, "a second start: " + r.describe());
        assertTrue(r.stderr.contains("already started"), r.describe());
        r = attach("stop");
        assertEquals(0, r.exitCode, r.describe());

        r = attach("start,cpu=notanumber,file=" + dir.resolve("c.jfr"));
        assertEquals(2, r.exitCode, "an invalid command: " + r.describe());
        assertFalse(r.stdout.contains("Profiling started"), r.describe());
        r = attach("dump");
        assertEquals(2, r.exitCode, "dump without file=: " + r.describe());

        // No such JVM.
        ChildJvm.Result none = new ChildJvm()
                .jvmArgs("-jar", TestEnv.toolsJar().toString(), "attach", "999999999", "status").run(dir);
        assertEquals(1, none.exitCode, none.describe());
        ChildJvm.Result usage = new ChildJvm()
                .jvmArgs("-jar", TestEnv.toolsJar().toString(), "attach", String.valueOf(target.pid())).run(dir);
        assertEquals(2, usage.exitCode, usage.describe());
        assertTrue(target.isAlive());
    }

    /**
     * The native agent through jcmd ({@code JVMTI.agent_load}, which calls Agent_OnAttach): a
     * command that fails makes the load fail, and jcmd says so with a non-zero return code.
     * jcmd's own parser splits its argument at '=', so the command is passed in double quotes.
     */
    @Test
    void nativeAgentOnAttachReportsAFailedCommand() throws Exception {
        Path lib = dir.resolve("libjavaProfiler.so");
        Files.copy(TestEnv.nativeLib(), lib);
        Path jfr = dir.resolve("n.jfr");
        String out = jcmdAgentLoad(lib, "start,cpu=notanumber,file=" + jfr);
        assertTrue(out.contains("return code: -1"), "a refused command: " + out);
        out = jcmdAgentLoad(lib, "start,cpu=10ms,file=" + jfr);
        assertTrue(out.contains("return code: 0"), "a start: " + out);
        out = jcmdAgentLoad(lib, "start,cpu=10ms,file=" + jfr);
        assertTrue(out.contains("return code: -1"), "a second start fails: " + out);
        assertTrue(targetErr().contains("Profiler already started"), targetErr());
        burn(1);
        out = jcmdAgentLoad(lib, "stop");
        assertTrue(out.contains("return code: 0"), "stop: " + out);
        assertTrue(workerSamplesOnChainC(jfr) >= 10, "samples in " + jfr);
    }

    String jcmdAgentLoad(Path lib, String command) throws Exception {
        File jcmd = new File(new File(TestEnv.javaExecutable()).getParentFile(), "jcmd");
        Process p = new ProcessBuilder(jcmd.getPath(), String.valueOf(target.pid()), "JVMTI.agent_load",
                lib.toString(), "\"" + command + "\"").redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(2, TimeUnit.MINUTES), "jcmd did not finish");
        return out;
    }
}
