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
        Mapping m = onlyMapping();
        assertEquals('r', m.perms.charAt(0), m.line);
        assertFalse(m.perms.contains("x"), "not executable: " + m.line);
        assertTrue(m.end - m.start >= 32, m.line);

        Published p = readThroughProcMem(m.start);
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
        Mapping first = onlyMapping();
        Published p1 = readThroughProcMem(first.start);

        ctx.initializeAllContext("env-2", "host-2", "id-2", "svc-2", "v2", "t2", new String[] {"b", "c"});
        Mapping second = onlyMapping();
        assertEquals(first.start, second.start, "updated in place, still one mapping");
        Published p2 = readThroughProcMem(second.start);
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

        Published p = readThroughProcMem(onlyMapping().start);
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
            Mapping m = onlyMapping(pid);
            assertEquals('r', m.perms.charAt(0), m.line);
            assertFalse(m.perms.contains("x"), m.line);
            Published p = readThroughProcMem(pid, m.start);
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

    // ---- an outside reader ----

    private static final class Mapping {
        final long start;
        final long end;
        final String perms;
        final String line;

        Mapping(String line) {
            this.line = line;
            String[] parts = line.split("\\s+");
            String[] range = parts[0].split("-");
            this.start = Long.parseUnsignedLong(range[0], 16);
            this.end = Long.parseUnsignedLong(range[1], 16);
            this.perms = parts[1];
        }
    }

    /** The one mapping named OTEL_CTX (memfd, or a named anonymous mapping). */
    private static Mapping onlyMapping() throws IOException {
        return onlyMapping("self");
    }

    private static Mapping onlyMapping(String pid) throws IOException {
        List<Mapping> found = new ArrayList<>();
        for (String line : Files.readAllLines(Paths.get("/proc/" + pid + "/maps"))) {
            String[] parts = line.trim().split("\\s+", 6);
            if (parts.length == 6 && parts[5].contains("OTEL_CTX")) {
                found.add(new Mapping(line));
            }
        }
        assertEquals(1, found.size(), "OTEL_CTX mappings: " + found.size());
        return found.get(0);
    }

    private static final class Published {
        long publishedAtNs;
        final Map<String, String> resource = new LinkedHashMap<>();
        final Map<String, String> extraStrings = new LinkedHashMap<>();
        final Map<String, List<String>> extraArrays = new LinkedHashMap<>();
    }

    private static byte[] readMem(RandomAccessFile mem, long addr, int len) throws IOException {
        byte[] b = new byte[len];
        mem.seek(addr);
        mem.readFully(b);
        return b;
    }

    /** Header then payload, the publication time checked before and after as readers do. */
    private static Published readThroughProcMem(long start) throws IOException {
        return readThroughProcMem("self", start);
    }

    private static Published readThroughProcMem(String pid, long start) throws IOException {
        try (RandomAccessFile mem = new RandomAccessFile("/proc/" + pid + "/mem", "r")) {
            ByteBuffer h = ByteBuffer.wrap(readMem(mem, start, 32)).order(ByteOrder.nativeOrder());
            byte[] sig = new byte[8];
            h.get(sig);
            assertEquals("OTEL_CTX", new String(sig, StandardCharsets.US_ASCII));
            assertEquals(2, h.getInt(8), "header version");
            int size = h.getInt(12);
            long at = h.getLong(16);
            long payloadAddr = h.getLong(24);
            assertTrue(size > 0 && at != 0 && payloadAddr != 0, "published");
            byte[] payload = readMem(mem, payloadAddr, size);
            ByteBuffer again = ByteBuffer.wrap(readMem(mem, start, 32)).order(ByteOrder.nativeOrder());
            assertEquals(at, again.getLong(16), "no update while reading");
            Published p = decode(payload);
            p.publishedAtNs = at;
            return p;
        }
    }

    // ---- a minimal protobuf reader: ProcessContext{1: Resource{1: KeyValue*}, 2: KeyValue*} ----

    private static final class Pb {
        final byte[] b;
        int pos;
        final int end;

        Pb(byte[] b, int pos, int end) {
            this.b = b;
            this.pos = pos;
            this.end = end;
        }

        boolean more() {
            return pos < end;
        }

        long varint() {
            long v = 0;
            for (int shift = 0; ; shift += 7) {
                assertTrue(pos < end && shift < 64, "truncated varint");
                int x = b[pos++] & 0xff;
                v |= (long) (x & 0x7f) << shift;
                if (x < 0x80) {
                    return v;
                }
            }
        }

        /** The next field's number; its LEN body is then {@link #body}. */
        int field() {
            long tag = varint();
            assertEquals(2, tag & 7, "only LEN fields are written");
            return (int) (tag >>> 3);
        }

        Pb body() {
            int len = (int) varint();
            assertTrue(pos + len <= end, "field past its message");
            Pb inner = new Pb(b, pos, pos + len);
            pos += len;
            return inner;
        }

        String string() {
            Pb s = body();
            return new String(s.b, s.pos, s.end - s.pos, StandardCharsets.UTF_8);
        }
    }

    /** KeyValue -> key and either a string (AnyValue 1) or a list of strings (AnyValue 5). */
    private static Object[] keyValue(Pb kv) {
        String key = null;
        Object value = null;
        while (kv.more()) {
            int f = kv.field();
            if (f == 1) {
                key = kv.string();
            } else if (f == 2) {
                Pb any = kv.body();
                while (any.more()) {
                    int af = any.field();
                    if (af == 1) {
                        value = any.string();
                    } else if (af == 5) {
                        Pb array = any.body();
                        List<String> items = new ArrayList<>();
                        while (array.more()) {
                            assertEquals(1, array.field());
                            Pb item = array.body();
                            assertEquals(1, item.field());
                            items.add(item.string());
                        }
                        value = items;
                    } else {
                        any.body();
                    }
                }
            } else {
                kv.body();
            }
        }
        assertNotNull(key);
        return new Object[] {key, value};
    }

    @SuppressWarnings("unchecked")
    private static Published decode(byte[] payload) {
        Published p = new Published();
        Pb top = new Pb(payload, 0, payload.length);
        while (top.more()) {
            int f = top.field();
            Pb body = top.body();
            if (f == 1) {
                while (body.more()) {
                    assertEquals(1, body.field(), "Resource.attributes");
                    Object[] kv = keyValue(body.body());
                    assertTrue(kv[1] instanceof String, "string attribute " + kv[0]);
                    assertEquals(null, p.resource.put((String) kv[0], (String) kv[1]), "duplicate " + kv[0]);
                }
            } else if (f == 2) {
                Object[] kv = keyValue(body);
                if (kv[1] instanceof String) {
                    p.extraStrings.put((String) kv[0], (String) kv[1]);
                } else {
                    p.extraArrays.put((String) kv[0], (List<String>) kv[1]);
                }
            }
        }
        return p;
    }
}
