package com.datadoghq.profiler.tools.convert;

import java.io.IOException;
import java.io.Writer;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.datadoghq.profiler.export.EventKind;
import com.datadoghq.profiler.export.Profile;

/**
 * Collapsed stacks, the input format of flame-graph tools: one line per distinct stack,
 * {@code root;caller;...;leaf value}, where value is the sum of the samples' values
 * ({@link EventKind}: sampling intervals for cpu/wall, so the sample count when no timer
 * overran; estimated bytes for alloc/live). With {@code threads}, the thread's name is the
 * first frame ({@code [name tid=N]}). A sample without a stack is written as {@code [no stack]}.
 */
public final class Collapsed {
    private Collapsed() {
    }

    /** The lines (without the value) and their values, in order of first appearance. */
    public static Map<String, Long> lines(Profile profile, EventKind kind, boolean threads) {
        return lines(profile, kind, threads, FrameNames.DEFAULT);
    }

    static Map<String, Long> lines(Profile profile, EventKind kind, boolean threads, FrameNames names) {
        Map<String, Long> lines = new LinkedHashMap<>();
        List<Profile.Frame> frames = profile.frames();
        StringBuilder b = new StringBuilder();
        for (Profile.Sample s : profile.samples(kind)) {
            b.setLength(0);
            if (threads) {
                b.append(threadFrame(profile, s.thread));
            }
            if (s.stack.length == 0) {
                if (b.length() > 0) {
                    b.append(';');
                }
                b.append("[no stack]");
            }
            for (int i = s.stack.length - 1; i >= 0; i--) { // root first
                if (b.length() > 0) {
                    b.append(';');
                }
                b.append(clean(names.of(frames.get(s.stack[i]))));
            }
            lines.merge(b.toString(), s.value, Long::sum);
        }
        return lines;
    }

    public static void write(Profile profile, EventKind kind, boolean threads, Writer out) throws IOException {
        write(profile, kind, threads, FrameNames.DEFAULT, out);
    }

    static void write(Profile profile, EventKind kind, boolean threads, FrameNames names, Writer out)
            throws IOException {
        for (Map.Entry<String, Long> e : lines(profile, kind, threads, names).entrySet()) {
            out.write(e.getKey());
            out.write(' ');
            out.write(Long.toString(e.getValue()));
            out.write('\n');
        }
    }

    /** The pseudo-frame a thread gets with {@code --threads}. */
    static String threadFrame(Profile profile, int thread) {
        if (thread < 0) {
            return "[unknown thread]";
        }
        Profile.ThreadInfo t = profile.threads().get(thread);
        return clean("[" + t.name + (t.osId > 0 ? " tid=" + t.osId : "") + "]");
    }

    /** Frame names must not hold the separators of the format: ';' between frames and line ends (the value follows the last space, so spaces may stay). */
    static String clean(String name) {
        return name.replace(';', ':').replace('\n', ' ').replace('\r', ' ');
    }
}
