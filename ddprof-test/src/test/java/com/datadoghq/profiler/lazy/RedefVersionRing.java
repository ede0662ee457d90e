package com.datadoghq.profiler.lazy;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;

import com.datadoghq.profiler.JavaProfiler;

/**
 * One worker thread's record of which version of {@link RedefVersionTarget#hot} it ran when, for
 * {@link RedefinedFramesTest}: every helper call of {@code hot} is bracketed by two
 * {@link JavaProfiler#getCurrentTicks()} reads made by the caller (the clock of the samples'
 * timestamps), and the helper called tells the version ({@code helperA}: 1, {@code helperB}: 2).
 * Consecutive calls of the same version merge into one segment [first start, last end], so a
 * thread has about one segment per redefinition it saw. Only its own thread writes it.
 */
public final class RedefVersionRing {
    static final int CAPACITY = 1 << 16;
    private static JavaProfiler profiler;

    final String thread;
    /** Set by the helper just called: 1 or 2. */
    int version;
    private final int[] versions = new int[CAPACITY];
    private final long[] starts = new long[CAPACITY];
    private final long[] ends = new long[CAPACITY];
    private final long[] calls = new long[CAPACITY];
    private int size;
    boolean overflow;
    final long[] callsOf = new long[3];

    RedefVersionRing(String thread) {
        this.thread = thread;
    }

    static void init(JavaProfiler p) {
        profiler = p;
    }

    static long ticks() {
        return profiler.getCurrentTicks();
    }

    /** The helper call that started at {@code start} has returned at {@code end} and set {@link #version}. */
    void record(long start, long end) {
        int v = version;
        version = 0;
        callsOf[v]++;
        if (size > 0 && versions[size - 1] == v) {
            ends[size - 1] = end;
            calls[size - 1]++;
            return;
        }
        if (size == CAPACITY) {
            overflow = true;
            return;
        }
        versions[size] = v;
        starts[size] = start;
        ends[size] = end;
        calls[size] = 1;
        size++;
    }

    /** Lines {@code version start end calls}, oldest first. */
    void write(Path file) throws IOException {
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(file))) {
            for (int i = 0; i < size; i++) {
                w.println(versions[i] + " " + starts[i] + " " + ends[i] + " " + calls[i]);
            }
        }
    }
}
