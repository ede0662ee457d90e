package com.datadoghq.profiler.lazy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedMethod;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code fjmethodid=lazy} under ZGC ({@link LazyZgcMain} in a child JVM). ZGC stores colored
 * pointers in JNI global handles and in {@code Klass::_java_mirror}; the native core decodes them
 * (docs/hotspot.md 5.7), so generational ZGC (JDK 21 with {@code -XX:+ZGenerational}, JDK 24+ with
 * {@code -XX:+UseZGC}) and non-generational ZGC (JDK 17, JDK 21 by default) stay lazy: no fallback,
 * no jmethodID made, the workload's frames named from metadata, and class trace IDs read the same
 * before and after {@code System.gc()} cycles (objects relocated, colors flipped). JDK 11's ZGC
 * exports no address masks: the mode falls back to {@code false} and says why.
 */
class LazyZgcTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(120);

    @TempDir
    Path dir;

    @Test
    void generationalZgcStaysLazy() throws Exception {
        assumeTrue(TestEnv.jdk() >= 21, "generational ZGC needs JDK 21+; JDK " + TestEnv.jdk());
        // JDK 24 removed the flag (generational is the only ZGC); 21-23 need it.
        String[] flags = TestEnv.jdk() >= 24 ? new String[] {"-XX:+UseZGC"}
                : new String[] {"-XX:+UseZGC", "-XX:+ZGenerational"};
        assertStaysLazy(flags);
    }

    @Test
    void nonGenerationalZgcStaysLazy() throws Exception {
        int jdk = TestEnv.jdk();
        assumeTrue(jdk >= 15 && jdk <= 23, "non-generational ZGC is a product GC on JDK 15-23; JDK " + jdk);
        assertStaysLazy(jdk >= 21 ? new String[] {"-XX:+UseZGC", "-XX:-ZGenerational"} : new String[] {"-XX:+UseZGC"});
    }

    @Test
    void zgcWithoutExportedMasksFallsBackAndSaysWhy() throws Exception {
        assumeTrue(TestEnv.jdk() < 15, "only JDK 11's experimental ZGC lacks the masks; JDK " + TestEnv.jdk());
        ChildJvm.Result r = run("-XX:+UnlockExperimentalVMOptions", "-XX:+UseZGC");
        Map<String, Long> c = counters(r);
        assertEquals(1L, c.get("fjmethodid_lazy_fallback"), r.describe());
        assertTrue(r.stdout.contains("fjmethodid=lazy is unavailable: oops in JNI handles cannot be decoded under this ZGC"),
                r.describe());
        assertEquals(0L, c.get("klass_trace_id_offset"), "calibrated without a decodable mirror: " + c);
        // Named anyway, the fjmethodid=false way.
        List<RecordedEvent> samples = JfrReader.onThread(JfrReader.executionSamples(dir.resolve("zgc.jfr")), "zgc-worker");
        assertTrue(samples.stream().anyMatch(e -> spinFrame(e, LazyZgcTest::isLazySpin)),
                "no named sample under the fallback:" + JfrReader.describe(samples, 5));
    }

    private void assertStaysLazy(String... flags) throws Exception {
        ChildJvm.Result r = run(flags);
        assertFalse(r.stdout.contains("WARNING"), "start warned:\n" + r.describe());
        Map<String, Long> c = counters(r);
        assertEquals(0L, c.get("fjmethodid_lazy_fallback"), "lazy fell back:\n" + r.describe());
        assertTrue(c.get("klass_trace_id_offset") > 0, "not calibrated: " + c);
        assertEquals(0L, c.get("klass_registry_add_failed"), "classes the registry could not hold: " + c);
        assertTrue(c.get("method_resolve_lazy_metadata") > 0, "no frame named from metadata: " + c);
        assertEquals(0L, c.get("method_resolve_lazy_jmethodids_created"), "lazy made jmethodIDs: " + c);
        assertTrue(r.stdout.contains("unreadable=0 changed=0"),
                "class trace IDs unreadable or changed across GC cycles:\n" + r.describe());
        assertTrue(r.stdout.matches("(?s).*traceids read=([2-9]\\d\\d|\\d{4,}) .*"), "too few classes read:\n" + r.stdout);

        List<RecordedEvent> all = JfrReader.executionSamples(dir.resolve("zgc.jfr"));
        assertNamed(all, r, "zgc-worker", LazyZgcTest::isLazySpin);
        assertNamed(all, r, "hidden-worker", m -> m.getType().getName().startsWith(LazyHiddenSpin.class.getName()));
    }

    /**
     * The worker's samples: as many as its CPU time allows at a 1 ms interval (at least a tenth of
     * that: signals are coalesced and dropped on a loaded host), half or more with the spin frame
     * named with a line, at most a tenth with an unknown frame.
     */
    private static void assertNamed(List<RecordedEvent> all, ChildJvm.Result r, String thread,
                                    Predicate<RecordedMethod> owner) {
        long cpuMs = cpu(r, thread);
        List<RecordedEvent> samples = JfrReader.onThread(all, thread);
        assertTrue(cpuMs >= 100, thread + " got " + cpuMs + " ms of CPU\n" + r.describe());
        assertTrue(samples.size() * 10 >= cpuMs, thread + ": " + samples.size() + " samples for " + cpuMs
                + " ms of CPU\n" + r.describe());
        long named = samples.stream().filter(e -> spinFrame(e, owner)).count();
        assertTrue(named * 2 >= samples.size(), thread + ": " + named + " of " + samples.size()
                + " samples name spinLoop with a line:" + JfrReader.describe(samples, 8));
        long unknown = samples.stream().filter(e -> JfrReader.frames(e).stream().anyMatch(JfrReader::isUnnamed))
                .count();
        assertTrue(unknown * 10 <= samples.size(), thread + ": " + unknown + " of " + samples.size()
                + " samples with unknown frames:" + JfrReader.describe(samples, 8));
    }

    private static boolean isLazySpin(RecordedMethod m) {
        return m.getType().getName().equals(LazySpin.class.getName());
    }

    private static boolean spinFrame(RecordedEvent e, Predicate<RecordedMethod> owner) {
        return JfrReader.frames(e).stream().anyMatch(f -> f.getMethod() != null && f.getMethod().getType() != null
                && "spinLoop".equals(f.getMethod().getName()) && "(J)J".equals(f.getMethod().getDescriptor())
                && owner.test(f.getMethod()) && f.getLineNumber() > 0);
    }


    private ChildJvm.Result run(String... flags) throws Exception {
        List<String> args = new ArrayList<>(Arrays.asList(flags));
        args.add("-Xmx512m");
        ChildJvm.Result r = new ChildJvm()
                .classpath(TestEnv.libJar())
                .jvmArgs(args.toArray(new String[0]))
                .main(LazyZgcMain.class, dir.toString())
                .timeout(TIMEOUT)
                .run(dir);
        assertFalse(r.timedOut, "child JVM hung:\n" + r.describe());
        assertEquals(0, r.exitCode, "child JVM failed:\n" + r.describe());
        assertTrue(r.stdout.contains("workload done"), r.describe());
        assertTrue(Files.size(dir.resolve("zgc.jfr")) > 0, "no recording");
        return r;
    }

    private static Map<String, Long> counters(ChildJvm.Result r) {
        Map<String, Long> c = new HashMap<>();
        for (String line : r.stdout.split("\n")) {
            if (line.startsWith("counter ")) {
                String[] kv = line.substring(8).split("=", 2);
                c.put(kv[0], Long.parseLong(kv[1].trim()));
            }
        }
        for (String name : new String[] {"fjmethodid_lazy_fallback", "klass_trace_id_offset",
            "method_resolve_lazy_jmethodids_created", "method_resolve_lazy_metadata", "klass_registry_add_failed"}) {
            assertTrue(c.containsKey(name), "no counter " + name + ":\n" + r.describe());
        }
        return c;
    }

    private static long cpu(ChildJvm.Result r, String thread) {
        for (String line : r.stdout.split("\n")) {
            if (line.startsWith("cpu " + thread + "=")) {
                return Long.parseLong(line.substring(("cpu " + thread + "=").length()).trim());
            }
        }
        throw new AssertionError("no CPU time for " + thread + ":\n" + r.describe());
    }
}
