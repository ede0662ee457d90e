package com.datadoghq.profiler.tools.convert;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import com.datadoghq.profiler.export.EventKind;
import com.datadoghq.profiler.export.Profile;
import com.datadoghq.profiler.export.StringTable;

/**
 * A self-contained HTML flame graph: the page ({@code flamegraph.html} beside this class: its
 * CSS and script, no network fetches) with the profile embedded as JSON in
 * {@code <script id="profile-data" type="application/json">}:
 *
 * <pre>
 * { "title": "...", "kind": "cpu", "unit": "samples", "total": N, "threadsDefault": false,
 *   "names":   ["pkg.Class.method", ...],
 *   "types":   ["JIT compiled", ...],               frame types (the colour legend)
 *   "frames":  [[nameIndex, typeIndex], ...],
 *   "threads": ["main tid=123", ...],
 *   "stacks":  [[threadIndex, value, frame, frame, ...], ...]   frames root first; thread -1 = none
 * }
 * </pre>
 *
 * With a base profile ({@code convert --diff BASE}) the data also holds
 * {@code "base": {"total": N, "threads": [...], "stacks": [...]}} over the same names, types and frames,
 * and the page colours each box by how its share of the whole changed against the base's same
 * path (red: a larger share now, blue: a smaller one; white: unchanged) instead of by frame type.
 *
 * <p>The values are {@link Collapsed}'s, so the page shows the same totals as {@code report} and
 * the collapsed output. The page merges stacks into a tree (by thread first when "per thread"
 * is ticked), draws frames as boxes coloured by frame type (flame or icicle orientation),
 * zooms on click and highlights frames matching a search; the URL fragment
 * {@code #search=REGEX&threads=1&icicle=1} sets these on load.
 */
public final class FlameGraph {
    static final String TEMPLATE = "flamegraph.html";

    private FlameGraph() {
    }

    public static void write(Profile profile, EventKind kind, boolean threads, Writer out) throws IOException {
        write(profile, null, kind, threads, out);
    }

    /** The page; with {@code base} non-null, a differential flame graph against it. */
    public static void write(Profile profile, Profile base, EventKind kind, boolean threads, Writer out)
            throws IOException {
        write(profile, base, kind, threads, FrameNames.DEFAULT, false, out);
    }

    /**
     * With {@code heatmap}, the page also holds the samples' values per time bucket (the profile must
     * have been read with {@link Heatmap#bucketNanos}) and draws them above the flame graph.
     */
    static void write(Profile profile, Profile base, EventKind kind, boolean threads, FrameNames names,
                      boolean heatmap, Writer out) throws IOException {
        String page = template();
        String title = title(profile, kind);
        if (base != null) {
            title += "; base " + base.totalValue(kind) + " " + (kind.isTime() ? "samples" : kind.unit)
                    + " (red: a larger share than in the base, blue: a smaller one)";
        }
        String json = json(profile, base, kind, threads, title, names, heatmap);
        int at = page.indexOf("/*DATA*/");
        page = page.substring(0, at) + json + page.substring(at + "/*DATA*/".length());
        out.write(page.replace("/*TITLE*/", escapeHtml(title)));
    }

    /**
     * The page's title, in the unit its boxes and percentages use (the weights): for cpu and wall
     * the sampling intervals the events stand for, which is more than the events where a timer
     * merged expirations; the event count follows when it differs.
     */
    static String title(Profile profile, EventKind kind) {
        long value = profile.totalValue(kind);
        long count = profile.totalCount(kind);
        String unit = kind.isTime() ? "samples" : kind.unit;
        return kind.option + " profile: " + value + " " + unit + (count == value ? "" : " (" + count + " events)");
    }

    /** The JSON frame table: one entry per (name, type), shared by the profile and its base. */
    private static final class Frames {
        final StringTable names = new StringTable();
        final StringTable types = new StringTable();
        final Map<Long, Integer> ids = new HashMap<>();
        final StringBuilder list = new StringBuilder();

