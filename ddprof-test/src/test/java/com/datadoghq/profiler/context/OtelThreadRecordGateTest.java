package com.datadoghq.profiler.context;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.TestEnv;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The OTel thread record's attribute entries (the local root span's digits, the values' bytes)
 * are written only once a reader can exist: after the process publishes its OTel process context
 * (an OTEP #4947 reader looks for thread records only then), or from the start with
 * {@code -Dddprof.otelThreadRecord=always}. Before, the record has the ids and {@code valid} and
 * no entry, and the handler's sidecar (the tags) is the same either way. A thread whose context
 * was written before the publication gets its entries at its next write, even one that changes
 * only the span. Each case in a fresh JVM: the publication is for the process's lifetime.
 */
class OtelThreadRecordGateTest {

    @Test
    void noEntriesBeforeAProcessContextIsPublished(@TempDir Path dir) throws Exception {
        Map<String, String> out = run(dir, null, "none");
        String tags = "tags=[" + out.get("getA") + ", ";
        assertTrue(out.get("current").startsWith("valid=1 span=8 attrs={} tags=[0, "), out.toString());
        assertTrue(out.get("legacy").startsWith("valid=1 span=5 attrs={} " + tags), out.toString());
        assertTrue(out.get("after").startsWith("valid=1 span=6 attrs={} " + tags), out.toString());
    }

    @Test
    void thePublicationCompletesTheRecordAtTheNextWrite(@TempDir Path dir) throws Exception {
        Map<String, String> out = run(dir, null, "publish");
        String tags = "tags=[" + out.get("getA") + ", ";
        assertTrue(out.get("legacy").startsWith("valid=1 span=5 attrs={} " + tags), out.toString());
        assertTrue(out.get("after").startsWith("valid=1 span=6 attrs={0=0000000000001234, 1=GET /a, 2=res-1} " + tags),
                out.toString());
    }

    @Test
    void alwaysWritesTheEntriesFromTheFirstWrite(@TempDir Path dir) throws Exception {
        Map<String, String> out = run(dir, "-Dddprof.otelThreadRecord=always", "none");
        String tags = "tags=[" + out.get("getA") + ", ";
        assertTrue(out.get("current").startsWith("valid=1 span=8 attrs={0=0000000000000077, 2=res-1} tags=[0, "),
                out.toString());
        assertTrue(out.get("legacy").startsWith("valid=1 span=5 attrs={0=0000000000001234, 1=GET /a, 2=res-1} " + tags),
                out.toString());
        assertTrue(out.get("after").startsWith("valid=1 span=6 attrs={0=0000000000001234, 1=GET /a, 2=res-1} " + tags),
                out.toString());
    }

    private static Map<String, String> run(Path dir, String jvmArg, String mode) throws Exception {
        ChildJvm child = new ChildJvm().classpath(TestEnv.libJar()).timeout(Duration.ofSeconds(60));
        if (jvmArg != null) {
            child.jvmArgs(jvmArg);
        }
        ChildJvm.Result r = child.main(OtelGateMain.class, mode).run(dir);
        assertEquals(0, r.exitCode, r.describe());
        Map<String, String> lines = new HashMap<>();
        for (String line : r.stdout.split("\n")) {
            int sp = line.indexOf(' ');
            int eq = line.indexOf('=');
            if (line.startsWith("getA=")) {
                lines.put("getA", line.substring(eq + 1).trim());
            } else if (sp > 0) {
                lines.put(line.substring(0, sp), line.substring(sp + 1).trim());
            }
        }
        assertTrue(Integer.parseInt(lines.get("getA")) > 0, r.describe());
        return lines;
    }
}
