package com.datadoghq.profiler.platform;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

import com.datadoghq.profiler.JVMAccess;
import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.TestEnv;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link JVMAccess.Flags} in a child JVM that loads the library from the built jar, as a
 * tracer does: non-manageable string flags ({@code OnError}, {@code OnOutOfMemoryError})
 * really change, as HotSpot itself reports them and as HotSpot acts on them (the OOME and
 * crash hooks run); manageable flags go through HotSpot's setter; unknown names and wrong
 * types change nothing and throw nothing.
 */
class JvmFlagsTest {
    private static ChildJvm.Result plain;
    private static Map<String, String> seen;

    @TempDir
    static Path dir;

    @BeforeAll
    static void runChild() throws Exception {
        plain = child().main(JvmFlagsMain.class, "flags").run(dir);
        seen = parse(plain);
    }

    private static ChildJvm child() {
        return new ChildJvm().classpath(TestEnv.libJar()).timeout(Duration.ofSeconds(60));
    }

    private static Map<String, String> parse(ChildJvm.Result r) {
        assertEquals(0, r.exitCode, r.describe());
        Map<String, String> values = new HashMap<>();
        for (String line : r.stdout.split("\n")) {
            int eq = line.indexOf('=');
            if (eq > 0) {
                values.put(line.substring(0, eq), line.substring(eq + 1));
            }
        }
        assertEquals("true", values.get("done"), r.describe());
        assertEquals(null, values.get("error"), r.describe());
        return values;
    }

    private static void expect(String key, String value) {
        assertEquals(value, seen.get(key), key + " in\n" + plain.describe());
    }

    @Test
    void nativeAccessIsActive() {
        expect("active", "true");
    }

    @Test
    void onErrorIsSetAndHotSpotSeesIt() {
        expect("OnError.before", "");
        expect("OnError.flags", "echo ddprof-on-error %p");
        expect("OnError.mx", "echo ddprof-on-error %p");
        expect("OnError.second", "echo second");
        expect("OnError.afterNulls", "echo second");
    }

    @Test
    void onOutOfMemoryErrorAndErrorFileAreSet() {
        expect("OnOutOfMemoryError.flags", "echo ddprof-oome %p");
        expect("OnOutOfMemoryError.mx", "echo ddprof-oome %p");
        expect("ErrorFile.flags", "/tmp/ddprof-hs_err_%p.log");
        expect("ErrorFile.mx", "/tmp/ddprof-hs_err_%p.log");
    }

    @Test
    void manageableFlagsGoThroughHotSpot() {
        expect("HeapDumpPath.flags", "/tmp/ddprof-c.hprof");
        expect("HeapDumpPath.mx", "/tmp/ddprof-c.hprof");
        expect("HeapDumpPath.origin", "MANAGEMENT");
        expect("PrintConcurrentLocks.mx", "true");
        expect("PrintConcurrentLocks.origin", "MANAGEMENT");
    }

    @Test
    void boolFlagsReadAndWrite() {
        expect("PrintWarnings.before", "true");
        expect("PrintWarnings.flags", "false");
        expect("PrintWarnings.mx", "false");
        expect("PrintWarnings.restored", "true");
    }

    @Test
    void numbersMatchHotSpot() {
        for (String name : new String[] {"MaxHeapSize", "ConcGCThreads", "CICompilerCount"}) {
            expect(name + ".int", seen.get(name + ".mx"));
            expect(name + ".float", "0.0");
        }
        assertTrue(Long.parseLong(seen.get("MaxHeapSize.int")) > 0, plain.describe());
        expect("MaxRAMPercentage.int", "0");
        assertEquals(Double.parseDouble(seen.get("MaxRAMPercentage.mx")),
                Double.parseDouble(seen.get("MaxRAMPercentage.float")), plain.describe());
    }

    @Test
    void unknownNamesAndWrongTypesGiveNothing() {
        expect("unknown.string", "null");
        expect("unknown.bool", "false");
        expect("unknown.int", "0");
        expect("unknown.float", "0.0");
        expect("null.string", "null");
        expect("mismatch.string", "null");
        expect("mismatch.bool", "false");
        expect("mismatch.float", "0.0");
        expect("mismatch.int", "0");
        expect("mismatch.MaxHeapSize.unchanged", "true");
        expect("mismatch.ErrorFile.after", "/tmp/ddprof-hs_err_%p.log");
    }

    /**
     * Flags set on the command line, with Native Memory Tracking on (under which HotSpot
     * frees a replaced value with a header check, so a value of ours in a manageable flag
     * would crash it): the same results, and a clean exit.
     */
    @Test
    void commandLineValuesAndNativeMemoryTracking() throws Exception {
        ChildJvm.Result r = child()
                .jvmArgs("-XX:NativeMemoryTracking=summary", "-XX:OnError=echo from-command-line",
                        "-XX:HeapDumpPath=/tmp/ddprof-cmdline.hprof", "-Xmx64m")
                .main(JvmFlagsMain.class, "flags").run(dir);
        Map<String, String> values = parse(r);
        assertEquals("echo from-command-line", values.get("OnError.before"), r.describe());
        assertEquals("echo ddprof-on-error %p", values.get("OnError.mx"), r.describe());
        assertEquals("echo second", values.get("OnError.second"), r.describe());
        assertEquals("/tmp/ddprof-c.hprof", values.get("HeapDumpPath.mx"), r.describe());
        assertEquals(String.valueOf(64L << 20), values.get("MaxHeapSize.int"), r.describe());
    }

    /** HotSpot runs the {@code OnOutOfMemoryError} command set through the flags, with {@code %p} expanded. */
    @Test
    void onOutOfMemoryErrorHookRuns() throws Exception {
        Path markers = Files.createDirectories(dir.resolve("oome"));
        ChildJvm.Result r = child().jvmArgs("-Xmx32m")
                .main(JvmFlagsMain.class, "oome", markers.toString()).run(dir);
        Map<String, String> values = lines(r);
        assertEquals(0, r.exitCode, r.describe());
        assertEquals("thrown", values.get("oome"), r.describe());
        assertTrue(Files.exists(markers.resolve("oome-" + values.get("pid"))), r.describe());
    }

    /** HotSpot runs the {@code OnError} command set through the flags when the JVM crashes. */
    @Test
    void onErrorHookRunsOnACrash() throws Exception {
        Path markers = Files.createDirectories(dir.resolve("crash"));
        ChildJvm.Result r = child()
                .jvmArgs("-XX:-CreateCoredumpOnCrash", "-XX:ErrorFile=" + markers + "/hs_err_%p.log")
                .main(JvmFlagsMain.class, "crash", markers.toString()).run(dir);
        Map<String, String> values = lines(r);
        assertNotEquals(0, r.exitCode, r.describe());
        assertEquals(null, values.get("crash"), r.describe());
        assertEquals("touch " + markers + "/crash-%p", values.get("OnError.mx"), r.describe());
        assertTrue(Files.exists(markers.resolve("crash-" + values.get("pid"))), r.describe());
    }

    private static Map<String, String> lines(ChildJvm.Result r) {
        Map<String, String> values = new HashMap<>();
        for (String line : r.stdout.split("\n")) {
            int eq = line.indexOf('=');
            if (eq > 0) {
                values.put(line.substring(0, eq), line.substring(eq + 1));
            }
        }
        return values;
    }
}
