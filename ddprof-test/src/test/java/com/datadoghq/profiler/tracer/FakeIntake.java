package com.datadoghq.profiler.tracer;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.zip.GZIPInputStream;

/**
 * A Datadog agent stand-in on 127.0.0.1 (an ephemeral port) for {@link RealTracerTest}: a small
 * HTTP/1.1 server on a plain socket (the JDK 11 runtime of the matrix has no jdk.httpserver).
 *
 * <ul>
 *   <li>{@code GET /info}: advertises {@code /v0.4/traces} and {@code /profiling/v1/input} only (so
 *       the tracer sends msgpack v0.4 traces, computes no client stats, and polls no remote
 *       config)</li>
 *   <li>{@code PUT|POST /v0.4/traces} (and v0.3/v0.5): decodes the msgpack v0.4 payload, keeps every
 *       span id, answers {@code {"rate_by_service":{}}}</li>
 *   <li>{@code POST /profiling/v1/input}: a multipart upload; its JFR part ({@code main}, or a
 *       part whose file name ends in {@code .jfr}) is saved as {@code upload-NNN.jfr} in the
 *       given directory (gzip is undone; other compressions are refused with a note)</li>
 *   <li>anything else: 200 {@code {}}, and the path is remembered</li>
 * </ul>
 */
final class FakeIntake implements AutoCloseable {
    private final ServerSocket socket;
    private final ExecutorService executor;
    private final Thread acceptor;
    private volatile boolean closed;
    private final Path uploadDir;
    private final List<Path> uploads = new CopyOnWriteArrayList<>();
    private final List<Long> uploadNanos = new CopyOnWriteArrayList<>();
    private final Set<Long> spanIds = ConcurrentHashMap.newKeySet();
    private final Map<String, Integer> requests = new ConcurrentHashMap<>();
    private final List<String> problems = new CopyOnWriteArrayList<>();
    private volatile long traceCountHeader;
    private volatile int tracePayloads;

