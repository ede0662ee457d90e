package com.datadoghq.profiler.tools;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import com.datadoghq.profiler.export.EventKind;
import com.datadoghq.profiler.export.JfrProfileReader;
import com.datadoghq.profiler.export.Profile;
import com.datadoghq.profiler.export.Recorded;


/**
 * {@code report FILE.jfr [--event KIND]}: a terminal summary of a ddprof recording.
 *
 * <p>Reads the sample events of every kind {@link EventKind} knows (cpu, wall, alloc, live,
 * malloc, socket; {@code --event} keeps one) as {@code convert} reads them ({@link JfrProfileReader}) and prints:
 * <ul>
 *   <li>first, one line per kind present: how many of its samples are <em>unwalked</em> (see
 *       {@link #isUnwalked}) and their share, the number of samples, their total value where it
 *       differs from the count, and the distinct threads sampled. Kinds are never pooled: wall
 *       samples of idle threads would hide how many CPU samples lost their stack;</li>
 *   <li>then, per kind, the top {@value #TOP} methods by <em>self</em> value (the method is the
 *       leaf frame), with their <em>total</em> value (the method is anywhere on the stack, counted
 *       once per sample), each also as a percentage of the kind's total value.</li>
 * </ul>
 * A sample's value is as in {@code convert} (docs/converters.md, "Events and values"): for cpu and wall
 * the event's {@code weight} (a CPU sample whose timer overran stands for several sampling
 * intervals), bytes for alloc, live and malloc, nanoseconds for socket.
 *
 * <p>{@code report FILE.jfr --memory} prints the profiler's native memory instead, from the
 * {@code datadog.ProfilerCounter} events of the file's last chunk (see {@link MemoryBreakdown}).
 */
public final class Report {
    /** Rows in each kind's table. */
    public static final int TOP = 15;

    static final String PROFILER_COUNTER = "datadog.ProfilerCounter";
    static final String MEMORY_OPTION = "--memory";
    static final String EVENT_OPTION = "--event";
    static final String USAGE = String.join("\n",
            "Usage: report FILE.jfr [--event " + EventKind.optionList("|") + "] [--raw-names]",
            "       report FILE.jfr --memory",
            "  (no option)     per event kind: the unwalked share of its samples first, then its top",
            "                  methods by self and total value",
            "  --event KIND    only that kind (the kinds and their events are convert's; see convert --help)",
            "  --raw-names     class names as recorded (by default a lambda's class is Demo$$Lambda, as",
            "                  convert writes it, so its rows add up across runs and instances)",
            "  --memory        the profiler's native memory (last chunk's counters): per category live,",
            "                  peak, avg, overhead, resident; malloc arenas; bounds of its RSS share",
            "Exit codes: 0 printed; 1 unreadable, empty or truncated file, or nothing of the asked kind;",
            "2 bad usage.");

    private Report() {
    }

    /** One method's values. */
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

    /** What {@link #read} found of one event kind. */
    public static final class KindSummary {
        public final EventKind kind;
        /** Sample events by JFR type name, in order of first appearance. */
        public final Map<String, Long> samplesByType = new LinkedHashMap<>();
        public long samples;
        /** Sum of the samples' values (see the class comment). */
        public long value;
        public long unwalked;
        /** Distinct sampled threads. */
        public int threads;
        /** All methods seen, by self value (descending), then total, then name. */
        public final List<Row> methods = new ArrayList<>();

        KindSummary(EventKind kind) {
            this.kind = kind;
        }

        public double unwalkedShare() {
            return samples == 0 ? 0 : (double) unwalked / samples;
        }
    }

    /** What {@link #read} found in a recording: one entry per kind present, in {@link EventKind} order. */
    public static final class Summary {
        public final Map<EventKind, KindSummary> kinds = new EnumMap<>(EventKind.class);
        /** The kind asked for, or null for all. */
        public final EventKind only;

        Summary(EventKind only) {
            this.only = only;
        }
    }

    /**
     * Entry point used by {@code Main}: {@code report FILE.jfr [--event KIND | --memory]}. Returns
     * the exit code: 0, 1 (unreadable file, no samples of the asked kind, or no memory counters
     * for {@code --memory}), 2 (usage: one line on stderr). {@code --help} prints the usage on
     * stdout.
     */
    public static int run(String... args) {
        return run(args, System.out, System.err);
    }

