package com.datadoghq.profiler.tools;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedMethod;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordedThread;
import jdk.jfr.consumer.RecordingFile;

/**
 * {@code report FILE.jfr}: a terminal summary of a ddprof recording.
 *
 * <p>Reads every {@code datadog.ExecutionSample} (CPU) and {@code datadog.MethodSample} (wall)
 * event with {@link RecordingFile} and prints:
 * <ul>
 *   <li>a first line with the number of samples, how many of them are <em>unwalked</em> (see
 *       {@link #isUnwalked}) and the number of distinct threads sampled;</li>
 *   <li>the top {@value #TOP} methods by <em>self</em> samples (the method is the leaf frame), with
 *       their <em>total</em> samples (the method is anywhere on the stack, counted once per
 *       sample), each also as a percentage of all samples.</li>
 * </ul>
 * Method counts and shares are weighted: an event counts {@code weight} times (a CPU sample
 * whose timer overran stands for several sampling intervals); the first line gives both the
 * number of events and, where it differs, their total weight.
 *
 * <p>{@code report FILE.jfr --memory} prints the profiler's native memory instead, from the
 * {@code datadog.ProfilerCounter} events of the file's last chunk (see {@link MemoryBreakdown}).
 */
public final class Report {
    /** Rows in the table. */
    public static final int TOP = 15;

    static final String EXECUTION_SAMPLE = "datadog.ExecutionSample";
    static final String METHOD_SAMPLE = "datadog.MethodSample";
    static final String PROFILER_COUNTER = "datadog.ProfilerCounter";
    static final String MEMORY_OPTION = "--memory";
    static final String USAGE = "Usage: report FILE.jfr [--memory]";

    private Report() {
    }

    /** One method's counts. */
    public static final class Row {
        public final String method;
        public final long self;
        public final long total;

        Row(String method, long self, long total) {
            this.method = method;
            this.self = self;
            this.total = total;
        }
    }

    /** What {@link #read(Path)} found in a recording. */
    public static final class Summary {
        /** Sample events by type name, in order of first appearance. */
        public final Map<String, Long> samplesByType = new LinkedHashMap<>();
        public long samples;
        /** Sum of the sample events' {@code weight} (1 each where the event has none). */
        public long weight;
        public long unwalked;
        /** Distinct sampled threads. */
        public int threads;
        /** All methods seen, by self samples (descending), then total, then name. */
        public final List<Row> methods = new ArrayList<>();

        public double unwalkedShare() {
            return samples == 0 ? 0 : (double) unwalked / samples;
        }
    }

    /**
     * Entry point used by {@code Main}: {@code report FILE.jfr [--memory]}. Returns the exit
     * code: 0, 1 (unreadable file, or no memory counters for {@code --memory}), 2 (usage).
     */
    public static int run(String... args) {
        boolean memory = false;
        String path = null;
        for (String a : args) {
            if (MEMORY_OPTION.equals(a)) {
                memory = true;
            } else if (path == null && !a.startsWith("--")) {
                path = a;
            } else {
                System.err.println(USAGE);
                return 2;
            }
        }
        if (path == null) {
            System.err.println(USAGE);
            return 2;
        }
        Path file = Paths.get(path);
        if (!Files.isRegularFile(file)) {
            System.err.println("No such file: " + file);
            return 1;
        }
        try {
            if (memory) {
                return printMemory(file, System.out, System.err);
            }
            print(read(file), file, System.out);
            return 0;
        } catch (IOException | RuntimeException e) {
            System.err.println("Cannot read " + file + " as a JFR recording: " + e);
            return 1;
        }
    }

    /** One chunk's {@code datadog.ProfilerCounter} events. */
    public static final class CounterSet {
        /** Counter name -> value, in the order the chunk wrote them. */
        public final Map<String, Long> counters = new LinkedHashMap<>();
        /** The events' time: the end of the chunk, when the native side writes them. */
        public Instant time;
    }

    /**
     * The {@code datadog.ProfilerCounter} events of {@code file}, one set per chunk, in file
     * order. A chunk writes every counter once, and {@link RecordingFile} returns the chunks in
     * file order, so a name seen again starts the next chunk's set.
     */
    public static List<CounterSet> readCounters(Path file) throws IOException {
        List<CounterSet> sets = new ArrayList<>();
        CounterSet current = null;
        try (RecordingFile recording = new RecordingFile(file)) {
            while (recording.hasMoreEvents()) {
                RecordedEvent event = recording.readEvent();
                if (!PROFILER_COUNTER.equals(event.getEventType().getName())) {
                    continue;
                }
                String name = event.getString("name");
                if (current == null || current.counters.containsKey(name)) {
                    current = new CounterSet();
                    current.time = event.getStartTime();
                    sets.add(current);
                }
                current.counters.put(name, event.getLong("count"));
            }
        }
        return sets;
    }

