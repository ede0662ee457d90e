package com.datadoghq.profiler.natsock;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.concurrent.atomic.AtomicLong;

/** TCP echo on the loopback address: a server thread and a client that counts what it moved. */
final class EchoWork {
    private EchoWork() {}

    /** Echoes every connection, one at a time, on thread {@code natsock-server}. */
    static final class Server implements AutoCloseable {
        final ServerSocket socket;
        final AtomicLong echoed = new AtomicLong();
        private final Thread thread;

        Server() throws IOException {
            socket = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"));
            thread = new Thread(this::serve, "natsock-server");
            thread.setDaemon(true);
            thread.start();
        }

        int port() {
            return socket.getLocalPort();
        }

        private void serve() {
            byte[] buf = new byte[64 * 1024];
            while (!socket.isClosed()) {
                try (Socket s = socket.accept()) {
                    s.setTcpNoDelay(true);
                    InputStream in = s.getInputStream();
                    OutputStream out = s.getOutputStream();
                    for (int n; (n = in.read(buf)) > 0; ) {
                        out.write(buf, 0, n);
                        echoed.addAndGet(n);
                    }
                } catch (IOException e) {
                    // closed
                }
            }
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }

    /**
     * What a client run did: its local port, the bytes it sent (the same came back), and the time it
     * spent in its socket writes and reads as Java sees it (a little more than the calls themselves).
     */
    static final class Run {
        int localPort;
        long bytesSent;
        long nanosInCalls;
    }

    /** {@code rounds} messages of {@code size} bytes to the server, each read back in full. */
    static Run clientCaller(int port, int rounds, int size) {
        Run run = new Run();
        byte[] message = new byte[size];
        byte[] back = new byte[size];
        try (Socket s = new Socket(InetAddress.getByName("127.0.0.1"), port)) {
            s.setTcpNoDelay(true);
            run.localPort = s.getLocalPort();
            InputStream in = s.getInputStream();
            OutputStream out = s.getOutputStream();
            for (int i = 0; i < rounds; i++) {
                message[i % size] = (byte) i;
                long t0 = System.nanoTime();
                out.write(message);
                run.nanosInCalls += System.nanoTime() - t0;
                run.bytesSent += size;
                for (int got = 0; got < size; ) {
                    long t1 = System.nanoTime();
                    int n = in.read(back, got, size - got);
                    run.nanosInCalls += System.nanoTime() - t1;
                    if (n < 0) {
                        throw new IOException("server closed after " + i + " rounds");
                    }
                    got += n;
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return run;
    }
}
