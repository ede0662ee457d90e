package com.datadoghq.profiler.convert;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;

import com.datadoghq.profiler.testing.HttpLines;

/**
 * A one-request HTTP/1.1 receiver on 127.0.0.1 for the OTLP/HTTP tests, on plain sockets (the
 * JDK 11 runtime of the test matrix has no jdk.httpserver). It keeps the request's path,
 * headers and body and answers with {@code status} and {@code body}.
 */
final class OtlpReceiver implements AutoCloseable {
    private final ServerSocket server;
    private final Thread thread;
    private final int status;
    private final byte[] responseBody;
    volatile String path;
    final Map<String, String> headers = new HashMap<>();
    volatile byte[] body;
    volatile IOException failure;

    OtlpReceiver(int status, byte[] responseBody) throws IOException {
        this.status = status;
        this.responseBody = responseBody;
        server = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"));
        thread = new Thread(this::serve, "otlp-receiver");
        thread.setDaemon(true);
        thread.start();
    }

    String url(String path) {
        return "http://127.0.0.1:" + server.getLocalPort() + path;
    }

    private void serve() {
        try (Socket s = server.accept()) {
            InputStream in = s.getInputStream();
            String requestLine = HttpLines.line(in);
            path = requestLine.split(" ")[1];
            for (String h = HttpLines.line(in); !h.isEmpty(); h = HttpLines.line(in)) {
                int colon = h.indexOf(':');
                headers.put(h.substring(0, colon).trim().toLowerCase(Locale.ROOT), h.substring(colon + 1).trim());
            }
            int length = Integer.parseInt(headers.getOrDefault("content-length", "0"));
            body = in.readNBytes(length);
            OutputStream out = s.getOutputStream();
            out.write(("HTTP/1.1 " + status + " X\r\nContent-Type: application/x-protobuf\r\nContent-Length: "
                    + responseBody.length + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            out.write(responseBody);
            out.flush();
        } catch (IOException e) {
            failure = e;
        }
    }

    @Override
    public void close() throws IOException {
        server.close();
    }
}
