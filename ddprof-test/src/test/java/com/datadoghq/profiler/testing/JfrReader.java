package com.datadoghq.profiler.testing;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import jdk.jfr.EventType;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedMethod;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordedThread;
import jdk.jfr.consumer.RecordingFile;

/** Reads recordings back with the JDK's own parser, {@code jdk.jfr.consumer.RecordingFile}. */
public final class JfrReader {
    public static final String EXECUTION_SAMPLE = "datadog.ExecutionSample";
    public static final String PROFILER_CONFIG = "datadog.DatadogProfilerConfig";
    public static final String PROFILER_SETTING = "datadog.ProfilerSetting";
    public static final String PROFILER_COUNTER = "datadog.ProfilerCounter";
    public static final String ACTIVE_SETTING = "jdk.ActiveSetting";

    /** The frame types a Java frame may have (FrameType pool descriptions 0, 1, 2, 6). */
    public static final List<String> JAVA_FRAME_TYPES =
            Collections.unmodifiableList(java.util.Arrays.asList("Interpreted", "JIT compiled", "Inlined", "C1 compiled"));

    private JfrReader() {}

    public static List<RecordedEvent> readAll(Path file) throws IOException {
        return RecordingFile.readAllEvents(file);
    }

    public static List<RecordedEvent> ofType(List<RecordedEvent> events, String type) {
        return events.stream().filter(e -> type.equals(e.getEventType().getName())).collect(Collectors.toList());
    }

    public static List<RecordedEvent> events(Path file, String type) throws IOException {
        return ofType(readAll(file), type);
    }

    public static List<RecordedEvent> executionSamples(Path file) throws IOException {
        return events(file, EXECUTION_SAMPLE);
    }

    /** Event type name -> type id, as declared in the recording's metadata. */
    public static Map<String, Long> eventTypeIds(Path file) throws IOException {
        Map<String, Long> ids = new HashMap<>();
        try (RecordingFile rf = new RecordingFile(file)) {
            for (EventType t : rf.readEventTypes()) {
                ids.put(t.getName(), t.getId());
            }
        }
        return ids;
    }

    /** Leaf first, as the recording stores them; empty when the event has no stack. */
    public static List<RecordedFrame> frames(RecordedEvent e) {
        RecordedStackTrace st = e.getStackTrace();
        return st == null ? Collections.emptyList() : st.getFrames();
    }

    /** The index (0 = leaf) of the first frame running {@code owner.method}, or -1. */
    public static int indexOf(RecordedEvent e, Class<?> owner, String method) {
        List<RecordedFrame> frames = frames(e);
        for (int i = 0; i < frames.size(); i++) {
            if (isMethod(frames.get(i), owner, method)) {
                return i;
            }
        }
        return -1;
    }

    public static boolean isMethod(RecordedFrame f, Class<?> owner, String method) {
        RecordedMethod m = f.getMethod();
        return m != null && method.equals(m.getName()) && m.getType() != null
                && owner.getName().equals(m.getType().getName());
    }

    /**
     * A frame that names nothing: no method or class, the walker's error frame ({@code unknown}), or an
     * unloaded method. A native frame (type Native or Kernel, no class: a C or kernel function or a
     * stub named by its symbol) names its code and is not one.
     */
    public static boolean isUnnamed(RecordedFrame f) {
        RecordedMethod m = f.getMethod();
        if (m == null || m.getType() == null || "unknown".equals(m.getName()) || "<unloaded>".equals(m.getName())) {
            return true;
        }
        boolean symbol = "Native".equals(f.getType()) || "Kernel".equals(f.getType());
        return m.getType().getName().isEmpty() && !(symbol && !m.getName().isEmpty());
    }

    public static boolean contains(RecordedEvent e, Class<?> owner, String method) {
        return indexOf(e, owner, method) >= 0;
    }

    public static String threadName(RecordedEvent e) {
        RecordedThread t = e.getThread();
        if (t == null) {
            return null;
        }
        return t.getJavaName() != null ? t.getJavaName() : t.getOSName();
    }

    public static List<RecordedEvent> onThread(List<RecordedEvent> events, String threadName) {
        return events.stream().filter(e -> threadName.equals(threadName(e))).collect(Collectors.toList());
    }

    /** A short, readable rendering of a stack for assertion messages. */
    public static String describe(RecordedEvent e) {
        List<String> names = new ArrayList<>();
        for (RecordedFrame f : frames(e)) {
            RecordedMethod m = f.getMethod();
            names.add(m == null ? "?" : (m.getType() == null ? "" : m.getType().getName()) + "." + m.getName()
                    + ":" + f.getLineNumber() + "@" + f.getBytecodeIndex() + "[" + f.getType() + "]");
        }
        return threadName(e) + " " + names;
    }

    public static String describe(List<RecordedEvent> events, int max) {
        return events.stream().limit(max).map(JfrReader::describe).collect(Collectors.joining("\n  ", "\n  ", ""));
    }
}