    /**
     * Chunks in {@code file}, counted from their headers. Only to tell the reader which chunk
     * the memory figures come from.
     */
    static int countChunks(Path file) throws IOException {
        return chunkTimes(file).size();
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

    /** {@code --memory}: the breakdown of the last chunk that carries memory counters. */
    static int printMemory(Path file, PrintStream out, PrintStream err) throws IOException {
        List<CounterSet> sets = readCounters(file);
        int last = -1;
        for (int i = 0; i < sets.size(); i++) {
            if (MemoryBreakdown.present(sets.get(i).counters)) {
                last = i;
            }
        }
        if (last < 0) {
            err.println("No native-memory counters (" + MemoryBreakdown.LIVE + ") among the "
                    + PROFILER_COUNTER + " events of " + file + ".");
            return 1;
        }
        MemoryBreakdown breakdown;
        try {
            breakdown = MemoryBreakdown.of(sets.get(last).counters);
        } catch (IllegalArgumentException e) {
            err.println("Incomplete native-memory counters in " + file + ": " + e.getMessage());
            return 1;
        }
        int chunks = countChunks(file);
        String which = "chunk " + (last + 1) + " of " + Math.max(chunks, sets.size());
        if (last != sets.size() - 1 || sets.size() != chunks) {
            // A chunk without counters (an older writer, a cut file): say what was used.
            which += ", the last with memory counters; " + sets.size() + " of the file's " + chunks
                    + " chunks have counters";
        }
        breakdown.print(out, "from the counters of the last chunk (" + which + ", written at "
                + sets.get(last).time + "):");
        return 0;
    }

    /** Reads the sample events of {@code file}. */
    public static Summary read(Path file) throws IOException {
        Summary summary = new Summary();
        Map<String, long[]> counts = new HashMap<>(); // method -> {self, total}
        Set<Object> threads = new HashSet<>();
        Set<String> onThisStack = new HashSet<>();
        try (RecordingFile recording = new RecordingFile(file)) {
            while (recording.hasMoreEvents()) {
                RecordedEvent event = recording.readEvent();
                String type = event.getEventType().getName();
                if (!EXECUTION_SAMPLE.equals(type) && !METHOD_SAMPLE.equals(type)) {
                    continue;
                }
                summary.samples++;
                long weight = weightOf(event);
                summary.weight += weight;
                summary.samplesByType.merge(type, 1L, Long::sum);
                Object thread = threadKey(event);
                if (thread != null) {
                    threads.add(thread);
                }
                RecordedStackTrace stack = event.getStackTrace();
                List<RecordedFrame> frames = stack == null ? Collections.emptyList() : stack.getFrames();
                if (isUnwalked(frames)) {
                    summary.unwalked++;
                }
                onThisStack.clear();
                for (int i = 0; i < frames.size(); i++) {
                    String name = methodName(frames.get(i));
                    long[] c = counts.computeIfAbsent(name, k -> new long[2]);
                    if (i == 0) {
                        c[0] += weight; // frames[0] is the leaf
                    }
                    if (onThisStack.add(name)) {
                        c[1] += weight; // recursion counts once per sample
                    }
                }
            }
        }
        summary.threads = threads.size();
        for (Map.Entry<String, long[]> e : counts.entrySet()) {
            summary.methods.add(new Row(e.getKey(), e.getValue()[0], e.getValue()[1]));
        }
        summary.methods.sort(Comparator.comparingLong((Row r) -> -r.self)
                .thenComparingLong(r -> -r.total)
                .thenComparing(r -> r.method));
        return summary;
    }

    /**
     * A sample is <em>unwalked</em> when the profiler could not walk or name its stack:
     * <ul>
     *   <li>it has no stack trace, or a stack trace with zero frames; or</li>
     *   <li>one of its frames has no method, or a method without a class (the profiler's
     *       placeholder frames have an empty class name) whose name is empty, {@code unknown}
     *       (a frame the walker could not identify), {@code <unloaded>} (a method ID that no
     *       longer resolves), or starts with {@code [} (bracketed markers such as
     *       {@code [unknown]} or {@code [tid=N]}).</li>
     * </ul>
     * Named native frames (class-less, like {@code __GI_read}) count as walked. A Java method
     * that merely happens to be called {@code unknown} has a class and counts as walked.
     */
    static boolean isUnwalked(List<RecordedFrame> frames) {
        if (frames.isEmpty()) {
            return true;
        }
        for (RecordedFrame frame : frames) {
            RecordedMethod method = frame.getMethod();
            if (method == null) {
                return true;
            }
            if (className(method).isEmpty()) {
                String name = method.getName();
                if (name == null || name.isEmpty() || name.equals("unknown") || name.equals("<unloaded>")
                        || name.startsWith("[")) {
                    return true;
                }
            }
        }
        return false;
    }

    /** The frame's class in Java form ({@code java.lang.String}); empty for class-less frames. */
    public static String className(RecordedMethod method) {
        if (method.getType() == null || method.getType().getName() == null) {
            return "";
        }
        // ddprof writes internal names (java/lang/String); show them the Java way.
        return method.getType().getName().replace('/', '.');
    }

    /** {@code pkg.Class.method}, or just the name for class-less (native, placeholder) frames. */
    static String methodName(RecordedFrame frame) {
        RecordedMethod method = frame.getMethod();
        if (method == null) {
            return "<no method>";
        }
        String cls = className(method);
        String name = method.getName() == null ? "" : method.getName();
        return cls.isEmpty() ? name : cls + "." + name;
    }

    static Object threadKey(RecordedEvent event) {
        RecordedThread thread;
        try {
            thread = event.getThread();
        } catch (RuntimeException e) {
            return null;
        }
        if (thread == null) {
            return null;
        }
        if (thread.getOSThreadId() > 0) {
            return thread.getOSThreadId();
        }
        if (thread.getJavaThreadId() > 0) {
            return "java:" + thread.getJavaThreadId();
        }
        return "name:" + thread.getOSName();
    }

    private static String percent(long part, long whole) {
        return String.format(Locale.ROOT, "%.1f%%", whole == 0 ? 0.0 : 100.0 * part / whole);
    }

    /** The event's {@code weight} field, 1 if it has none or a non-positive one. */
    public static long weightOf(RecordedEvent event) {
        if (!event.hasField("weight")) {
            return 1;
        }
        long w = event.getLong("weight");
        return w > 0 ? w : 1;
    }

    /** Prints {@code summary} as the two-part report described in the class comment. */
    public static void print(Summary summary, Path file, PrintStream out) {
        StringBuilder first = new StringBuilder();
        first.append("Samples: ").append(summary.samples);
        if (summary.weight != summary.samples) {
            first.append(" (weight ").append(summary.weight).append(')');
        }
        if (summary.samplesByType.size() > 1) {
            StringBuilder kinds = new StringBuilder();
            for (Map.Entry<String, Long> e : summary.samplesByType.entrySet()) {
                kinds.append(kinds.length() == 0 ? "" : ", ").append(e.getKey()).append(' ').append(e.getValue());
            }
            first.append(" (").append(kinds).append(')');
        }
        first.append(" | unwalked: ").append(summary.unwalked)
                .append(" (").append(percent(summary.unwalked, summary.samples)).append(')')
                .append(" | threads: ").append(summary.threads);
        out.println(first);
        if (summary.samples == 0) {
            out.println("No " + EXECUTION_SAMPLE + " or " + METHOD_SAMPLE + " events in " + file + ".");
            return;
        }
        out.println();

        List<Row> rows = summary.methods.subList(0, Math.min(TOP, summary.methods.size()));
        String[] header = {"#", "self", "self%", "total", "total%", "method"};
        List<String[]> cells = new ArrayList<>();
        for (int i = 0; i < rows.size(); i++) {
            Row r = rows.get(i);
            cells.add(new String[] {
                String.valueOf(i + 1),
                String.valueOf(r.self), percent(r.self, summary.weight),
                String.valueOf(r.total), percent(r.total, summary.weight),
                r.method});
        }
        int[] width = new int[header.length];
        for (int c = 0; c < header.length; c++) {
            width[c] = header[c].length();
            for (String[] row : cells) {
                width[c] = Math.max(width[c], row[c].length());
            }
        }
        out.println(formatRow(header, width));
        for (String[] row : cells) {
            out.println(formatRow(row, width));
        }
        if (summary.methods.size() > rows.size()) {
            out.println("(" + (summary.methods.size() - rows.size()) + " more methods)");
        }
    }

    // Numbers right-aligned, the method name (last column) left-aligned and never padded.
    private static String formatRow(String[] row, int[] width) {
        StringBuilder line = new StringBuilder();
        for (int c = 0; c < row.length; c++) {
            if (c > 0) {
                line.append("  ");
            }
            if (c == row.length - 1) {
                line.append(row[c]);
            } else {
                for (int pad = row[c].length(); pad < width[c]; pad++) {
                    line.append(' ');
                }
                line.append(row[c]);
            }
        }
        return line.toString();
    }
}