    FakeIntake(Path uploadDir) throws IOException {
        this.uploadDir = uploadDir;
        Files.createDirectories(uploadDir);
        socket = new ServerSocket(0, 16, InetAddress.getByName("127.0.0.1"));
        // One thread per connection (the tracer keeps a few open); a bounded number of them.
        executor = Executors.newFixedThreadPool(8, r -> {
            Thread t = new Thread(r, "fake-intake");
            t.setDaemon(true);
            return t;
        });
        acceptor = new Thread(this::accept, "fake-intake-accept");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    private void accept() {
        while (!closed) {
            try {
                Socket s = socket.accept();
                executor.submit(() -> serve(s));
            } catch (IOException e) {
                if (!closed) {
                    problems.add("accept failed: " + e);
                }
                return;
            } catch (java.util.concurrent.RejectedExecutionException e) {
                return;
            }
        }
    }

    /** HTTP/1.1 with keep-alive: Content-Length or chunked request bodies. */
    private void serve(Socket s) {
        try (Socket sock = s) {
            sock.setSoTimeout(60_000);
            InputStream in = new BufferedInputStream(sock.getInputStream());
            OutputStream out = new BufferedOutputStream(sock.getOutputStream());
            while (!closed) {
                String requestLine = line(in);
                if (requestLine == null) {
                    return;
                }
                if (requestLine.isEmpty()) {
                    continue;
                }
                String[] rl = requestLine.split(" ");
                Map<String, String> headers = new HashMap<>();
                for (String h = line(in); h != null && !h.isEmpty(); h = line(in)) {
                    int colon = h.indexOf(':');
                    if (colon > 0) {
                        headers.put(h.substring(0, colon).trim().toLowerCase(Locale.ROOT), h.substring(colon + 1).trim());
                    }
                }
                if ("100-continue".equalsIgnoreCase(headers.get("expect"))) {
                    out.write("HTTP/1.1 100 Continue\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
                    out.flush();
                }
                byte[] body;
                if ("chunked".equalsIgnoreCase(headers.get("transfer-encoding"))) {
                    ByteArrayOutputStream bos = new ByteArrayOutputStream();
                    for (int n = Integer.parseInt(line(in).split(";")[0].trim(), 16); n > 0;
                            n = Integer.parseInt(line(in).split(";")[0].trim(), 16)) {
                        bos.write(readN(in, n));
                        line(in);
                    }
                    for (String t = line(in); t != null && !t.isEmpty(); t = line(in)) {
                        // trailers
                    }
                    body = bos.toByteArray();
                } else {
                    String len = headers.get("content-length");
                    body = readN(in, len == null ? 0 : Integer.parseInt(len));
                }
                String json = handle(rl[0], rl.length > 1 ? rl[1].split("\\?")[0] : "/", headers, body);
                byte[] b = json.getBytes(StandardCharsets.UTF_8);
                out.write(("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + b.length + "\r\n\r\n")
                        .getBytes(StandardCharsets.ISO_8859_1));
                out.write(b);
                out.flush();
                if ("close".equalsIgnoreCase(headers.get("connection"))) {
                    return;
                }
            }
        } catch (java.net.SocketTimeoutException | java.net.SocketException e) {
            // an idle keep-alive connection, or the tracer went away
        } catch (IOException | RuntimeException e) {
            if (!closed) {
                problems.add("connection failed: " + e);
            }
        }
    }

    private static String line(InputStream in) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        int c;
        while ((c = in.read()) >= 0) {
            if (c == '\n') {
                break;
            }
            if (c != '\r') {
                b.write(c);
            }
        }
        if (c < 0 && b.size() == 0) {
            return null;
        }
        return new String(b.toByteArray(), StandardCharsets.ISO_8859_1);
    }

    private static byte[] readN(InputStream in, int n) throws IOException {
        byte[] b = new byte[n];
        int off = 0;
        while (off < n) {
            int r = in.read(b, off, n - off);
            if (r < 0) {
                throw new java.io.EOFException("body ended after " + off + " of " + n + " bytes");
            }
            off += r;
        }
        return b;
    }

    int port() {
        return socket.getLocalPort();
    }

    String url() {
        return "http://127.0.0.1:" + port();
    }

    /** The saved JFR files, in arrival order. */
    List<Path> uploads() {
        return new ArrayList<>(uploads);
    }

    int uploadCount() {
        return uploads.size();
    }

    /** System.nanoTime() of each saved upload's arrival. */
    List<Long> uploadNanos() {
        return new ArrayList<>(uploadNanos);
    }

    Set<Long> spanIds() {
        return Collections.unmodifiableSet(spanIds);
    }

    int tracePayloads() {
        return tracePayloads;
    }

    /** The sum of the {@code X-Datadog-Trace-Count} headers of the trace payloads. */
    long traceCountHeader() {
        return traceCountHeader;
    }

    /** Request counts per "METHOD path", for failure messages. */
    Map<String, Integer> requests() {
        return new LinkedHashMap<>(requests);
    }

    /** What the intake could not make sense of (undecodable payloads, compressed JFR...). */
    List<String> problems() {
        return new ArrayList<>(problems);
    }

    private String handle(String method, String path, Map<String, String> headers, byte[] body) {
        requests.merge(method + " " + path, 1, Integer::sum);
        try {
            if (path.equals("/info")) {
                return "{\"version\":\"7.99.0\",\"endpoints\":[\"/v0.4/traces\",\"/profiling/v1/input\"],"
                        + "\"client_drop_p0s\":false,\"span_meta_structs\":false,\"config\":{}}";
            } else if (path.matches("/v0\\.[345]/traces")) {
                onTraces(headers, path, body);
                return "{\"rate_by_service\":{}}";
            } else if (path.equals("/profiling/v1/input")) {
                onProfile(headers, body);
            }
        } catch (IOException | RuntimeException e) {
            problems.add(method + " " + path + " failed: " + e);
        }
        return "{}";
    }

    private void onTraces(Map<String, String> headers, String path, byte[] body) {
        tracePayloads++;
        String count = headers.get("x-datadog-trace-count");
        if (count != null) {
            try {
                traceCountHeader += Long.parseLong(count.trim());
            } catch (NumberFormatException e) {
                problems.add("bad X-Datadog-Trace-Count " + count);
            }
        }
        if (!path.equals("/v0.4/traces") || body.length == 0) {
            return;
        }
        try {
            Object traces = new MsgPack(body).read();
            if (traces instanceof List) {
                for (Object trace : (List<?>) traces) {
                    if (trace instanceof List) {
                        for (Object span : (List<?>) trace) {
                            if (span instanceof Map) {
                                Object id = ((Map<?, ?>) span).get("span_id");
                                if (id instanceof Long) {
                                    spanIds.add((Long) id);
                                }
                            }
                        }
                    }
                }
            }
        } catch (RuntimeException e) {
            problems.add("undecodable " + path + " payload (" + body.length + " bytes): " + e);
        }
    }

    private void onProfile(Map<String, String> headers, byte[] body) throws IOException {
        String type = headers.get("content-type");
        String boundary = null;
        if (type != null) {
            for (String p : type.split(";")) {
                p = p.trim();
                if (p.startsWith("boundary=")) {
                    boundary = p.substring("boundary=".length()).replace("\"", "");
                }
            }
        }
        if (boundary == null) {
            problems.add("profile upload without a multipart boundary, Content-Type " + type);
            return;
        }
        byte[] jfr = null;
        List<String> names = new ArrayList<>();
        for (Part part : Part.split(body, boundary)) {
            names.add(part.name + (part.filename != null ? "(" + part.filename + ")" : ""));
            if ("main".equals(part.name) || (part.filename != null && part.filename.endsWith(".jfr"))) {
                jfr = part.data;
            }
        }
        if (jfr == null) {
            problems.add("profile upload without a JFR part; parts: " + names);
            return;
        }
        if (jfr.length > 2 && (jfr[0] & 0xff) == 0x1f && (jfr[1] & 0xff) == 0x8b) {
            jfr = readAll(new GZIPInputStream(new ByteArrayInputStream(jfr)));
        }
        if (jfr.length < 4 || jfr[0] != 'F' || jfr[1] != 'L' || jfr[2] != 'R' || jfr[3] != 0) {
            problems.add(String.format("profile upload's JFR part does not start with FLR\\0 (first bytes %02x %02x %02x %02x;"
                    + " compressed? parts %s)", jfr[0], jfr[1], jfr[2], jfr[3], names));
            return;
        }
        synchronized (uploads) {
            Path file = uploadDir.resolve(String.format("upload-%03d.jfr", uploads.size()));
            Files.write(file, jfr);
            uploads.add(file);
            uploadNanos.add(System.nanoTime());
        }
    }

    private static byte[] readAll(InputStream in) throws IOException {
        ByteArrayOutputStream bos = new ByteArrayOutputStream();
        byte[] buf = new byte[65536];
        int n;
        while ((n = in.read(buf)) > 0) {
            bos.write(buf, 0, n);
        }
        return bos.toByteArray();
    }

    @Override
    public void close() {
        closed = true;
        try {
            socket.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        executor.shutdownNow();
        try {
            executor.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** One part of a multipart/form-data body. */
    static final class Part {
        final String name;
        final String filename;
        final byte[] data;

        Part(String name, String filename, byte[] data) {
            this.name = name;
            this.filename = filename;
            this.data = data;
        }

        static List<Part> split(byte[] body, String boundary) {
            byte[] delim = ("--" + boundary).getBytes(StandardCharsets.ISO_8859_1);
            List<Part> parts = new ArrayList<>();
            int pos = indexOf(body, delim, 0);
            while (pos >= 0) {
                int start = pos + delim.length;
                if (start + 1 < body.length && body[start] == '-' && body[start + 1] == '-') {
                    break; // the closing delimiter
                }
                start = skipCrlf(body, start);
                int headersEnd = indexOf(body, "\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1), start);
                if (headersEnd < 0) {
                    break;
                }
                String headers = new String(body, start, headersEnd - start, StandardCharsets.ISO_8859_1);
                int dataStart = headersEnd + 4;
                int next = indexOf(body, delim, dataStart);
                if (next < 0) {
                    break;
                }
                int dataEnd = next;
                if (dataEnd >= 2 && body[dataEnd - 2] == '\r' && body[dataEnd - 1] == '\n') {
                    dataEnd -= 2;
                }
                byte[] data = new byte[Math.max(0, dataEnd - dataStart)];
                System.arraycopy(body, dataStart, data, 0, data.length);
                parts.add(new Part(param(headers, "name"), param(headers, "filename"), data));
                pos = next;
            }
            return parts;
        }

        private static String param(String headers, String key) {
            for (String line : headers.split("\r\n")) {
                if (!line.toLowerCase(java.util.Locale.ROOT).startsWith("content-disposition:")) {
                    continue;
                }
                for (String p : line.split(";")) {
                    p = p.trim();
                    if (p.startsWith(key + "=")) {
                        return p.substring(key.length() + 1).replace("\"", "");
                    }
                }
            }
            return null;
        }

        private static int skipCrlf(byte[] b, int i) {
            if (i + 1 < b.length && b[i] == '\r' && b[i + 1] == '\n') {
                return i + 2;
            }
            return i;
        }

        private static int indexOf(byte[] hay, byte[] needle, int from) {
            outer:
            for (int i = Math.max(0, from); i <= hay.length - needle.length; i++) {
                for (int j = 0; j < needle.length; j++) {
                    if (hay[i + j] != needle[j]) {
                        continue outer;
                    }
                }
                return i;
            }
            return -1;
        }
    }

    /** Just enough MessagePack to read a v0.4 trace payload: maps, arrays, strings, numbers. */
    static final class MsgPack {
        private final byte[] b;
        private int i;

        MsgPack(byte[] b) {
            this.b = b;
        }

        Object read() {
            int t = u8();
            if (t <= 0x7f) {
                return (long) t;
            }
            if (t >= 0xe0) {
                return (long) (byte) t;
            }
            if ((t & 0xf0) == 0x80) {
                return map(t & 0x0f);
            }
            if ((t & 0xf0) == 0x90) {
                return array(t & 0x0f);
            }
            if ((t & 0xe0) == 0xa0) {
                return str(t & 0x1f);
            }
            switch (t) {
                case 0xc0: return null;
                case 0xc2: return Boolean.FALSE;
                case 0xc3: return Boolean.TRUE;
                case 0xc4: return bytes(u8());
                case 0xc5: return bytes(u16());
                case 0xc6: return bytes((int) u32());
                case 0xca: return (double) Float.intBitsToFloat((int) u32());
                case 0xcb: return Double.longBitsToDouble(u64());
                case 0xcc: return (long) u8();
                case 0xcd: return (long) u16();
                case 0xce: return u32();
                case 0xcf: return u64();
                case 0xd0: return (long) (byte) u8();
                case 0xd1: return (long) (short) u16();
                case 0xd2: return (long) (int) u32();
                case 0xd3: return u64();
                case 0xd9: return str(u8());
                case 0xda: return str(u16());
                case 0xdb: return str((int) u32());
                case 0xdc: return array(u16());
                case 0xdd: return array((int) u32());
                case 0xde: return map(u16());
                case 0xdf: return map((int) u32());
                default: throw new IllegalArgumentException(String.format("msgpack type 0x%02x at %d", t, i - 1));
            }
        }

        private List<Object> array(int n) {
            List<Object> l = new ArrayList<>(Math.min(n, 1024));
            for (int k = 0; k < n; k++) {
                l.add(read());
            }
            return l;
        }

        private Map<Object, Object> map(int n) {
            Map<Object, Object> m = new LinkedHashMap<>();
            for (int k = 0; k < n; k++) {
                Object key = read();
                m.put(key, read());
            }
            return m;
        }

        private String str(int n) {
            String s = new String(b, i, n, StandardCharsets.UTF_8);
            i += n;
            return s;
        }

        private byte[] bytes(int n) {
            byte[] r = new byte[n];
            System.arraycopy(b, i, r, 0, n);
            i += n;
            return r;
        }

        private int u8() {
            if (i >= b.length) {
                throw new IllegalArgumentException("truncated at " + i);
            }
            return b[i++] & 0xff;
        }

        private int u16() {
            return (u8() << 8) | u8();
        }

        private long u32() {
            return ((long) u16() << 16) | u16();
        }

        private long u64() {
            return (u32() << 32) | u32();
        }
    }
}
