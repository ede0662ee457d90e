package com.datadoghq.profiler.tools.convert;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.Writer;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.datadoghq.profiler.tools.RecordingCheck;
import com.datadoghq.profiler.export.EventKind;
import com.datadoghq.profiler.export.JfrProfileReader;
import com.datadoghq.profiler.export.Otlp;
import com.datadoghq.profiler.export.Profile;
import com.datadoghq.profiler.export.Progress;
import com.datadoghq.profiler.export.Recorded;
import com.datadoghq.profiler.export.StackFilter;

/**
 * {@code convert --to collapsed|pprof|otlp|html|heatmap [--event cpu|wall|alloc|live|malloc|socket] [--threads]
 * [--leak] [--raw-names] [--simple] [--lines] [--bci] [--include RE] [--exclude RE] [--from T] [--to T] [--diff BASE.jfr] rec.jfr [rec.jfr...] [out]}: see
 * {@link #USAGE} and docs/converters.md.
 */
public final class Convert {
    static final String USAGE = String.join("\n",
            "Usage: convert --to collapsed|pprof|otlp|html|heatmap [--event " + EventKind.optionList("|") + "]",
            "               [--threads] [--leak] [--raw-names] [--simple] [--lines] [--bci] [--include RE]",
            "               [--exclude RE] [--state S[,S]] [--from T] [--to T] [--diff BASE.jfr]",
            "               rec.jfr [rec.jfr...] [out]",
            "  --to FORMAT     collapsed: 'frame;frame;frame value' lines (flame-graph tools' input)",
            "                  pprof:     gzipped profile.proto",
            "                  otlp:      an OTLP ExportProfilesServiceRequest (protobuf); out may be an",
            "                             http:// URL of an OTLP/HTTP receiver to POST it to",
            "                  html:      a self-contained interactive flame graph",
            "                  heatmap:   the flame graph under the recording's time as a grid (a column a",
            "                             second, 10 cells of 100 ms down it); selecting cells draws theirs",
            "  --event KIND    cpu (datadog.ExecutionSample, jdk.ExecutionSample), wall (datadog.MethodSample),",
            "                  alloc (datadog.ObjectSample), live (datadog.HeapLiveObject), malloc",
            "                  (datadog.NativeMemoryAllocation), socket (datadog.NativeSocketEvent). Default: the",
            "                  first of these the recording holds; otlp: all of them, one profile each",
            "  --threads       split stacks by thread (collapsed, html, heatmap)",
            "  --leak          malloc only: the native allocations not freed by the end of the recording",
            "  --raw-names     class names as recorded: by default a lambda's class is Demo$$Lambda and a",
            "                  hidden class loses its address (Demo$$Lambda$6/0x7fd7... differs run to run)",
            "  --simple        class names without their package: HashMap.get (collapsed, html, heatmap,",
            "                  pprof's function names)",
            "  --lines         Java frames with their line number: Foo.bar:42 (collapsed, html, heatmap;",
            "                  pprof and otlp always carry lines in their locations)",
            "  --bci           Java frames with their bytecode index: Foo.bar@7, after the line with",
            "                  --lines (collapsed, html, heatmap)",
            "  --dot           accepted for async-profiler's converter's command lines: names are always dotted",
            "  --include RE    keep only samples with a frame whose name (pkg.Class.method, or a native",
            "                  symbol) contains a match of the regular expression RE; repeatable: all must match",
            "  --exclude RE    drop samples with any frame matching RE; repeatable",
            "  --state S[,S]   cpu and wall: keep samples taken in these thread states (runnable, sleeping,",
            "                  parked, ...: as recorded, case and a STATE_ prefix aside)",
            "  --from T, --to T  keep events in [from, to): T is an ISO instant (2026-12-01T12:00:00Z)",
            "                  or an offset from the recording's start (30s, 1500ms, 2m; bare = seconds),",
            "                  negative from its end (-10s)",
            "  --diff BASE.jfr html only: a differential flame graph, each box coloured by how its share of",
            "                  the whole changed against BASE (red: larger now, blue: smaller)",
            "  rec.jfr...      one or more recordings, read as one profile (e.g. a service's dumps)",
            "  out             default: the first rec.jfr with the extension .collapsed, .pb.gz, .otlp.pb, .html",
            "                  or .heatmap.html; '-' writes to standard output",
            "Exit codes: 0 written; 1 unreadable, empty or truncated file, nothing of the asked kind, or a",
            "failed write or POST; 2 bad usage.");

    enum Format {
        COLLAPSED(".collapsed"), PPROF(".pb.gz"), OTLP(".otlp.pb"), HTML(".html"), HEATMAP(".heatmap.html");

