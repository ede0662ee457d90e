package com.datadoghq.profiler.export;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import jdk.jfr.consumer.RecordedMethod;

/**
 * What every reader of a recording (the converters, {@code report}) reads off it the same way:
 * the chunks' times from their headers, a frame's class name, and the one
 * line that says a file could not be read.
 */
public final class Recorded {
    private Recorded() {
    }

    /**
     * Each chunk's {startTime, duration} (epoch nanoseconds, nanoseconds), read from the chunk
     * headers: {@code "FLR\0"}, u16 major, u16 minor, i64 size, i64 constant-pool offset, i64
     * metadata offset, i64 start time, i64 duration. Stops at the first thing that is not a
     * chunk header (a cut file).
     */
    public static List<long[]> chunkTimes(Path file) throws IOException {
        List<long[]> chunks = new ArrayList<>();
        try (InputStream raw = Files.newInputStream(file);
             DataInputStream in = new DataInputStream(new BufferedInputStream(raw))) {
            while (true) {
                int magic;
                try {
                    magic = in.readInt();
                } catch (EOFException end) {
                    return chunks;
                }
                if (magic != 0x464c5200) { // "FLR\0"
                    return chunks;
                }
                long start;
                long duration;
                long size;
                try {
                    in.readInt(); // major, minor
                    size = in.readLong();
                    in.readLong(); // constant-pool offset
                    in.readLong(); // metadata offset
                    start = in.readLong();
                    duration = in.readLong();
                } catch (EOFException cut) {
                    return chunks;
                }
                if (size < 48) {
                    return chunks;
                }
                chunks.add(new long[] {start, duration});
                long skip = size - 48;
                while (skip > 0) {
                    long n = in.skip(skip);
                    if (n <= 0) {
                        return chunks;
                    }
                    skip -= n;
                }
            }
        }
    }

    /**
     * {start, end} epoch nanoseconds of the recordings, from the earliest chunk's start to the
     * latest chunk's end ({0, 0} when no chunk header reads).
     */
    public static long[] span(List<Path> files) throws IOException {
        long start = Long.MAX_VALUE;
        long end = Long.MIN_VALUE;
        for (Path file : files) {
            for (long[] c : chunkTimes(file)) {
                start = Math.min(start, c[0]);
                end = Math.max(end, c[0] + c[1]);
            }
        }
        return end == Long.MIN_VALUE ? new long[] {0, 0} : new long[] {start, end};
    }

    /** One line for a recording that could not be read. */
    /** One event of {@link #counters}: its {@code name} and {@code count} fields and its start time. */
    public interface Counter {
        void accept(String name, long count, long startNanos);
    }

    /**
     * The events of {@code type} (counters such as {@code datadog.ProfilerCounter}: a {@code name}
     * and a {@code count}), in file order, read as {@code convert} reads ({@link JfrEvents}).
     */
    public static void counters(Path file, String type, Counter counter) throws IOException {
        JfrEvents.forEach(file, java.util.Collections.singleton(type), false,
                e -> counter.accept(e.getString("name"), e.getLong("count"), e.startNanos()));
    }

    public static String cannotRead(Path file, Exception e) {
        String message = e.getMessage() == null ? "" : e.getMessage().replace('\n', ' ');
        return "Cannot read " + file + " as a JFR recording: " + e.getClass().getSimpleName()
                + (message.isEmpty() ? "" : ": " + message);
    }

    /** The frame's class in Java form ({@code java.lang.String}); empty for class-less frames. */
    public static String className(RecordedMethod method) {
        if (method.getType() == null || method.getType().getName() == null) {
            return "";
        }
        // ddprof writes internal names (java/lang/String); show them the Java way.
        return method.getType().getName().replace('/', '.');
    }


    /**
     * The frame's class in Java form, with the names the JVM makes at run time made stable across
     * runs ({@link ClassNames}) unless {@code raw}.
     */
    public static String className(RecordedMethod method, boolean raw) {
        String cls = className(method);
        return raw ? cls : ClassNames.normalize(cls);
    }
}
