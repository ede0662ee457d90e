package com.datadoghq.profiler.tools.convert;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.List;

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
 * The values are {@link Collapsed}'s, so the page shows the same totals as {@code report} and
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
        String page = template();
        String title = title(profile, kind);
        String json = json(profile, kind, threads, title);
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

    static String json(Profile profile, EventKind kind, boolean threads, String title) {
        List<Profile.Frame> frames = profile.frames();
        StringTable names = new StringTable();
        StringTable types = new StringTable();
        StringBuilder frameList = new StringBuilder();
        int[] frameIds = new int[frames.size()];
        int nextFrame = 0;
        StringBuilder stacks = new StringBuilder();
        long total = 0;
        for (Profile.Sample s : profile.samples(kind)) {
            stacks.append(stacks.length() == 0 ? "[" : ",[").append(s.thread).append(',').append(s.value);
            total += s.value;
            for (int i = s.stack.length - 1; i >= 0; i--) {
                int f = s.stack[i];
                if (frameIds[f] == 0) {
                    Profile.Frame frame = frames.get(f);
                    frameIds[f] = ++nextFrame;
                    frameList.append(nextFrame == 1 ? "[" : ",[").append(names.id(frame.name())).append(',')
                            .append(types.id(frame.type)).append(']');
                }
                stacks.append(',').append(frameIds[f] - 1);
            }
            if (s.stack.length == 0) {
                // The JSON frame list is built as it goes: a no-stack marker needs its own entry.
                int marker = names.id("[no stack]");
                frameList.append(nextFrame == 0 ? "[" : ",[").append(marker).append(",0]");
                stacks.append(',').append(nextFrame++);
            }
            stacks.append(']');
        }
        StringBuilder threadList = new StringBuilder();
        for (int t = 0; t < profile.threads().size(); t++) {
            threadList.append(t == 0 ? "" : ",");
            string(threadList, Collapsed.threadFrame(profile, t).replaceAll("^\\[|\\]$", ""));
        }
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
        appendStrings(b, names.strings());
        b.append("],\"types\":[");
        appendStrings(b, types.strings());
        b.append("],\"frames\":[").append(frameList);
        b.append("],\"threads\":[").append(threadList);
        b.append("],\"stacks\":[").append(stacks).append("]}");
        return b.toString();
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
