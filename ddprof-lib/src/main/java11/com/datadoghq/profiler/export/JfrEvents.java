package com.datadoghq.profiler.export;

import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.file.Path;
import java.util.Set;
import java.util.function.Consumer;

import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;

/**
 * The events of the named types in a recording file, handed to a consumer one by one, with the
 * JDK's parser. On JDK 14+ through {@code jdk.jfr.consumer.EventStream}, whose parser skips the
 * events of types nobody subscribed to without decoding them: a conversion of one kind out of a
 * recording that holds several (CPU samples beside ten times as many wall samples) decodes only
 * what it keeps. On JDK 11-13 (no {@code EventStream}) through {@link RecordingFile}, which
 * decodes every event, filtered by name here.
 *
 * <p>Events come in file order, not sorted by time (no reader here needs the order). An event is
 * valid only during the consumer's call unless {@code keep} is set (the stream reuses one event
 * object per type otherwise). A file the parser cannot read throws {@link IOException}; callers
 * check a recording first (the tools' {@code RecordingCheck}), as the stream stops quietly at a cut.
 */
final class JfrEvents {
    /** {@code EventStream}'s methods, or null before JDK 14. */
    private static final Method OPEN_FILE;
    private static final Method ON_EVENT;
    private static final Method SET_ORDERED;
    private static final Method SET_REUSE;
    private static final Method START;
    private static final Method CLOSE;

    static {
        Method open = null;
        Method on = null;
        Method ordered = null;
        Method reuse = null;
        Method start = null;
        Method close = null;
        if (Runtime.version().feature() >= 14) {
            try {
                Class<?> es = Class.forName("jdk.jfr.consumer.EventStream");
                open = es.getMethod("openFile", Path.class);
                on = es.getMethod("onEvent", String.class, Consumer.class);
                ordered = es.getMethod("setOrdered", boolean.class);
                reuse = es.getMethod("setReuse", boolean.class);
                start = es.getMethod("start");
                close = es.getMethod("close");
            } catch (ReflectiveOperationException e) {
                open = null;
            }
        }
        OPEN_FILE = open;
        ON_EVENT = on;
        SET_ORDERED = ordered;
        SET_REUSE = reuse;
        START = start;
        CLOSE = close;
    }

    private JfrEvents() {
    }

    /** Whether the skipping parser ({@code EventStream}) is used on this JDK. */
    static boolean streaming() {
        return OPEN_FILE != null;
    }

    static void forEach(Path file, Set<String> types, boolean keep, Consumer<RecordedEvent> consumer)
            throws IOException {
        if (OPEN_FILE == null) {
            try (RecordingFile recording = new RecordingFile(file)) {
                while (recording.hasMoreEvents()) {
                    RecordedEvent e = recording.readEvent();
                    if (types.contains(e.getEventType().getName())) {
                        consumer.accept(e);
                    }
                }
            }
            return;
        }
        Object stream = invoke(OPEN_FILE, null, file);
        try {
            invoke(SET_ORDERED, stream, false);
            invoke(SET_REUSE, stream, !keep);
            for (String t : types) {
                invoke(ON_EVENT, stream, t, consumer);
            }
            invoke(START, stream);
        } finally {
            invoke(CLOSE, stream);
        }
    }

    /** Calls {@code m}, rethrowing what it threw as itself (IOException, unchecked) rather than wrapped. */
    private static Object invoke(Method m, Object target, Object... args) throws IOException {
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof IOException) {
                throw (IOException) cause;
            }
            if (cause instanceof RuntimeException) {
                throw (RuntimeException) cause;
            }
            if (cause instanceof Error) {
                throw (Error) cause;
            }
            throw new IOException(cause);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
    }
}
