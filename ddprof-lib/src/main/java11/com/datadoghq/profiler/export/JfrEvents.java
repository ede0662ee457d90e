package com.datadoghq.profiler.export;

import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;

import jdk.jfr.EventType;
import jdk.jfr.ValueDescriptor;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedMethod;
import jdk.jfr.consumer.RecordedObject;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordedThread;
import jdk.jfr.consumer.RecordingFile;

/**
 * The events of the named types in a recording file, handed to a consumer one by one as {@link
 * Event}s. By default with our own chunk reader ({@link JfrChunkReader}), which decodes only the
 * event types asked for and the constant pools they refer to. With {@code
 * -Dddprof.jfr.reader=jdk} (kept for one release, to compare outputs) with the JDK's parser instead:
 * On JDK 14+ through {@code jdk.jfr.consumer.EventStream}, whose parser skips the
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
    /** {@code -Dddprof.jfr.reader=jdk}: read with the JDK's parser rather than {@link JfrChunkReader}. */
    static final String READER_PROPERTY = "ddprof.jfr.reader";

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

    /** Whether {@code -Dddprof.jfr.reader=jdk} asks for the JDK's parser. */
    static boolean jdkParser() {
        return "jdk".equals(System.getProperty(READER_PROPERTY));
    }

    /**
     * Hands the events of {@code types} to {@code consumer}. With {@code keep} an event stays valid
     * after the call (it is not reused for the next one).
     */
    static void forEach(Path file, Set<String> types, boolean keep, Consumer<Event> consumer) throws IOException {
        if (jdkParser()) {
            forEachJdk(file, types, keep, e -> consumer.accept(new JdkEvent(e)));
        } else {
            JfrChunkReader.forEach(file, types, keep, consumer);
        }
    }

    /** The event types a recording's metadata declares, by type id (an ActiveSetting's {@code id}). */
    static Map<Long, String> eventTypes(Path file) throws IOException {
        if (!jdkParser()) {
            return JfrChunkReader.eventTypes(file);
        }
        Map<Long, String> names = new HashMap<>();
        try (RecordingFile recording = new RecordingFile(file)) {
            for (EventType t : recording.readEventTypes()) {
                names.put(t.getId(), t.getName());
            }
        }
        return names;
    }

    private static void forEachJdk(Path file, Set<String> types, boolean keep, Consumer<RecordedEvent> consumer)
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

    /**
     * One event as the converters read it, whichever parser decoded it. Values of constant-pool
     * types (stack traces, methods, threads) are opaque objects, one per entry of a chunk's pool, so
     * they serve as identity keys for memos; they are read through the event's methods.
     */
    abstract static class Event {
        /** The event's type: one object per type per chunk metadata (a memo key). */
        abstract Object type();

        abstract String typeName();

        /**
         * The value {@code owner} kept with {@code entry} (this event's type, stack trace or thread),
         * or null: a parser whose entries have room for it keeps one value per entry (the last
         * owner's), so a memo needs no map keyed by the entry. The JDK's parser has none.
         */
        Object memo(Object entry, Object owner) {
            return null;
        }

        /** Keeps {@code value} with {@code entry} for {@code owner}, where the parser has room. */
        void memo(Object entry, Object owner, Object value) {
        }

        /** The type's field names in declaration order. */
        abstract List<String> fieldNames();

        abstract boolean hasField(String name);

        /** Start time, epoch nanoseconds. */
        abstract long startNanos();

        abstract long durationNanos();

        abstract long getLong(String name);

        abstract double getDouble(String name);

        abstract String getString(String name);

        /**
         * A field's value as text: a string as is, a one-field constant-pool type (ddprof's
         * attribute values, a thread state) by its field, a number in decimal; null when absent.
         */
        abstract String text(String name);

        /**
         * The index of a field of this event's type, -1 when it has none: for the by-index reads
         * below, which a reader of many events of a type resolves once per type rather than by name
         * per event. Valid for the events of this {@link #type()}.
         */
        abstract int field(String name);

        abstract long getLong(int field);

        abstract double getDouble(int field);

        /** {@link #text(String)} by index. */
        abstract String text(int field);

        /** {@link #thread(String)} by index. */
        abstract Object thread(int field);

        /** The stack trace (an identity key), or null. */
        abstract Object stackTrace();

        /**
         * Whether {@link #stackKey} names this event's stack trace: the same key, the same trace, for
         * the events of one {@link #type()} (a chunk's). The JDK's parser shows no keys.
         */
        boolean hasStackKey() {
            return false;
        }

        /** The stack trace's constant-pool key ({@link #hasStackKey}). */
        long stackKey() {
            return 0;
        }

        /** Whether {@link #key} names field {@code field}'s constant-pool entry, as {@link #hasStackKey}. */
        boolean hasKey(int field) {
            return false;
        }

        /** Field {@code field}'s constant-pool key ({@link #hasKey}). */
        long key(int field) {
            return 0;
        }

        /** The stack trace's frames, top first. */
        abstract int frameCount();

        /**
         * Frame {@code i} (top first), read through the methods below: the trace is found once per
         * frame, not again for each of its fields.
         */
        abstract Object frame(int i);

        /** The frame's method (an identity key), or null. */
        abstract Object frameMethod(Object frame);

        abstract int frameLine(Object frame);

        /** The frame's bytecode index; -1 when not recorded. */
        abstract int frameBci(Object frame);

        /** "Interpreted", "JIT compiled", "Inlined", "Native", ...; null when not recorded. */
        abstract String frameType(Object frame);

        /** The method's class in Java form, as recorded; empty when class-less. */
        abstract String className(Object method);

        abstract String methodName(Object method);

        abstract String methodDescriptor(Object method);

        /** The thread in {@code field} (an identity key), or null. */
        abstract Object thread(String field);

        /** Its Java name, else its OS name; null when neither. */
        abstract String threadName(Object thread);

        abstract long osThreadId(Object thread);

        abstract long javaThreadId(Object thread);
    }

    /** An event of the JDK's parser. */
    static final class JdkEvent extends Event {
        private final RecordedEvent e;
        private RecordedStackTrace trace;
        private List<RecordedFrame> frames = Collections.emptyList();

        JdkEvent(RecordedEvent e) {
            this.e = e;
        }

        @Override
        Object type() {
            return e.getEventType();
        }

        @Override
        String typeName() {
            return e.getEventType().getName();
        }

        @Override
        List<String> fieldNames() {
            List<String> names = new ArrayList<>();
            for (ValueDescriptor d : e.getEventType().getFields()) {
                names.add(d.getName());
            }
            return names;
        }

        @Override
        boolean hasField(String name) {
            return e.hasField(name);
        }

        @Override
        long startNanos() {
            return e.getStartTime().getEpochSecond() * 1_000_000_000L + e.getStartTime().getNano();
        }

        @Override
        long durationNanos() {
            return e.getDuration().toNanos();
        }

        @Override
        long getLong(String name) {
            return e.getLong(name);
        }

        @Override
        double getDouble(String name) {
            return e.getDouble(name);
        }

        @Override
        String getString(String name) {
            return e.getString(name);
        }

        @Override
        String text(String name) {
            Object v = e.getValue(name);
            if (v instanceof RecordedObject) {
                RecordedObject o = (RecordedObject) v;
                v = o.hasField("value") ? o.getValue("value") : null;
            }
            return v == null ? null : v.toString();
        }

        @Override
        int field(String name) {
            List<ValueDescriptor> fields = e.getEventType().getFields();
            for (int i = 0; i < fields.size(); i++) {
                if (fields.get(i).getName().equals(name)) {
                    return i;
                }
            }
            return -1;
        }

        private String name(int field) {
            return e.getEventType().getFields().get(field).getName();
        }

        @Override
        long getLong(int field) {
            return getLong(name(field));
        }

        @Override
        double getDouble(int field) {
            return getDouble(name(field));
        }

        @Override
        String text(int field) {
            return text(name(field));
        }

        @Override
        Object thread(int field) {
            return thread(name(field));
        }

        @Override
        Object stackTrace() {
            RecordedStackTrace t = e.getStackTrace();
            if (t != trace) {
                trace = t;
                frames = t == null ? Collections.emptyList() : t.getFrames();
            }
            return t;
        }

        @Override
        int frameCount() {
            stackTrace();
            return frames.size();
        }

        @Override
        Object frame(int i) {
            stackTrace();
            return frames.get(i);
        }

        @Override
        Object frameMethod(Object frame) {
            return ((RecordedFrame) frame).getMethod();
        }

        @Override
        int frameLine(Object frame) {
            return ((RecordedFrame) frame).getLineNumber();
        }

        @Override
        int frameBci(Object frame) {
            return ((RecordedFrame) frame).getBytecodeIndex();
        }

        @Override
        String frameType(Object frame) {
            return ((RecordedFrame) frame).getType();
        }

        @Override
        String className(Object method) {
            return Recorded.className((RecordedMethod) method);
        }

        @Override
        String methodName(Object method) {
            return ((RecordedMethod) method).getName();
        }

        @Override
        String methodDescriptor(Object method) {
            return ((RecordedMethod) method).getDescriptor();
        }

        @Override
        Object thread(String field) {
            Object v = e.getValue(field);
            return v instanceof RecordedThread ? v : null;
        }

        @Override
        String threadName(Object thread) {
            RecordedThread t = (RecordedThread) thread;
            return t.getJavaName() != null ? t.getJavaName() : t.getOSName();
        }

        @Override
        long osThreadId(Object thread) {
            return ((RecordedThread) thread).getOSThreadId();
        }

        @Override
        long javaThreadId(Object thread) {
            return ((RecordedThread) thread).getJavaThreadId();
        }
    }
}