        int id(String name, String type) {
            int n = names.id(name);
            int t = types.id(type);
            return ids.computeIfAbsent(((long) n << 32) | t, k -> {
                list.append(ids.isEmpty() ? "[" : ",[").append(n).append(',').append(t).append(']');
                return ids.size();
            });
        }
    }

    /** Appends the samples of {@code kind} as JSON stacks (root first); returns their total. */
    private static long stacks(Profile profile, EventKind kind, Frames table, StringBuilder stacks,
                               FrameNames names) {
        List<Profile.Frame> frames = profile.frames();
        int[] frameIds = new int[frames.size()];
        long total = 0;
        for (Profile.Sample s : profile.samples(kind)) {
            stacks.append(stacks.length() == 0 ? "[" : ",[").append(s.thread).append(',').append(s.value);
            total += s.value;
            for (int i = s.stack.length - 1; i >= 0; i--) {
                int f = s.stack[i];
                if (frameIds[f] == 0) {
                    Profile.Frame frame = frames.get(f);
                    frameIds[f] = table.id(names.of(frame), frame.type) + 1;
                }
                stacks.append(',').append(frameIds[f] - 1);
            }
            if (s.stack.length == 0) {
                stacks.append(',').append(table.id("[no stack]", ""));
            }
            stacks.append(']');
        }
        return total;
    }

    private static String threadList(Profile profile) {
        StringBuilder threadList = new StringBuilder();
        for (int t = 0; t < profile.threads().size(); t++) {
            threadList.append(t == 0 ? "" : ",");
            string(threadList, Collapsed.threadFrame(profile, t).replaceAll("^\\[|\\]$", ""));
        }
        return threadList.toString();
    }

    static String json(Profile profile, Profile base, EventKind kind, boolean threads, String title) {
        return json(profile, base, kind, threads, title, FrameNames.DEFAULT, false);
    }

    static String json(Profile profile, Profile base, EventKind kind, boolean threads, String title,
                       FrameNames names, boolean heatmap) {
        Frames table = new Frames();
        StringBuilder stacks = new StringBuilder();
        long total = stacks(profile, kind, table, stacks, names);
        StringBuilder baseStacks = new StringBuilder();
        long baseTotal = base == null ? 0 : stacks(base, kind, table, baseStacks, names);
        StringBuilder b = new StringBuilder();
        b.append("{\"title\":");
        string(b, title);
        b.append(",\"kind\":");
        string(b, kind.option);
        b.append(",\"unit\":");
        string(b, kind.isTime() ? "samples" : kind.unit);
        b.append(",\"total\":").append(total);
        b.append(",\"threadsDefault\":").append(threads);
        b.append(",\"names\":[");
        appendStrings(b, table.names.strings());
        b.append("],\"types\":[");
        appendStrings(b, table.types.strings());
        b.append("],\"frames\":[").append(table.list);
        b.append("],\"threads\":[").append(threadList(profile));
        b.append("],\"stacks\":[").append(stacks).append("]");
        if (base != null) {
            b.append(",\"base\":{\"total\":").append(baseTotal);
            b.append(",\"threads\":[").append(threadList(base));
            b.append("],\"stacks\":[").append(baseStacks).append("]}");
        }
        if (heatmap) {
            b.append(",\"heat\":");
            Heatmap.json(profile, kind, b);
        }
        return b.append("}").toString();
    }

    private static void appendStrings(StringBuilder b, List<String> strings) {
        for (int i = 0; i < strings.size(); i++) {
            if (i > 0) {
                b.append(',');
            }
            string(b, strings.get(i));
        }
    }

    /** A JSON string that is also safe inside a script element ("<" escaped, so no "</script>"). */
    static void string(StringBuilder b, String s) {
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20 || c == '<' || c == '>' || c == '&' || c == 0x2028 || c == 0x2029) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        b.append('"');
    }

    private static String escapeHtml(String s) {
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
    }

    private static String template() {
        try (InputStream in = FlameGraph.class.getResourceAsStream(TEMPLATE)) {
            if (in == null) {
                throw new IllegalStateException(TEMPLATE + " is missing from the jar");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
