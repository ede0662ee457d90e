package com.datadoghq.profiler.export;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.IntUnaryOperator;
import java.util.zip.GZIPInputStream;

import com.datadoghq.profiler.testing.HttpLines;

import io.opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest;

/**
 * A fake OTLP/HTTP collector on 127.0.0.1 for the exporter's tests, on plain sockets (the JDK
 * 11 runtime of the test matrix has no jdk.httpserver). Answers request {@code i} (from 0)
 * with the status {@code statusOf(i)}, one request per connection, and keeps every request. A
 * negative status never answers: the connection is held until the collector closes (a hung
 * collector). {@link #touchOnRequest}, when set, is created at the first request.
 */
final class OtlpCollector implements AutoCloseable {
    /** One request as received. */
    static final class Request {
        final int index;
        final String path;
        final Map<String, String> headers;
        final byte[] body;
        final int answered;

        Request(int index, String path, Map<String, String> headers, byte[] body, int answered) {
            this.index = index;
            this.path = path;
            this.headers = headers;
            this.body = body;
            this.answered = answered;
        }

        /** The body un-gzipped (as Content-Encoding says) and decoded. */
        ExportProfilesServiceRequest decode() throws IOException {
            byte[] raw = body;
            if ("gzip".equals(headers.get("content-encoding"))) {
                try (InputStream in = new GZIPInputStream(new ByteArrayInputStream(body))) {
                    raw = in.readAllBytes();
                }
            }
            return ExportProfilesServiceRequest.parseFrom(raw);
        }
    }

    private final ServerSocket server;
    private final IntUnaryOperator statusOf;
    private final List<Request> requests = new ArrayList<>();
    volatile java.nio.file.Path touchOnRequest;

    OtlpCollector(IntUnaryOperator statusOf) throws IOException {
        this.statusOf = statusOf;
        server = new ServerSocket(0, 16, InetAddress.getByName("127.0.0.1"));
        Thread t = new Thread(this::serve, "otlp-collector");
        t.setDaemon(true);
        t.start();
    }

    String url() {
        return "http://127.0.0.1:" + server.getLocalPort() + "/v1development/profiles";
    }

    synchronized List<Request> requests() {
        return new ArrayList<>(requests);
    }

    private void serve() {
        while (!server.isClosed()) {
            try (Socket s = server.accept()) {
                InputStream in = s.getInputStream();
                String path = HttpLines.line(in).split(" ")[1];
                Map<String, String> headers = new HashMap<>();
                for (String h = HttpLines.line(in); !h.isEmpty(); h = HttpLines.line(in)) {
                    int colon = h.indexOf(':');
                    headers.put(h.substring(0, colon).trim().toLowerCase(Locale.ROOT), h.substring(colon + 1).trim());
                }
                byte[] body = in.readNBytes(Integer.parseInt(headers.getOrDefault("content-length", "0")));
                int status;
                synchronized (this) {
                    status = statusOf.applyAsInt(requests.size());
                    requests.add(new Request(requests.size(), path, headers, body, status));
                }
                java.nio.file.Path touch = touchOnRequest;
                if (touch != null && !java.nio.file.Files.exists(touch)) {
                    java.nio.file.Files.createFile(touch);
                }
                while (status < 0 && !server.isClosed()) {
                    try {
                        Thread.sleep(50);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
                OutputStream out = s.getOutputStream();
                out.write(("HTTP/1.1 " + status + " X\r\nContent-Type: application/x-protobuf\r\n"
                        + "Content-Length: 0\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                out.flush();
            } catch (IOException | RuntimeException e) {
                // a closed server, or a client that went away mid-request: next one
            }
        }
    }

    @Override
    public void close() throws IOException {
        server.close();
    }
}