    static int run(String[] args, PrintStream out, PrintStream err) {
        boolean memory = false;
        boolean rawNames = false;
        EventKind only = null;
        String path = null;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("--help") || a.equals("-h")) {
                out.println(USAGE);
                return 0;
            } else if (MEMORY_OPTION.equals(a)) {
                memory = true;
            } else if (a.equals("--raw-names")) {
                rawNames = true;
            } else if (EVENT_OPTION.equals(a)) {
                if (i + 1 >= args.length) {
                    return usageError(err, "--event needs a value: " + EventKind.optionList(", "));
                }
                String v = args[++i];
                only = EventKind.ofOption(v);
                if (only == null) {
                    return usageError(err, "unknown event kind '" + v + "' (known: " + EventKind.optionList(", ") + ")");
                }
            } else if (a.startsWith("-") && a.length() > 1) {
                return usageError(err, "unknown option '" + a + "'");
            } else if (path == null) {
                path = a;
            } else {
                return usageError(err, "unexpected argument '" + a + "' (one recording at a time)");
            }
        }
        if (path == null) {
            return usageError(err, "no recording given");
        }
        if (memory && only != null) {
            return usageError(err, "--memory and --event do not go together");
        }
        Path file = Paths.get(path);
        if (RecordingCheck.checkOrSay(file, err) != 0) {
            return 1;
        }
        try {
            if (memory) {
                return printMemory(file, out, err);
            }
            Summary summary = read(file, only, rawNames);
            if (summary.kinds.isEmpty()) {
                err.println("No " + (only == null ? "sample" : only.option + " sample") + " events in " + file
                        + " (read: " + (only == null ? EventKind.allEventTypeNames() : only.eventTypeNames()) + ").");
                return 1;
            }
            print(summary, file, out);
            return 0;
        } catch (JfrProfileReader.FileFailure e) {
            err.println(Recorded.cannotRead(file, (Exception) e.getCause()));
            return 1;
        } catch (IOException | RuntimeException e) {
            err.println(Recorded.cannotRead(file, e));
            return 1;
        }
    }

    private static int usageError(PrintStream err, String problem) {
        err.println("report: " + problem + "; run 'report --help' for usage");
        return 2;
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
     * order. A chunk writes every counter once, and the reader returns the chunks in file order,
     * so a name seen again starts the next chunk's set.
     */
    public static List<CounterSet> readCounters(Path file) throws IOException {
        List<CounterSet> sets = new ArrayList<>();
        Recorded.counters(file, PROFILER_COUNTER, (name, count, nanos) -> {
            CounterSet current = sets.isEmpty() ? null : sets.get(sets.size() - 1);
            if (current == null || current.counters.containsKey(name)) {
                current = new CounterSet();
                current.time = Instant.ofEpochSecond(Math.floorDiv(nanos, 1_000_000_000L),
                        Math.floorMod(nanos, 1_000_000_000L));
                sets.add(current);
            }
            current.counters.put(name, count);
        });
        return sets;
    }

    /**
     * Chunks in {@code file}, counted from their headers. Only to tell the reader which chunk
     * the memory figures come from.
     */
    static int countChunks(Path file) throws IOException {
        return Recorded.chunkTimes(file).size();
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

    /** Reads the sample events of every kind in {@code file}. */
    public static Summary read(Path file) throws IOException {
        return read(file, null, false);
    }

    /**
     * Reads the sample events of {@code only} (null: of every kind) in {@code file}; class names
     * as recorded if {@code rawNames}, else made stable as the converters make them. Read as
     * {@code convert} reads (our JFR reader, {@link JfrProfileReader}): events aggregated by stack
     * and thread, each distinct stack's methods counted once for all its events.
     */
    public static Summary read(Path file, EventKind only, boolean rawNames) throws IOException {
        Summary summary = new Summary(only);
        Set<EventKind> kinds = only == null ? EnumSet.noneOf(EventKind.class) : EnumSet.of(only);
        Profile profile = new JfrProfileReader(kinds, null, null).rawNames(rawNames).read(file);
        List<Profile.Frame> frames = profile.frames();
        for (EventKind kind : profile.kinds()) {
            KindSummary k = new KindSummary(kind);
            summary.kinds.put(kind, k);
            k.samplesByType.putAll(profile.eventTypes(kind));
            Map<String, long[]> byMethod = new HashMap<>(); // method -> {self, total}
            Set<Object> threads = new HashSet<>();
            Set<String> onThisStack = new HashSet<>();
            for (Profile.Sample s : profile.samples(kind)) {
                k.samples += s.count;
                k.value += s.value;
                if (s.thread >= 0) {
                    threads.add(threadKey(profile.threads().get(s.thread)));
                }
                if (isUnwalked(s.stack, frames)) {
                    k.unwalked += s.count;
                }
                onThisStack.clear();
                for (int i = 0; i < s.stack.length; i++) {
                    String name = frames.get(s.stack[i]).name();
                    long[] c = byMethod.computeIfAbsent(name, x -> new long[2]);
                    if (i == 0) {
                        c[0] += s.value; // stack[0] is the leaf
                    }
                    if (onThisStack.add(name)) {
                        c[1] += s.value; // recursion counts once per sample
                    }
                }
            }
            k.threads = threads.size();
            for (Map.Entry<String, long[]> e : byMethod.entrySet()) {
                k.methods.add(new Row(e.getKey(), e.getValue()[0], e.getValue()[1]));
            }
            k.methods.sort(Comparator.comparingLong((Row r) -> -r.self)
                    .thenComparingLong(r -> -r.total)
                    .thenComparing(r -> r.method));
        }
        return summary;
    }

    /**
     * A sample is <em>unwalked</em> when the profiler could not walk or name its stack:
     * <ul>
     *   <li>it has no stack trace, or a stack trace with zero frames; or</li>
     *   <li>one of its frames has no method ({@code <no method>}), or a method without a class
     *       (the profiler's placeholder frames have an empty class name) whose name is empty,
     *       {@code unknown} (a frame the walker could not identify), {@code <unloaded>} (a method
     *       ID that no longer resolves), or starts with {@code [} (bracketed markers such as
     *       {@code [unknown]} or {@code [tid=N]}).</li>
     * </ul>
     * Named native frames (class-less, like {@code __GI_read}) count as walked. A Java method
     * that merely happens to be called {@code unknown} has a class and counts as walked.
     */
    static boolean isUnwalked(int[] stack, List<Profile.Frame> frames) {
        if (stack.length == 0) {
            return true;
        }
        for (int f : stack) {
            Profile.Frame frame = frames.get(f);
            if (frame.className.isEmpty()) {
                String name = frame.method;
                if (name.isEmpty() || name.equals("unknown") || name.equals("<unloaded>") || name.equals("<no method>")
                        || name.startsWith("[")) {
                    return true;
                }
            }
        }
        return false;
    }

    /** What tells threads apart: the OS thread id, else the Java thread id, else the name. */
    static Object threadKey(Profile.ThreadInfo thread) {
        if (thread.osId > 0) {
            return thread.osId;
        }
        if (thread.javaId > 0) {
            return "java:" + thread.javaId;
        }
        return "name:" + thread.name;
    }

    private static String percent(long part, long whole) {
        return String.format(Locale.ROOT, "%.1f%%", whole == 0 ? 0.0 : 100.0 * part / whole);
    }

    /** The unit a kind's values are in, as the tables' headers say it. */
    static String unit(EventKind kind) {
        return kind.isTime() ? "sampling intervals" : kind.unit;
    }

    /** Prints {@code summary} as described in the class comment: the per-kind lines, then the tables. */
    public static void print(Summary summary, Path file, PrintStream out) {
        if (summary.kinds.isEmpty()) {
            out.println("No " + (summary.only == null ? "sample" : summary.only.option + " sample") + " events in "
                    + file + ".");
            return;
        }
        int width = 0;
        for (EventKind k : summary.kinds.keySet()) {
            width = Math.max(width, k.option.length());
        }
        for (KindSummary k : summary.kinds.values()) {
            StringBuilder line = new StringBuilder();
            line.append(k.kind.option).append(':');
            for (int pad = k.kind.option.length(); pad < width; pad++) {
                line.append(' ');
            }
            line.append(" unwalked ").append(percent(k.unwalked, k.samples))
                    .append(" (").append(k.unwalked).append(" of ").append(k.samples).append(" samples)");
            if (k.value != k.samples) {
                line.append(" | ").append(k.value).append(' ').append(unit(k.kind));
            }
            if (k.samplesByType.size() > 1) {
                StringBuilder types = new StringBuilder();
                for (Map.Entry<String, Long> e : k.samplesByType.entrySet()) {
                    types.append(types.length() == 0 ? "" : ", ").append(e.getKey()).append(' ').append(e.getValue());
                }
                line.append(" | ").append(types);
            }
            line.append(" | threads ").append(k.threads);
            out.println(line);
        }
        for (KindSummary k : summary.kinds.values()) {
            out.println();
            out.println(k.kind.option + ": top methods by self value, in " + unit(k.kind) + " (total " + k.value + ")");
            printTable(k, out);
        }
    }

    private static void printTable(KindSummary k, PrintStream out) {
        List<Row> rows = k.methods.subList(0, Math.min(TOP, k.methods.size()));
        String[] header = {"#", "self", "self%", "total", "total%", "method"};
        List<String[]> cells = new ArrayList<>();
        for (int i = 0; i < rows.size(); i++) {
            Row r = rows.get(i);
            cells.add(new String[] {
                String.valueOf(i + 1),
                String.valueOf(r.self), percent(r.self, k.value),
                String.valueOf(r.total), percent(r.total, k.value),
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
        if (k.methods.size() > rows.size()) {
            out.println("(" + (k.methods.size() - rows.size()) + " more methods)");
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
