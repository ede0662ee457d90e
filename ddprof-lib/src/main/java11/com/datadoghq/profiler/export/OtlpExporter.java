package com.datadoghq.profiler.export;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.GZIPOutputStream;

import com.datadoghq.profiler.internal.OtlpExport;

/**
 * The OTLP exporter (docs/exporter.md): every interval one chunk of the recording is cut
 * ({@code OtlpExport.Profiler#exportChunk}: what was recorded since the last dump, the main
 * file left alone), appended to the main file (so {@code file=} still holds the whole session),
 * converted in-process to an {@code ExportProfilesServiceRequest}, gzipped and queued as one
 * file in the backlog directory {@code <file>.otlp/}; then the backlog is POSTed oldest first.
 *
 * <p>One thread, so one export in flight. A refused or failed POST (connection error, HTTP
 * 408, 429, 5xx) keeps the request and retries after a backoff (1 s doubling to the interval,
 * jittered 50 to 150%); other 4xx answers drop it (the collector will never take it). The
 * backlog holds at most {@code otlpbacklog} requests and {@link OtlpExport#BACKLOG_BYTES}
 * bytes: past either, the oldest are deleted and counted in {@code otlp_dropped}. Requests left
 * at stop stay on disk and are sent by the next session with the same {@code file=}.
 * Nothing here throws into the application: failures are counted, and logged once per state
 * change on stderr.
 */
public final class OtlpExporter implements OtlpExport.Exporter {
    private static final String SUFFIX = ".otlp.pb.gz";
    private static final long FIRST_BACKOFF_MILLIS = 1_000;
    /** How long {@link #finish} may try to send what is left. */
    private static final long FINISH_BUDGET_MILLIS = 10_000;
    /** How long {@link #finish} waits for the exporter thread once its POST is cut off. */
    private static final long JOIN_MILLIS = 5_000;
    private static final int CONNECT_TIMEOUT_MILLIS = 10_000;
    private static final int READ_TIMEOUT_MILLIS = 30_000;

    private final OtlpExport.Config config;
    private final OtlpExport.Profiler profiler;
    private final Path dir;
    private final Map<String, String> resource;
    private final Thread thread;
    private final AtomicLong exports = OtlpExport.counter("otlp_exports");
    private final AtomicLong failures = OtlpExport.counter("otlp_export_failures");
    private final AtomicLong bytes = OtlpExport.counter("otlp_bytes");
    private final AtomicLong dropped = OtlpExport.counter("otlp_dropped");
    private final Object wake = new Object();
    private volatile boolean stopping;
    /** The POST in flight, cut off by {@link #finish} so that stop never waits for a hung collector. */
    private volatile HttpURLConnection inFlight;
    /** While {@link #finish} sends: no request may outlive this (epoch ms; 0: no limit). */
    private volatile long sendDeadline;
    /** The main file's length after the exporter's last append (under the profiler's lock). */
    private long mainExported;
    private long sequence;
    private long backoffMillis;
    private long retryAt;
    private boolean failing;
    private Thread shutdownHook;

