package com.datadoghq.profiler.context;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Reads a process's OTel process context the way an out-of-process reader does: the one mapping
 * named {@code OTEL_CTX} in {@code /proc/PID/maps}, its header and payload through
 * {@code /proc/PID/mem}, the payload's protobuf decoded. No JUnit, so that child JVMs (the traced
 * app of the real-tracer test) can use it too; a malformed context throws
 * {@link IllegalStateException}.
 */
public final class ProcessContextReader {
    private ProcessContextReader() {}

    private static final class check {
        static void that(boolean ok, String what) {
            if (!ok) {
                throw new IllegalStateException(what);
            }
        }

        static void equal(Object expected, Object actual) {
            equal(expected, actual, "value");
        }

        static void equal(Object expected, Object actual, String what) {
            if (!Objects.equals(expected, actual)) {
                throw new IllegalStateException(what + ": expected " + expected + ", was " + actual);
            }
        }

        static void equal(long expected, long actual) {
            equal(expected, actual, "value");
        }

        static void equal(long expected, long actual, String what) {
            if (expected != actual) {
                throw new IllegalStateException(what + ": expected " + expected + ", was " + actual);
            }
        }
    }


    public static final class Mapping {
        public final long start;
        final long end;
        public final String perms;
        public final String line;

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
    public static Mapping onlyMapping() throws IOException {
        return onlyMapping("self");
    }

    public static Mapping onlyMapping(String pid) throws IOException {
        List<Mapping> found = new ArrayList<>();
        for (String line : Files.readAllLines(Paths.get("/proc/" + pid + "/maps"))) {
            String[] parts = line.trim().split("\\s+", 6);
            if (parts.length == 6 && parts[5].contains("OTEL_CTX")) {
                found.add(new Mapping(line));
            }
        }
        check.equal(1, found.size(), "OTEL_CTX mappings: " + found.size());
        return found.get(0);
    }

    public static final class Published {
        public long publishedAtNs;
        public final Map<String, String> resource = new LinkedHashMap<>();
        public final Map<String, String> extraStrings = new LinkedHashMap<>();
        public final Map<String, List<String>> extraArrays = new LinkedHashMap<>();
    }

    private static byte[] readMem(RandomAccessFile mem, long addr, int len) throws IOException {
        byte[] b = new byte[len];
        mem.seek(addr);
        mem.readFully(b);
        return b;
    }

    /** Header then payload, the publication time checked before and after as readers do. */
    public static Published readThroughProcMem(long start) throws IOException {
        return readThroughProcMem("self", start);
    }

    public static Published readThroughProcMem(String pid, long start) throws IOException {
        try (RandomAccessFile mem = new RandomAccessFile("/proc/" + pid + "/mem", "r")) {
            ByteBuffer h = ByteBuffer.wrap(readMem(mem, start, 32)).order(ByteOrder.nativeOrder());
            byte[] sig = new byte[8];
            h.get(sig);
            check.equal("OTEL_CTX", new String(sig, StandardCharsets.US_ASCII));
            check.equal(2, h.getInt(8), "header version");
            int size = h.getInt(12);
            long at = h.getLong(16);
            long payloadAddr = h.getLong(24);
            check.that(size > 0 && at != 0 && payloadAddr != 0, "published");
            byte[] payload = readMem(mem, payloadAddr, size);
            ByteBuffer again = ByteBuffer.wrap(readMem(mem, start, 32)).order(ByteOrder.nativeOrder());
            check.equal(at, again.getLong(16), "no update while reading");
            Published p = decode(payload);
            p.publishedAtNs = at;
            return p;
        }
    }

    // ---- a minimal protobuf reader: ProcessContext{1: Resource{1: KeyValue*}, 2: KeyValue*} ----

    public static final class Pb {
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
                check.that(pos < end && shift < 64, "truncated varint");
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
            check.equal(2, tag & 7, "only LEN fields are written");
            return (int) (tag >>> 3);
        }

        Pb body() {
            int len = (int) varint();
            check.that(pos + len <= end, "field past its message");
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
                            check.equal(1, array.field());
                            Pb item = array.body();
                            check.equal(1, item.field());
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
        check.that(key != null, "KeyValue without a key");
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
                    check.equal(1, body.field(), "Resource.attributes");
                    Object[] kv = keyValue(body.body());
                    check.that(kv[1] instanceof String, "string attribute " + kv[0]);
                    check.equal(null, p.resource.put((String) kv[0], (String) kv[1]), "duplicate " + kv[0]);
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
