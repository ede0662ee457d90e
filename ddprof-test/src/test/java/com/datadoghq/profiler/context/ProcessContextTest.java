package com.datadoghq.profiler.context;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import com.datadoghq.profiler.OTelContext;
import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.TestEnv;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The OTel process context ({@link OTelContext}) as the tracer writes it and as an outside
 * reader finds it: the {@code OTEL_CTX} mapping in {@code /proc/self/maps} (readable, not
 * executable), its header and payload read through {@code /proc/self/mem} and decoded here by
 * a protobuf reader of our own (independent of the library's encoder), and the read-back
 * native; also from outside, in another process that published as the tracer does. All tests share the process's one context, so each publishes what it checks.
 */
class ProcessContextTest {
    private static final String ROOT_KEY = "datadog.local_root_span_id";

    private final OTelContext ctx = OTelContext.getInstance();

    @Test
    void roundTrip() {
        ctx.initializeAllContext("test-env", "test-hostname", "test-instance-123", "test-service", "1.0.0", "3.5.0",
                new String[] {"http.route", "db.system"});
        OTelContext.ProcessContext read = ctx.readProcessContext();
        assertNotNull(read);
        assertEquals("test-env", read.deploymentEnvironmentName);
        assertEquals("test-hostname", read.hostName);
        assertEquals("test-instance-123", read.serviceInstanceId);
        assertEquals("test-service", read.serviceName);
        assertEquals("1.0.0", read.serviceVersion);
        assertEquals("java", read.telemetrySdkLanguage);
        assertEquals("3.5.0", read.telemetrySdkVersion);
        assertEquals("dd-trace-java", read.telemetrySdkName);
        assertArrayEquals(new String[] {ROOT_KEY, "http.route", "db.system"}, read.attributeKeyMap);
    }

    @Test
    void tracerConstructorAndLegacySetProcessContext() {
        AtomicReference<Throwable> reported = new AtomicReference<>();
        OTelContext tracers = new OTelContext(null, System.getProperty("java.io.tmpdir"), reported::set);
        assertEquals(null, reported.get(), "the library loads without complaint");
        tracers.setProcessContext("prod", "host-a", "runtime-a", "svc-a", "2.0", "1.56.0");
        OTelContext.ProcessContext read = ctx.readProcessContext();
        assertNotNull(read);
        assertEquals("svc-a", read.serviceName);
        assertEquals("runtime-a", read.serviceInstanceId);
        assertEquals("2.0", read.serviceVersion);
        assertEquals("1.56.0", read.telemetrySdkVersion);
        assertArrayEquals(new String[] {ROOT_KEY}, read.attributeKeyMap);
        assertEquals(null, reported.get());
    }

    @Test
    void mappingIsReadableNotExecutableAndHoldsTheValues() throws IOException {
        ctx.initializeAllContext("env-m", "host-m", "id-m", "svc-m", "v-m", "t-m", new String[] {"k1"});
        ProcessContextReader.Mapping m = ProcessContextReader.onlyMapping();
        assertEquals('r', m.perms.charAt(0), m.line);
        assertFalse(m.perms.contains("x"), "not executable: " + m.line);
        assertTrue(m.end - m.start >= 32, m.line);

        ProcessContextReader.Published p = ProcessContextReader.readThroughProcMem(m.start);
        assertNotEquals(0, p.publishedAtNs);
        Map<String, String> res = p.resource;
        assertEquals("env-m", res.get("deployment.environment.name"));
        assertEquals("host-m", res.get("host.name"));
        assertEquals("id-m", res.get("service.instance.id"));
        assertEquals("svc-m", res.get("service.name"));
        assertEquals("v-m", res.get("service.version"));
        assertEquals("java", res.get("telemetry.sdk.language"));
        assertEquals("t-m", res.get("telemetry.sdk.version"));
        assertEquals("dd-trace-java", res.get("telemetry.sdk.name"));
        assertEquals(8, res.size(), res.toString());
        assertEquals("tlsdesc_v1_dev", p.extraStrings.get("threadlocal.schema_version"));
        assertEquals(Arrays.asList(ROOT_KEY, "k1"), p.extraArrays.get("threadlocal.attribute_key_map"));
    }

    @Test
    void secondSetReplacesTheFirst() throws IOException {
        ctx.initializeAllContext("env-1", "host-1", "id-1", "svc-1", "v1", "t1", new String[] {"a"});
        ProcessContextReader.Mapping first = ProcessContextReader.onlyMapping();
        ProcessContextReader.Published p1 = ProcessContextReader.readThroughProcMem(first.start);

        ctx.initializeAllContext("env-2", "host-2", "id-2", "svc-2", "v2", "t2", new String[] {"b", "c"});
        ProcessContextReader.Mapping second = ProcessContextReader.onlyMapping();
        assertEquals(first.start, second.start, "updated in place, still one mapping");
        ProcessContextReader.Published p2 = ProcessContextReader.readThroughProcMem(second.start);
        assertTrue(p2.publishedAtNs > p1.publishedAtNs, "a newer publication time tells readers");
        assertEquals("svc-2", p2.resource.get("service.name"));
        assertEquals("env-2", p2.resource.get("deployment.environment.name"));
        assertEquals(Arrays.asList(ROOT_KEY, "b", "c"), p2.extraArrays.get("threadlocal.attribute_key_map"));

        OTelContext.ProcessContext read = ctx.readProcessContext();
        assertEquals("svc-2", read.serviceName);
        assertEquals("host-2", read.hostName);
        assertArrayEquals(new String[] {ROOT_KEY, "b", "c"}, read.attributeKeyMap);
    }

    @Test
    void unusualValues() throws IOException {
        String nonAscii = "h\u00f4te-\u65e5\u672c-\uD83D\uDE00"; // 2-, 3- and 4-byte UTF-8
        String withNul = "a\u0000b";
        char[] big = new char[4096];
        Arrays.fill(big, 'x');
        String longest = new String(big); // the limit, and a 2-byte length varint
        ctx.initializeAllContext("", nonAscii, withNul, longest, null, "t", new String[] {"\u00e9t\u00e9", ""});

        OTelContext.ProcessContext read = ctx.readProcessContext();
        assertNotNull(read);
        assertEquals("", read.deploymentEnvironmentName);
        assertEquals(nonAscii, read.hostName);
        assertEquals(withNul, read.serviceInstanceId);
        assertEquals(longest, read.serviceName);
        assertEquals("", read.serviceVersion, "null is published as empty");
        assertArrayEquals(new String[] {ROOT_KEY, "\u00e9t\u00e9", ""}, read.attributeKeyMap);

        ProcessContextReader.Published p = ProcessContextReader.readThroughProcMem(ProcessContextReader.onlyMapping().start);
        assertEquals(nonAscii, p.resource.get("host.name"), "proper UTF-8, not modified UTF-8");
        assertEquals(withNul, p.resource.get("service.instance.id"));
        assertEquals(longest, p.resource.get("service.name"));

        // Beyond upstream's limits: nothing published, the previous context stays.
        String tooLong = longest + "y";
        ctx.initializeAllContext("e", "h", "i", tooLong, "v", "t", new String[0]);
        assertEquals(longest, ctx.readProcessContext().serviceName, "a 4097-byte value is refused");
        String nearly = longest.substring(0, 4000);
        ctx.initializeAllContext(nearly, nearly, nearly, nearly, nearly, "t", new String[0]);
        assertEquals(longest, ctx.readProcessContext().serviceName, "a resource over 16383 bytes is refused");
        char[] twoByte = new char[2048];
        Arrays.fill(twoByte, '\u00e9');
        ctx.initializeAllContext("e", "h", "i", new String(twoByte) + "z", "v", "t", new String[0]);
        assertEquals(longest, ctx.readProcessContext().serviceName, "the limit counts UTF-8 bytes");
    }

    @Test
    void attributeKeys() {
        ctx.initializeAllContext("e", "h", "i", "svc-k", "v", "t", new String[] {"http.route"});
        ctx.initializeAllContext("e", "h", "i", "svc-null", "v", "t", new String[] {"x", null});
        OTelContext.ProcessContext read = ctx.readProcessContext();
        assertEquals("svc-k", read.serviceName, "a null key skips the whole publication");
        assertArrayEquals(new String[] {ROOT_KEY, "http.route"}, read.attributeKeyMap);

        assertThrows(NullPointerException.class,
                () -> ctx.initializeAllContext("e", "h", "i", "s", "v", "t", null));

        String[] keys = new String[15];
        for (int i = 0; i < keys.length; i++) {
            keys[i] = "key" + i;
        }
        ctx.initializeAllContext("e", "h", "i", "svc-clip", "v", "t", keys);
        read = ctx.readProcessContext();
        String[] expected = new String[11];
        expected[0] = ROOT_KEY;
        for (int i = 0; i < 10; i++) {
            expected[i + 1] = "key" + i;
        }
        assertArrayEquals(expected, read.attributeKeyMap, "at most 10 keys, the first ones");
    }

    @Test
    void anotherProcessReadsTheContext(@TempDir Path dir) throws Exception {
        List<String> cmd = Arrays.asList(TestEnv.javaExecutable(), "-cp",
                ChildJvm.testClasses() + File.pathSeparator + TestEnv.libJar(),
                ProcessContextMain.class.getName(), dir.toString());
        Process child = new ProcessBuilder(cmd).directory(dir.toFile())
                .redirectError(dir.resolve("child.err").toFile()).start();
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
            List<String> lines = new ArrayList<>();
            for (String line; (line = out.readLine()) != null && !line.equals("ready"); ) {
                lines.add(line);
            }
            assertEquals(Arrays.asList("service=child-svc"), lines,
                    "child stderr: " + new String(Files.readAllBytes(dir.resolve("child.err")), StandardCharsets.UTF_8));

            String pid = Long.toString(child.pid());
            ProcessContextReader.Mapping m = ProcessContextReader.onlyMapping(pid);
            assertEquals('r', m.perms.charAt(0), m.line);
            assertFalse(m.perms.contains("x"), m.line);
            ProcessContextReader.Published p = ProcessContextReader.readThroughProcMem(pid, m.start);
            assertEquals("child-svc", p.resource.get("service.name"));
            assertEquals("child-env", p.resource.get("deployment.environment.name"));
            assertEquals("child-host", p.resource.get("host.name"));
            assertEquals("child-runtime", p.resource.get("service.instance.id"));
            assertEquals("9.9", p.resource.get("service.version"));
            assertEquals("1.56.0", p.resource.get("telemetry.sdk.version"));
            assertEquals(Arrays.asList(ROOT_KEY), p.extraArrays.get("threadlocal.attribute_key_map"));

            child.getOutputStream().close();
            assertTrue(child.waitFor(30, TimeUnit.SECONDS));
            assertEquals(0, child.exitValue());
        } finally {
            child.destroyForcibly();
        }
    }
}