        final String extension;

        Format(String extension) {
            this.extension = extension;
        }

        static String names() {
            StringBuilder b = new StringBuilder();
            for (Format f : values()) {
                b.append(b.length() == 0 ? "" : ", ").append(f.name().toLowerCase(Locale.ROOT));
            }
            return b.toString();
        }

        static Format of(String s) {
            for (Format f : values()) {
                if (f.name().equalsIgnoreCase(s)) {
                    return f;
                }
            }
            return null;
        }
    }

    private static final Pattern OFFSET = Pattern.compile("(-?)(\\d+)(ns|us|ms|s|m|h)?");

    private Convert() {
    }

    /** Entry point from {@code Main}. Exit codes: 0, 1 (unreadable, nothing to convert, write failed), 2 (usage). */
    public static int run(String... args) {
        return run(args, System.out, System.err);
    }

    /**
     * {@link #run} as the command of its own JVM ({@code Main.main}, which exits after it): may also
     * set how that JVM compiles ({@link JitPolicy}).
     */
    public static int runOwnJvm(String... args) {
        return run(args, System.out, System.err, true);
    }

    static int run(String[] args, PrintStream stdout, PrintStream err) {
        return run(args, stdout, err, false);
    }

    private static int run(String[] args, PrintStream stdout, PrintStream err, boolean ownJvm) {
        if (args.length == 0) {
            err.println(USAGE);
            return 2;
        }
        Format format = null;
        EventKind kind = null;
        boolean threads = false;
        boolean leak = false;
        boolean rawNames = false;
        boolean simple = false;
        boolean lines = false;
        boolean bci = false;
        StackFilter filter = StackFilter.ALL;
        Set<String> states = null;
        String from = null;
        String to = null;
        List<String> positional = new ArrayList<>();
        String diff = null;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            switch (a) {
                case "--help":
                case "-h":
                    stdout.println(USAGE);
                    return 0;
                case "--to":
                case "--event":
                case "--from":
                    if (i + 1 >= args.length) {
                        return usage(err, a + " needs a value");
                    }
                    String v = args[++i];
                    if (a.equals("--event")) {
                        kind = EventKind.ofOption(v);
                        if (kind == null) {
                            return usage(err, "unknown event kind '" + v + "' (known: " + EventKind.optionList(", ")
                                    + ")");
                        }
                    } else if (a.equals("--from")) {
                        from = v;
                    } else if (Format.of(v) != null && format == null) {
                        format = Format.of(v); // --to FORMAT; a second --to is the time
                    } else if (format == null && !looksLikeTime(v)) {
                        return usage(err, "unknown format '" + v + "' (known: " + Format.names() + ")");
                    } else {
                        to = v;
                    }
                    break;
                case "--threads":
                    threads = true;
                    break;
                case "--leak":
                    leak = true;
                    break;
                case "--raw-names":
                    rawNames = true;
                    break;
                case "--simple":
                    simple = true;
                    break;
                case "--lines":
                    lines = true;
                    break;
                case "--bci":
                    bci = true;
                    break;
                case "--dot":
                    break; // async-profiler's converter prints slashes without it; ours never does
                case "--state":
                    if (i + 1 >= args.length || args[i + 1].trim().isEmpty()) {
                        return usage(err, "--state needs thread states (e.g. runnable or runnable,sleeping)");
                    }
                    states = new java.util.HashSet<>(java.util.Arrays.asList(args[++i].split(",")));
                    break;
                case "--diff":
                    if (i + 1 >= args.length) {
                        return usage(err, "--diff needs the recording to compare against");
                    }
                    diff = args[++i];
                    break;
                case "--include":
                case "--exclude":
                    if (i + 1 >= args.length) {
                        return usage(err, a + " needs a regular expression");
                    }
                    try {
                        filter = a.equals("--include") ? filter.including(args[++i]) : filter.excluding(args[++i]);
                    } catch (IllegalArgumentException e) {
                        return usage(err, e.getMessage());
                    }
                    break;
                default:
                    if (a.startsWith("--") || (a.startsWith("-") && a.length() > 1)) {
                        return usage(err, "unknown option '" + a + "'");
                    } else {
                        positional.add(a);
                    }
            }
        }
        if (format == null) {
            return usage(err, "no output format: --to FORMAT is required (known: " + Format.names() + ")");
        }
        if (positional.isEmpty()) {
            return usage(err, "no recording given");
        }
        // The recordings, then at most one output: an argument after the first is another recording
        // when it is a file that starts as one, else the output, which must come last.
        List<String> inputs = new ArrayList<>();
        inputs.add(positional.get(0));
        String output = null;
        for (int p = 1; p < positional.size(); p++) {
            String a = positional.get(p);
            if (output != null) {
                return usage(err, "unexpected argument '" + a + "' (recordings, then one output)");
            }
            if (RecordingCheck.startsAsRecording(Paths.get(a))) {
                inputs.add(a);
            } else if (a.toLowerCase(Locale.ROOT).endsWith(".jfr")) {
                return usage(err, "'" + a + "' is not a recording to read (no such file?), and a converted profile"
                        + " is not written to a .jfr name");
            } else {
                output = a;
            }
        }
        if (leak) {
            if (kind != null && kind != EventKind.MALLOC) {
                return usage(err, "--leak applies to --event malloc only");
            }
            kind = EventKind.MALLOC;
        }
        if (bci && (format == Format.PPROF || format == Format.OTLP)) {
            return usage(err, "--bci names frames in collapsed, html and heatmap; " + format.name().toLowerCase(Locale.ROOT)
                    + " has no place for a bytecode index");
        }
        if (simple && format == Format.OTLP) {
            return usage(err, "--simple applies to collapsed, html, heatmap and pprof; otlp names functions in full");
        }
        if (diff != null && format != Format.HTML) {
            return usage(err, "--diff draws a differential flame graph: it needs --to html");
        }
        List<Path> in = new ArrayList<>();
        for (String input : inputs) {
            Path p = Paths.get(input);
            int problem = RecordingCheck.checkOrSay(p, err);
            if (problem != 0) {
                return problem;
            }
            in.add(p);
        }
        Path basePath = diff == null ? null : Paths.get(diff);
        if (basePath != null) {
            int problem = RecordingCheck.checkOrSay(basePath, err);
            if (problem != 0) {
                return problem;
            }
        }
        if (ownJvm) {
            JitPolicy.forConversionOf(in);
        }
        Profile profile;
        Profile base = null;
        try {
            long[] span = Recorded.span(in);
            Set<EventKind> kinds = kind == null ? Collections.emptySet() : EnumSet.of(kind);
            long bucketNanos = format == Format.HEATMAP ? Heatmap.bucketNanos(span[1] - span[0]) : 0;
            // Collapsed stacks without threads show nothing of a sample but its stack and value.
            boolean stacksOnly = format == Format.COLLAPSED && !threads;
            profile = reader(kinds, from, to, span, rawNames, filter, states, leak, err).bytecodeIndexes(bci)
                    .timeBuckets(bucketNanos).stacksOnly(stacksOnly).read(in);
            if (basePath != null) {
                // The base's own span: an offset selects the same part of each run.
                long[] baseSpan = Recorded.span(Collections.singletonList(basePath));
                base = reader(kinds, from, to, baseSpan, rawNames, filter, states, leak, err).read(basePath);
            }
        } catch (IllegalArgumentException e) {
            return usage(err, e.getMessage());
        } catch (JfrProfileReader.FileFailure e) {
            err.println(Recorded.cannotRead(e.file, (Exception) e.getCause()));
            return 1;
        } catch (IOException | RuntimeException e) {
            err.println(Recorded.cannotRead(in.get(0), e));
            return 1;
        }
        String input = inputs.get(0);
        String names = in.size() == 1 ? input : in.size() + " recordings (" + String.join(", ", inputs) + ")";
        List<EventKind> present = profile.kinds();
        if (present.isEmpty()) {
            err.println("No " + (kind == null ? "sample" : kind.option + " sample") + " events"
                    + (filter.keepsEverything() ? "" : " that --include/--exclude keep")
                    + (states == null ? "" : " in the thread states " + String.join(",", states))
                    + (from != null || to != null ? " in the selected time range" : "") + " in " + names
                    + " (read: " + (kind == null ? EventKind.allEventTypeNames() : kind.eventTypeNames()) + ").");
            return 1;
        }
        EventKind chosen = kind != null ? kind : present.get(0);
        String target = output != null ? output : defaultOutput(input, format.extension);
        FrameNames frameNames = new FrameNames(simple, lines, bci);
        try {
            if (format == Format.OTLP && (target.startsWith("http://") || target.startsWith("https://"))) {
                byte[] request = Otlp.encode(profile, kind);
                StringBuilder body = new StringBuilder();
                int status = Otlp.post(request, new URL(target), body);
                if (status / 100 != 2) {
                    err.println("The OTLP receiver at " + target + " answered HTTP " + status
                            + (body.length() > 0 ? ": " + body : ""));
                    return 1;
                }
                stdout.println("Sent " + request.length + " bytes (" + summary(profile, kind) + ") to " + target
                        + ": HTTP " + status);
                return 0;
            }
            if (target.equals("-")) {
                write(profile, base, format, chosen, kind, threads, frameNames, stdout);
                stdout.flush();
            } else {
                Path out = Paths.get(target);
                try (OutputStream os = new BufferedOutputStream(Files.newOutputStream(out))) {
                    write(profile, base, format, chosen, kind, threads, frameNames, os);
                }
                stdout.println("Wrote " + out + " (" + (format == Format.OTLP ? summary(profile, kind)
                        : summary(profile, chosen)) + ")");
            }
            return 0;
        } catch (IOException | RuntimeException e) {
            err.println("Cannot write " + target + ": " + e);
            return 1;
        }
    }

    private static void write(Profile profile, Profile base, Format format, EventKind chosen, EventKind requested,
                              boolean threads, FrameNames names, OutputStream os) throws IOException {
        switch (format) {
            case COLLAPSED: {
                Writer w = new OutputStreamWriter(os, StandardCharsets.UTF_8);
                Collapsed.write(profile, chosen, threads, names, w);
                w.flush();
                break;
            }
            case PPROF:
                Pprof.write(profile, chosen, names.simple, os);
                break;
            case OTLP:
                os.write(Otlp.encode(profile, requested));
                break;
            case HTML:
            case HEATMAP: {
                Writer w = new OutputStreamWriter(os, StandardCharsets.UTF_8);
                FlameGraph.write(profile, base, chosen, threads, names, format == Format.HEATMAP, w);
                w.flush();
                break;
            }
            default:
                throw new IllegalStateException(format.name());
        }
    }

    private static String summary(Profile profile, EventKind only) {
        StringBuilder b = new StringBuilder();
        for (EventKind k : profile.kinds()) {
            if (only != null && k != only) {
                continue;
            }
            b.append(b.length() == 0 ? "" : ", ").append(k.option).append(": ")
                    .append(profile.totalCount(k)).append(" samples");
        }
        return b.toString();
    }

    static String defaultOutput(String input, String extension) {
        String base = input.toLowerCase(Locale.ROOT).endsWith(".jfr") ? input.substring(0, input.length() - 4) : input;
        return base + extension;
    }

    private static JfrProfileReader reader(Set<EventKind> kinds, String from, String to, long[] span, boolean rawNames,
                                           StackFilter filter, Set<String> states, boolean leak, PrintStream err) {
        Instant fromTime = from == null ? null : time(from, span);
        Instant toTime = to == null ? null : time(to, span);
        JfrProfileReader reader = new JfrProfileReader(kinds, fromTime, toTime).rawNames(rawNames).filter(filter);
        if (Progress.onTerminal()) {
            reader.progress(err);
        }
        if (states != null) {
            reader.states(states);
        }
        return leak ? reader.leaksOnly() : reader;
    }

    /** Whether a --to value is meant as a time (an offset or an ISO instant) rather than a format. */
    static boolean looksLikeTime(String value) {
        return OFFSET.matcher(value).matches() || (!value.isEmpty() && Character.isDigit(value.charAt(0)));
    }

    /** A --from/--to value: an ISO instant, or an offset from the start (negative: from the end). */
    static Instant time(String value, long[] span) {
        Matcher m = OFFSET.matcher(value);
        if (m.matches()) {
            long n = Long.parseLong(m.group(2));
            String unit = m.group(3) == null ? "s" : m.group(3);
            long nanos;
            switch (unit) {
                case "ns":
                    nanos = n;
                    break;
                case "us":
                    nanos = n * 1_000L;
                    break;
                case "ms":
                    nanos = n * 1_000_000L;
                    break;
                case "m":
                    nanos = n * 60_000_000_000L;
                    break;
                case "h":
                    nanos = n * 3_600_000_000_000L;
                    break;
                default:
                    nanos = n * 1_000_000_000L;
            }
            long at = m.group(1).isEmpty() ? span[0] + nanos : span[1] - nanos;
            return Instant.ofEpochSecond(Math.floorDiv(at, 1_000_000_000L), Math.floorMod(at, 1_000_000_000L));
        }
        try {
            return Instant.parse(value);
        } catch (DateTimeParseException e) {
            throw new IllegalArgumentException("not a time: " + value
                    + " (an ISO instant such as 2026-12-01T12:00:00Z, or an offset such as 30s, 1500ms, -10s)");
        }
    }

    /** A usage error: one line naming the problem, exit code 2. */
    private static int usage(PrintStream err, String problem) {
        err.println("convert: " + problem + "; run 'convert --help' for usage");
        return 2;
    }
}
