package com.datadoghq.profiler.lifecycle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.jar.Attributes;
import java.util.jar.JarFile;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code java -jar ddprof.jar <profiler command>}, as with upstream's jar: the command runs
 * through {@code execute} in that JVM, its reply is printed, and the exit code says how it went
 * (0 ok, 1 failed, 2 invalid); the tool verbs keep their meaning, and name the tools jar, which
 * holds them.
 */
class MainCommandTest {
    @TempDir
    Path dir;

    @Test
    void startCommandPrintsTheReplyAndLeavesACompleteRecording() throws Exception {
        Path file = dir.resolve("main.jfr");
        ChildJvm.Result r = jar("start,cpu=10ms,file=" + file);
        assertEquals(0, r.exitCode, r.describe());
        assertTrue(r.stdout.contains("Profiling started"), r.describe());
        assertTrue(Files.isRegularFile(file), "no recording at " + file + ":\n" + r.describe());
        List<RecordedEvent> events = JfrReader.readAll(file);
        assertFalse(JfrReader.ofType(events, JfrReader.PROFILER_CONFIG).isEmpty(),
                "the recording was not completed (no config event):\n" + r.describe());
    }

    @Test
    void bareActionsRunThroughExecute() throws Exception {
        ChildJvm.Result status = jar("status");
        assertEquals(0, status.exitCode, status.describe());
        assertTrue(status.stdout.contains("Profiler is not active"), status.describe());
        ChildJvm.Result check = jar("check");
        assertEquals(0, check.exitCode, check.describe());
        assertEquals("OK", check.stdout.trim(), check.describe());
    }

    @Test
    void invalidCommandIsAUsageErrorNamingTheOptionAndValue() throws Exception {
        Path file = dir.resolve("bad.jfr");
        ChildJvm.Result r = jar("start,cpu=abc,file=" + file);
        assertEquals(2, r.exitCode, r.describe());
        assertTrue(r.stderr.contains("cpu") && r.stderr.contains("abc"), r.describe());
        assertFalse(Files.exists(file), "a refused command created " + file);
    }

    @Test
    void commandThatDoesNotFitTheStateFails() throws Exception {
        ChildJvm.Result r = jar("stop");
        assertEquals(1, r.exitCode, r.describe());
        assertTrue(r.stderr.contains("Profiler is not active"), r.describe());
    }

    @Test
    void toolVerbsAndUnknownWordsKeepTheirMeaning() throws Exception {
        ChildJvm.Result version = jar("version");
        assertEquals(0, version.exitCode, version.describe());
        assertTrue(version.stdout.trim().matches("\\d+\\.\\d+\\.\\d+.*"), version.describe());
        ChildJvm.Result unknown = jar("frobnicate");
        assertEquals(2, unknown.exitCode, unknown.describe());
        assertTrue(unknown.stderr.contains("Unknown command: frobnicate"), unknown.describe());
        ChildJvm.Result extra = jar("status", "now");
        assertEquals(2, extra.exitCode, extra.describe());
    }

    /**
     * The library jar a service depends on carries the profiler, not the tools: a tool verb run
     * from it is a usage error whose one line names the tools jar; the tools jar runs it.
     */
    @Test
    void toolVerbsNameTheToolsJar() throws Exception {
        for (String verb : new String[] {"demo", "report", "convert", "attach"}) {
            ChildJvm.Result r = jar(verb, "--help");
            assertEquals(2, r.exitCode, r.describe());
            assertEquals(1, r.stderr.strip().lines().count(), "one line: " + r.describe());
            assertTrue(r.stderr.contains("'" + verb + "' is in the tools jar")
                    && r.stderr.contains("java -jar ddprof-tools-") && r.stderr.contains(verb + " (com.datadoghq:ddprof-tools"),
                    r.describe());
            assertTrue(r.stdout.isEmpty(), r.describe());
        }
        ChildJvm.Result viaTools = new ChildJvm()
                .jvmArgs("-jar", TestEnv.toolsJar().toString(), "demo", "--help")
                .timeout(Duration.ofSeconds(60)).run(dir);
        assertEquals(0, viaTools.exitCode, viaTools.describe());
        assertTrue(viaTools.stdout.startsWith("Usage: "), viaTools.describe());
    }

    /**
     * One version everywhere: the jar's manifest, {@code java -jar ddprof.jar version} (its
     * properties resource), the native library's {@code getVersion()} and the recording's
     * config event all say the Maven project's version.
     */
    @Test
    void everyVersionStringIsTheJarsVersion() throws Exception {
        String manifest;
        try (JarFile jar = new JarFile(TestEnv.libJar().toFile())) {
            manifest = jar.getManifest().getMainAttributes().getValue(Attributes.Name.IMPLEMENTATION_VERSION);
        }
        assertTrue(manifest != null && manifest.matches("\\d+\\.\\d+\\.\\d+.*"), "Implementation-Version: " + manifest);
        assertTrue(TestEnv.libJar().getFileName().toString().equals("ddprof-" + manifest + ".jar"),
                TestEnv.libJar() + " is not ddprof-" + manifest + ".jar");
        ChildJvm.Result version = jar("version");
        assertEquals(manifest, version.stdout.trim(), version.describe());
        assertEquals(manifest, TestEnv.profiler().getVersion(), "JavaProfiler.getVersion() (the native library)");

        Path file = dir.resolve("version.jfr");
        ChildJvm.Result r = jar("start,cpu=10ms,file=" + file);
        assertEquals(0, r.exitCode, r.describe());
        List<RecordedEvent> config = JfrReader.ofType(JfrReader.readAll(file), JfrReader.PROFILER_CONFIG);
        assertFalse(config.isEmpty(), r.describe());
        assertEquals(manifest, config.get(0).getString("version"), "datadog.DatadogProfilerConfig version");
    }

    private ChildJvm.Result jar(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(Arrays.asList("-jar", TestEnv.libJar().toString()));
        cmd.addAll(Arrays.asList(args));
        ChildJvm.Result r = new ChildJvm()
                .jvmArgs(cmd.toArray(new String[0]))
                .timeout(Duration.ofSeconds(60))
                .run(dir);
        assertFalse(r.timedOut, "java -jar hung:\n" + r.describe());
        return r;
    }
}