    private OtlpExporter(OtlpExport.Config config, OtlpExport.Profiler profiler, Path main) throws IOException {
        this.config = config;
        this.profiler = profiler;
        this.dir = main.resolveSibling(main.getFileName() + ".otlp");
        Files.createDirectories(dir);
        if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
            throw new IOException(dir + " is not a directory");
        }
        Map<String, String> r = new LinkedHashMap<>(config.resource);
        r.putIfAbsent("host.name", hostName());
        r.putIfAbsent("process.pid", Long.toString(ProcessHandle.current().pid()));
        this.resource = Collections.unmodifiableMap(r);
        for (Path p : backlog()) {
            sequence = Math.max(sequence, sequenceOf(p));
        }
        // `resume` keeps what the file holds: only what comes after it is this exporter's.
        mainExported = Files.isRegularFile(main, LinkOption.NOFOLLOW_LINKS) ? Files.size(main) : 0;
        thread = new Thread(this::loop, "ddprof-otlp-exporter");
        thread.setDaemon(true);
    }

    /** Called (by reflection) from {@code OtlpExport.start} once the session runs. */
    public static OtlpExport.Exporter start(OtlpExport.Config config, OtlpExport.Profiler profiler)
            throws IOException {
        String file = profiler.recordingFile();
        if (file == null) {
            throw new IllegalStateException("the profiler is not running");
        }
        OtlpExporter e = new OtlpExporter(config, profiler, Paths.get(file).toAbsolutePath());
        e.thread.start();
        // A JVM that exits without stop() still sends its last interval (bounded, see finish).
        e.shutdownHook = new Thread(() -> {
            try {
                profiler.stopSession();
            } catch (Throwable ignored) {
                // already stopped, or the JVM is going down: nothing to report to
            }
        }, "ddprof-otlp-final-export");
        Runtime.getRuntime().addShutdownHook(e.shutdownHook);
        return e;
    }

    @Override
    public void mainFileRestarted() {
        mainExported = 0;
    }

    @Override
    public void finish(Runnable stopProfiler) {
        stopping = true;
        synchronized (wake) {
            wake.notifyAll();
        }
        if (Thread.currentThread() != thread) {
            // A POST in flight is abandoned (its request stays queued) rather than waited for:
            // a collector that hangs must not hold up the application's stop or exit.
            HttpURLConnection c = inFlight;
            if (c != null) {
                c.disconnect();
            }
            try {
                thread.join(JOIN_MILLIS);
                if (thread.isAlive()) {
                    // Not in a POST any more: converting a large interval. Its queue must not
                    // race with the final export's.
                    thread.join(60_000);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (shutdownHook != null && Thread.currentThread() != shutdownHook) {
            try {
                Runtime.getRuntime().removeShutdownHook(shutdownHook);
            } catch (IllegalStateException ignored) {
                // the JVM is shutting down already
            }
        }
        // stop writes the session's last chunk after the exporter's: that tail is the final export.
        long[] from = new long[1];
        String[] recording = new String[1];
        profiler.locked(() -> {
            from[0] = mainExported;
            recording[0] = profiler.recordingFile();
            stopProfiler.run();
        });
        String file = recording[0];
        if (file != null) {
            try {
                Path main = Paths.get(file);
                long size = Files.size(main);
                if (size > from[0]) {
                    Path chunk = dir.resolve(".final.jfr");
                    try (FileChannel in = FileChannel.open(main, StandardOpenOption.READ);
                         FileChannel out = FileChannel.open(chunk, StandardOpenOption.CREATE,
                                 StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
                        in.transferTo(from[0], size - from[0], out);
                    }
                    queue(chunk);
                }
            } catch (IOException | RuntimeException e) {
                warn("the final export could not be prepared: " + e);
            }
        }
        long deadline = System.currentTimeMillis() + FINISH_BUDGET_MILLIS;
        sendDeadline = deadline;
        retryAt = 0;
        while (!backlog().isEmpty() && System.currentTimeMillis() < deadline) {
            if (!sendBacklog()) {
                sleepUntil(Math.min(deadline, retryAt), false);
            }
        }
    }

    private void loop() {
        long next = System.currentTimeMillis() + config.intervalMillis;
        while (!stopping) {
            long now = System.currentTimeMillis();
            if (now >= next) {
                cut();
                // Late (a slow export): the next cut is one interval from now, none skipped twice.
                next = Math.max(next + config.intervalMillis, now + 1);
            }
            if (!stopping && System.currentTimeMillis() >= retryAt) {
                sendBacklog();
            }
            long wakeAt = next;
            if (!backlog().isEmpty()) {
                wakeAt = Math.min(wakeAt, Math.max(retryAt, System.currentTimeMillis() + 1));
            }
            sleepUntil(wakeAt, true);
        }
    }

    private void sleepUntil(long at, boolean interruptible) {
        synchronized (wake) {
            long left = at - System.currentTimeMillis();
            while (left > 0 && !(interruptible && stopping)) {
                try {
                    wake.wait(left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
                left = at - System.currentTimeMillis();
            }
        }
    }

    /** One interval: the chunk cut and appended to the main file, then queued for export. */
    private void cut() {
        Path chunk = dir.resolve(".chunk.jfr");
        boolean[] cutDone = new boolean[1];
        try {
            profiler.locked(() -> {
                if (stopping) {
                    return; // stop takes this interval's data into the final export
                }
                try {
                    Files.deleteIfExists(chunk);
                    profiler.exportChunk(chunk);
                    if (!Files.isRegularFile(chunk)) {
                        return; // idle
                    }
                    cutDone[0] = true;
                    String file = profiler.recordingFile();
                    if (file != null) {
                        appendToMainFile(chunk, Paths.get(file));
                    }
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
            if (cutDone[0]) {
                queue(chunk);
            }
        } catch (RuntimeException e) {
            failures.incrementAndGet();
            warn("could not take this interval's recording: " + e);
        }
    }

    /**
     * Appends the cut chunk to the main file, so that it keeps the whole session. A failure
     * (the file removed, a full disk) costs the main file that chunk, not the export: it is
     * reported and the chunk is still sent.
     */
    private void appendToMainFile(Path chunk, Path main) {
        try (OutputStream out = Files.newOutputStream(main, StandardOpenOption.APPEND, LinkOption.NOFOLLOW_LINKS)) {
            Files.copy(chunk, out);
            mainExported = Files.size(main);
        } catch (IOException | RuntimeException e) {
            warn("could not append this interval's chunk to " + main + ": " + e);
            try {
                mainExported = Files.size(main);
            } catch (IOException | RuntimeException ignored) {
                mainExported = 0;
            }
        }
    }

    /** Converts the chunk at {@code jfr}, queues the request in the backlog and deletes {@code jfr}. */
    private void queue(Path jfr) {
        try {
            Profile profile = new JfrProfileReader(Collections.emptySet(), null, null).read(jfr);
            if (profile.kinds().isEmpty()) {
                return; // no sample in this interval: nothing to send
            }
            byte[] request = Otlp.encode(profile, null, resource);
            ByteArrayOutputStream gz = new ByteArrayOutputStream(request.length / 4 + 64);
            try (GZIPOutputStream out = new GZIPOutputStream(gz)) {
                out.write(request);
            }
            Path tmp = dir.resolve(".queued.tmp");
            Files.write(tmp, gz.toByteArray());
            Files.move(tmp, dir.resolve(String.format("%012d", ++sequence) + SUFFIX),
                    StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            bound();
        } catch (IOException | RuntimeException e) {
            failures.incrementAndGet();
            warn("could not convert this interval's recording: " + e);
        } finally {
            try {
                Files.deleteIfExists(jfr);
            } catch (IOException ignored) {
                // overwritten by the next cut
            }
        }
    }

    /** Drops the oldest requests past the backlog's bounds. */
    private void bound() throws IOException {
        List<Path> queued = backlog();
        long total = 0;
        for (Path p : queued) {
            total += Files.size(p);
        }
        int i = 0;
        while (queued.size() - i > config.backlog || (total > OtlpExport.BACKLOG_BYTES && queued.size() - i > 1)) {
            total -= Files.size(queued.get(i));
            Files.deleteIfExists(queued.get(i));
            dropped.incrementAndGet();
            i++;
        }
    }

    /** Sends the backlog oldest first; false when a request was refused (retry at {@link #retryAt}). */
    private boolean sendBacklog() {
        for (Path p : backlog()) {
            byte[] body;
            try {
                body = Files.readAllBytes(p);
            } catch (IOException e) {
                continue; // deleted meanwhile
            }
            int status;
            String reason;
            try {
                status = post(body);
                reason = "HTTP " + status;
            } catch (IOException | RuntimeException e) {
                if (stopping && Thread.currentThread() == thread) {
                    return false; // cut off by finish: not a failure, the request stays queued
                }
                status = -1;
                reason = e.toString();
            }
            if (status / 100 == 2) {
                exports.incrementAndGet();
                bytes.addAndGet(body.length);
                delete(p);
                backoffMillis = 0;
                if (failing) {
                    failing = false;
                    System.err.println("[ddprof] OTLP export to " + config.endpoint + " works again");
                }
                continue;
            }
            failures.incrementAndGet();
            if (status >= 400 && status < 500 && status != 408 && status != 429) {
                // The collector will never take it: keep the rest moving.
                dropped.incrementAndGet();
                delete(p);
                warn("the collector refused a request (" + reason + "); dropped");
                continue;
            }
            backoffMillis = backoffMillis == 0 ? FIRST_BACKOFF_MILLIS
                    : Math.min(backoffMillis * 2, Math.max(FIRST_BACKOFF_MILLIS, config.intervalMillis));
            long jittered = (long) (backoffMillis * (0.5 + ThreadLocalRandom.current().nextDouble()));
            retryAt = System.currentTimeMillis() + jittered;
            if (!failing) {
                failing = true;
                warn("export failed (" + reason + "); keeping it in " + dir + " and retrying");
            }
            return false;
        }
        return true;
    }

    private int post(byte[] gzipped) throws IOException {
        HttpURLConnection c = (HttpURLConnection) config.endpoint.toURL().openConnection();
        try {
            c.setRequestMethod("POST");
            c.setDoOutput(true);
            int connect = CONNECT_TIMEOUT_MILLIS;
            int read = READ_TIMEOUT_MILLIS;
            long deadline = sendDeadline;
            if (deadline != 0) {
                int left = (int) Math.max(1, Math.min(Integer.MAX_VALUE, deadline - System.currentTimeMillis()));
                connect = Math.min(connect, left);
                read = Math.min(read, left);
            }
            c.setConnectTimeout(connect);
            c.setReadTimeout(read);
            c.setRequestProperty("Content-Type", "application/x-protobuf");
            c.setRequestProperty("Content-Encoding", "gzip");
            c.setRequestProperty("User-Agent", "ddprof/" + com.datadoghq.profiler.Main.version());
            for (Map.Entry<String, String> h : config.headers.entrySet()) {
                c.setRequestProperty(h.getKey(), h.getValue());
            }
            c.setFixedLengthStreamingMode(gzipped.length);
            inFlight = c;
            if (stopping && Thread.currentThread() == thread) {
                throw new IOException("stopping"); // finish may have looked before inFlight was set
            }
            try (OutputStream out = c.getOutputStream()) {
                out.write(gzipped);
            }
            int status = c.getResponseCode();
            InputStream body = status >= 400 ? c.getErrorStream() : c.getInputStream();
            if (body != null) {
                try (InputStream in = body) {
                    in.readAllBytes(); // lets the connection be reused
                }
            }
            return status;
        } finally {
            inFlight = null;
            c.disconnect();
        }
    }

    private List<Path> backlog() {
        List<Path> out = new ArrayList<>();
        try (DirectoryStream<Path> s = Files.newDirectoryStream(dir, "*" + SUFFIX)) {
            for (Path p : s) {
                if (sequenceOf(p) > 0) {
                    out.add(p);
                }
            }
        } catch (IOException ignored) {
            // no directory: nothing queued
        }
        out.sort((a, b) -> Long.compare(sequenceOf(a), sequenceOf(b)));
        return out;
    }

    private static long sequenceOf(Path p) {
        String name = p.getFileName().toString();
        try {
            return Long.parseLong(name.substring(0, name.length() - SUFFIX.length()));
        } catch (NumberFormatException | IndexOutOfBoundsException e) {
            return 0;
        }
    }

    private static void delete(Path p) {
        try {
            Files.deleteIfExists(p);
        } catch (IOException ignored) {
            // sent already; a leftover would be sent again, which the collector tolerates
        }
    }

    private static String hostName() {
        try {
            String h = new String(Files.readAllBytes(Paths.get("/proc/sys/kernel/hostname"))).trim();
            if (!h.isEmpty()) {
                return h;
            }
        } catch (IOException | RuntimeException ignored) {
            // not Linux: ask the resolver
        }
        try {
            return java.net.InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            return "localhost";
        }
    }

    private static void warn(String what) {
        System.err.println("[ddprof] OTLP exporter: " + what);
    }
}
