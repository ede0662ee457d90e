package com.datadoghq.profiler.lazy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.jar.Attributes;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
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
 * About 1000 live redefinitions (java.lang.instrument, {@code -javaagent}) racing about 50 dumps
 * in the lazy mode ({@link LazyRedefineMain}): the JVM survives, no frame is named after a
 * method its thread never ran, the redefinition hooks mark classes and refuse their raw frames,
 * and calls with invalid arguments fail exactly as they do without the profiler.
 */
class LazyRedefinitionStressTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(120);
    private static final List<String> METHODS = Arrays.asList("alpha", "beta", "gamma");

    @TempDir
    Path dir;

    @Test
    void redefinitionsRacingDumpsNeverMisattributeFrames() throws Exception {
        Path agent = agentJar(dir);
        ChildJvm.Result r = new ChildJvm()
                .classpath(TestEnv.libJar())
                .jvmArgs("-javaagent:" + agent, "-Xmx256m")
                .main(LazyRedefineMain.class, dir.toString(), "stress")
                .timeout(TIMEOUT)
                .run(dir);
        assertFalse(r.timedOut, "child JVM hung:\n" + r.describe());
        assertEquals(0, r.exitCode, "child JVM failed:\n" + r.describe());
        assertTrue(r.stdout.contains("workload done"), r.describe());
        assertFalse(r.stdout.contains("WARNING"), "start warned (lazy mode unavailable?):\n" + r.describe());
        Map<String, Long> values = values(r.stdout);
        assertTrue(values.get("redefinitions") >= 1000, r.describe());
        assertTrue(values.get("dumps") >= LazyRedefineMain.MIN_DUMPS, "dumps: " + values.get("dumps") + "\n" + r.describe());

        List<Path> dumps;
        try (Stream<Path> s = Files.list(dir)) {
            dumps = s.filter(p -> p.getFileName().toString().startsWith("dump-")).sorted().collect(Collectors.toList());
        }
        int checked = 0;
        int named = 0;
        List<String> wrong = new ArrayList<>();
        for (Path p : dumps) {
            for (RecordedEvent e : JfrReader.executionSamples(p)) {
                String thread = JfrReader.threadName(e);
                if (thread == null || !thread.startsWith("w-")) {
                    continue;
                }
                String own = thread.substring(2);
                checked++;
                for (RecordedFrame f : JfrReader.frames(e)) {
                    RecordedMethod m = f.getMethod();
                    if (m == null || m.getType() == null || !m.getType().getName().equals(LazyRedefTarget.class.getName())) {
                        continue;
                    }
                    if (METHODS.contains(m.getName())) {
                        if (m.getName().equals(own)) {
                            named++;
                        } else if (wrong.size() < 20) {
                            wrong.add(p.getFileName() + ": " + JfrReader.describe(e));
                        }
                    }
                }
            }
        }
        assertTrue(wrong.isEmpty(), "frames named after a method their thread never ran:\n  " + String.join("\n  ", wrong));
        assertTrue(checked >= 300, "worker samples in all dumps: " + checked);
        assertTrue(named >= checked / 4, "worker samples naming their own method: " + named + " of " + checked);

        assertTrue(values.get("klass_registry_redefinitions_marked") >= 1000, "marks: " + values);
        // The frames of the redefined classes went through the redefinition path: named by the
        // idnum they were sampled with (none refused for want of one, and no jmethodID made).
        assertTrue(values.get("method_resolve_lazy_by_idnum") > 0, "no frame of a redefined class named by idnum: "
                + values);
        assertEquals(0L, values.get("method_resolve_lazy_jmethodids_created"), "lazy made jmethodIDs: " + values);
        assertEquals(0L, values.get("fjmethodid_lazy_fallback"), r.describe());
    }

    @Test
    void invalidArgumentsFailAsWithoutTheProfiler() throws Exception {
        Path agent = agentJar(dir);
        // With the profiler loaded (its hooks in place) and running in the lazy mode, then without.
        ChildJvm.Result with = new ChildJvm()
                .classpath(TestEnv.libJar())
                .jvmArgs("-javaagent:" + agent, "-agentpath:" + TestEnv.nativeLib() + "=start,cpu=10ms,fjmethodid=lazy,file="
                        + dir.resolve("invalid.jfr"))
                .main(LazyRedefineMain.class, dir.toString(), "invalid-only")
                .timeout(TIMEOUT)
                .run(dir);
        ChildJvm.Result without = new ChildJvm()
                .classpath(TestEnv.libJar())
                .jvmArgs("-javaagent:" + agent)
                .main(LazyRedefineMain.class, dir.toString(), "invalid-only")
                .timeout(TIMEOUT)
                .run(dir);
        for (ChildJvm.Result r : Arrays.asList(with, without)) {
            assertEquals(0, r.exitCode, "child JVM failed:\n" + r.describe());
            assertTrue(r.stdout.contains("workload done"), r.describe());
        }
        List<String> expected = outcomes(without.stdout);
        assertEquals(8, expected.size(), without.describe());
        assertTrue(expected.stream().noneMatch(s -> s.endsWith(": ok") && !s.contains("none")),
                "the invalid calls should fail without the profiler: " + expected);
        assertEquals(expected, outcomes(with.stdout), with.describe());
    }

    private static List<String> outcomes(String stdout) {
        return Arrays.stream(stdout.split("\n")).filter(l -> l.startsWith("invalid ")).collect(Collectors.toList());
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

    /** A jar with only a manifest naming LazyRedefineMain as the premain class (found on the class path). */
    static Path agentJar(Path dir) throws IOException {
        return agentJar(dir, LazyRedefineMain.class);
    }

    /** A jar with only a manifest naming {@code premain} as the premain class (found on the class path). */
    static Path agentJar(Path dir, Class<?> premain) throws IOException {
        Path jar = dir.resolve("redefine-agent.jar");
        Manifest mf = new Manifest();
        Attributes a = mf.getMainAttributes();
        a.put(Attributes.Name.MANIFEST_VERSION, "1.0");
        a.putValue("Premain-Class", premain.getName());
        a.putValue("Can-Redefine-Classes", "true");
        a.putValue("Can-Retransform-Classes", "true");
        try (OutputStream out = Files.newOutputStream(jar); JarOutputStream j = new JarOutputStream(out, mf)) {
            j.flush();
        }
        return jar;
    }
}
