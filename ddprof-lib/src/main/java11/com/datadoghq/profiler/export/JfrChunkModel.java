package com.datadoghq.profiler.export;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What {@link JfrChunkReader} builds from a chunk: its types and their fields, the constant-pool
 * entries and struct values ({@link Obj}), the events handed to the converters ({@link OwnEvent}),
 * and the pools kept per type across chunks ({@link Slot}).
 */
final class JfrChunkModel {
    private JfrChunkModel() {}

    /** How a field's value is encoded. */
    static final int STRUCT = 0;
    static final int BOOLEAN = 1;
    static final int BYTE = 2;
    static final int CHAR = 3;
    static final int SHORT = 4;
    static final int INT = 5;
    static final int LONG = 6;
    static final int FLOAT = 7;
    static final int DOUBLE = 8;
    static final int STRING = 9;

    static final LongMap<Object> EMPTY_POOL = new LongMap<>();

    /**
     * A type across chunks (by signature): its pool in the chunk being read, which a taken-over
     * entry's references are checked against (its own type is an older chunk's).
     */
    static final class Slot {
        LongMap<Object> pool = EMPTY_POOL;
        int chunk;
    }

    /**
     * One value a reader of the events keeps with a type or an entry ({@link JfrEvents.Event#memo}),
     * with the owner it is for: a look-up cheaper than a map keyed by the entry.
     */
    static class Memo {
        Object memoOwner;
        Object memoValue;
    }

    /** A type of the chunk's metadata. */
    static final class Type extends Memo {
        final long id;
        final String name;
        final int kind;
        /** An event type (its super type is jdk.jfr.Event). */
        boolean event;
        Field[] fields = new Field[0];
        Map<String, Integer> index = Collections.emptyMap();
        List<String> fieldNames = Collections.emptyList();
        /** Index of startTime and duration, -1 if none. */
        int startIndex = -1;
        int durationIndex = -1;
        /** Index of the fields a stack trace's frames are read through (frames; method, lineNumber, type), -1 if none. */
        int framesIndex = -1;
        int methodIndex = -1;
        int lineIndex = -1;
        int typeIndex = -1;
        /** Whether the asked-for events can reach values of this type (its pool is decoded). */
        boolean needed;
        /** Whether a needed type other than an event's holds keys of this type. */
        boolean inPools;
        /** Its pool's entries are decoded when an event asks ({@link Undecoded}): only events refer to them. */
        boolean lazy;
        final LongMap<Object> pool = new LongMap<>();
        /** The previous chunk's pool of this type, when the layout is the same. */
        LongMap<Object> previous = EMPTY_POOL;
        /** The pool of this type's signature in the chunk being read. */
        Slot slot;
        /** How many entries of {@link #previous} this chunk's pool took over. */
        int takenOver;
        private String signature;
        /** The event object reused for the next event of this type, unless events are kept. */
        OwnEvent reused;

        Type(long id, String name) {
            this.id = id;
            this.name = name;
            this.kind = kindOf(name);
        }

        void setFields(List<Field> list) {
            fields = list.toArray(new Field[0]);
            index = new HashMap<>();
            List<String> names = new ArrayList<>();
            for (int i = 0; i < fields.length; i++) {
                index.put(fields[i].name, i);
                names.add(fields[i].name);
            }
            fieldNames = Collections.unmodifiableList(names);
            startIndex = index.getOrDefault("startTime", -1);
            durationIndex = index.getOrDefault("duration", -1);
            framesIndex = index.getOrDefault("frames", -1);
            methodIndex = index.getOrDefault("method", -1);
            lineIndex = index.getOrDefault("lineNumber", -1);
            typeIndex = index.getOrDefault("type", -1);
        }

        /** Name and layout, by which chunks' types are the same type. */
        String signature() {
            if (signature == null) {
                StringBuilder b = new StringBuilder(name);
                for (Field f : fields) {
                    b.append('|').append(f.name).append(':').append(f.type.name).append(f.constantPool ? "@" : "")
                            .append(f.array ? "[]" : "");
                }
                signature = b.toString();
            }
            return signature;
        }

        int field(String name) {
            Integer i = index.get(name);
            return i == null ? -1 : i;
        }

        private static int kindOf(String name) {
            switch (name) {
                case "boolean":
                    return BOOLEAN;
                case "byte":
                    return BYTE;
                case "char":
                    return CHAR;
                case "short":
                    return SHORT;
                case "int":
                    return INT;
                case "long":
                    return LONG;
                case "float":
                    return FLOAT;
                case "double":
                    return DOUBLE;
                case "java.lang.String":
                    return STRING;
                default:
                    return STRUCT;
            }
        }
    }

    static final class Field {
        final String name;
        final Type type;
        final boolean constantPool;
        final boolean array;

        Field(String name, Type type, boolean constantPool, boolean array) {
            this.name = name;
            this.type = type;
            this.constantPool = constantPool;
            this.array = array;
        }
    }

    /**
     * A decoded value of a struct type: per field, a primitive's bits in {@code longs} (a
     * constant-pool field's key too), anything else (a string, an entry, an inline struct, an array)
     * in {@code objs}.
     */
    static final class Obj extends Memo {
        final Type type;
        final long[] longs;
        final Object[] objs;
        /** A pool entry's first byte in its chunk (the last chunk that held it). */
        int rawStart = -1;
        /** How many bytes its encoding takes ({@link #rawStart}). */
        int rawLength;
        /**
         * Whether the next chunk may take it over: not when it held a key only resolved into an
         * object (a string pool reference, an array of references), which the check cannot compare.
         */
        boolean reusable;

        Obj(Type type) {
            this.type = type;
            this.longs = new long[type.fields.length];
            this.objs = new Object[type.fields.length];
        }

        Object get(String name) {
            int i = type.field(name);
            return i < 0 ? null : get(i);
        }

        Object get(int i) {
            return type.fields[i].type.kind == STRUCT || type.fields[i].array || type.fields[i].type.kind == STRING
                    ? objs[i] : boxed(type.fields[i].type.kind, longs[i]);
        }

        long getLong(String name) {
            int i = type.field(name);
            return i < 0 ? 0 : asLong(type.fields[i], longs[i]);
        }
    }

    /** A pool entry not decoded yet: where its bytes are in the chunk being read. */
    static final class Undecoded {
        int start;
        final int length;

        Undecoded(int start, int length) {
            this.start = start;
            this.length = length;
        }
    }

    static Object boxed(int kind, long bits) {
        switch (kind) {
            case BOOLEAN:
                return bits != 0;
            case FLOAT:
                return Float.intBitsToFloat((int) bits);
            case DOUBLE:
                return Double.longBitsToDouble(bits);
            case INT:
            case SHORT:
            case BYTE:
                return (int) bits;
            case CHAR:
                return (char) bits;
            default:
                return bits;
        }
    }

    static long asLong(Field f, long bits) {
        switch (f.type.kind) {
            case FLOAT:
                return (long) Float.intBitsToFloat((int) bits);
            case DOUBLE:
                return (long) Double.longBitsToDouble(bits);
            default:
                return bits;
        }
    }

    /**
     * A value as text: a string as is; an entry of a one-field type (a symbol, a thread state,
     * ddprof's attribute values) as its field; a number in decimal; null otherwise.
     */
    static String text(Object v) {
        for (int depth = 0; depth < 4; depth++) {
            if (v == null || v instanceof String) {
                return (String) v;
            }
            if (!(v instanceof Obj)) {
                return v.toString();
            }
            Obj o = (Obj) v;
            if (o.type.fields.length != 1) {
                return null;
            }
            v = o.get(0);
        }
        return null;
    }

    /** An event of this reader. */
    static final class OwnEvent extends JfrEvents.Event {
        final Obj data;
        final JfrChunkReader reader;
        /** {@link #startNanos}, worked out when first read ({@link JfrChunkReader#startNanos}). */
        long start;
        boolean startKnown;
        private final int stackIndex;

        OwnEvent(Type type, JfrChunkReader reader) {
            this.data = new Obj(type);
            this.reader = reader;
            this.stackIndex = type.field("stackTrace");
        }

        @Override
        Object type() {
            return data.type;
        }

        @Override
        Object memo(Object entry, Object owner) {
            Memo m = (Memo) entry;
            return m.memoOwner == owner ? m.memoValue : null;
        }

        @Override
        void memo(Object entry, Object owner, Object value) {
            Memo m = (Memo) entry;
            m.memoOwner = owner;
            m.memoValue = value;
        }

        @Override
        String typeName() {
            return data.type.name;
        }

        @Override
        List<String> fieldNames() {
            return data.type.fieldNames;
        }

        @Override
        boolean hasField(String name) {
            return data.type.field(name) >= 0;
        }

        @Override
        long startNanos() {
            if (!startKnown) {
                start = reader.startNanos(data);
                startKnown = true;
            }
            return start;
        }

        @Override
        long durationNanos() {
            int i = data.type.durationIndex;
            return i < 0 ? 0 : reader.timespan(data.longs[i]);
        }

        @Override
        long getLong(String name) {
            return data.getLong(name);
        }

        @Override
        double getDouble(String name) {
            int i = data.type.field(name);
            return i < 0 ? 0 : getDouble(i);
        }

        /** Field {@code i}'s value as {@link Obj#get} gives it, a constant-pool reference looked up here. */
        Object value(int i) {
            Object v = data.objs[i];
            Field f = data.type.fields[i];
            return v == null && f.constantPool && !f.array ? reader.entry(f.type, data.longs[i]) : data.get(i);
        }

        private Object value(String name) {
            int i = data.type.field(name);
            return i < 0 ? null : value(i);
        }

        @Override
        String getString(String name) {
            return JfrChunkModel.text(value(name));
        }

        @Override
        int field(String name) {
            return data.type.field(name);
        }

        @Override
        long getLong(int field) {
            return asLong(data.type.fields[field], data.longs[field]);
        }

        @Override
        double getDouble(int field) {
            switch (data.type.fields[field].type.kind) {
                case FLOAT:
                    return Float.intBitsToFloat((int) data.longs[field]);
                case DOUBLE:
                    return Double.longBitsToDouble(data.longs[field]);
                default:
                    return data.longs[field];
            }
        }

        @Override
        String text(int field) {
            return JfrChunkModel.text(value(field));
        }

        @Override
        Object thread(int field) {
            Object t = value(field);
            return t instanceof Obj ? t : null;
        }

        @Override
        String text(String name) {
            return JfrChunkModel.text(value(name));
        }

        /**
         * This event's stack trace and its frames, looked up once per event (not per frame read): the
         * reader clears {@link #traceRead} before handing the reused object the next event.
         */
        boolean traceRead;
        private Object trace;
        private Object[] traceFrames;

        private Object[] frames() {
            Object t = stackTrace();
            Object[] frames = traceFrames;
            if (frames == null) {
                Object f = t instanceof Obj && ((Obj) t).type.framesIndex >= 0
                        ? ((Obj) t).objs[((Obj) t).type.framesIndex] : null;
                traceFrames = frames = f instanceof Object[] ? (Object[]) f : EMPTY;
            }
            return frames;
        }

        @Override
        Object stackTrace() {
            if (!traceRead) {
                trace = stackIndex < 0 ? null : value(stackIndex);
                traceFrames = null;
                traceRead = true;
            }
            return trace;
        }

        @Override
        boolean hasStackKey() {
            return stackIndex >= 0 && data.type.fields[stackIndex].constantPool && !data.type.fields[stackIndex].array;
        }

        @Override
        long stackKey() {
            return data.longs[stackIndex];
        }

        @Override
        boolean hasKey(int field) {
            return data.type.fields[field].constantPool && !data.type.fields[field].array;
        }

        @Override
        long key(int field) {
            return data.longs[field];
        }

        @Override
        int frameCount() {
            return frames().length;
        }

        @Override
        Object frame(int i) {
            return frames()[i];
        }

        @Override
        Object frameMethod(Object frame) {
            Obj f = (Obj) frame;
            // A method is a constant-pool struct: resolved into objs (a value of another kind is not one).
            Object m = f.type.methodIndex < 0 ? null : f.objs[f.type.methodIndex];
            return m instanceof Obj ? m : null;
        }

        @Override
        int frameLine(Object frame) {
            Obj f = (Obj) frame;
            return f.type.lineIndex < 0 ? -1 : (int) asLong(f.type.fields[f.type.lineIndex], f.longs[f.type.lineIndex]);
        }

        @Override
        int frameBci(Object frame) {
            Obj f = (Obj) frame;
            return f.type.field("bytecodeIndex") < 0 ? -1 : (int) f.getLong("bytecodeIndex");
        }

        @Override
        String frameType(Object frame) {
            Obj f = (Obj) frame;
            return f.type.typeIndex < 0 ? null : JfrChunkModel.text(f.get(f.type.typeIndex));
        }

        @Override
        String className(Object method) {
            Object cls = ((Obj) method).get("type");
            String name = cls instanceof Obj ? JfrChunkModel.text(((Obj) cls).get("name")) : null;
            return name == null ? "" : name.replace('/', '.');
        }

        @Override
        String methodName(Object method) {
            return JfrChunkModel.text(((Obj) method).get("name"));
        }

        @Override
        String methodDescriptor(Object method) {
            return JfrChunkModel.text(((Obj) method).get("descriptor"));
        }

        @Override
        Object thread(String field) {
            Object t = value(field);
            return t instanceof Obj ? t : null;
        }

        @Override
        String threadName(Object thread) {
            Obj t = (Obj) thread;
            String java = JfrChunkModel.text(t.get("javaName"));
            return java != null ? java : JfrChunkModel.text(t.get("osName"));
        }

        @Override
        long osThreadId(Object thread) {
            return ((Obj) thread).getLong("osThreadId");
        }

        @Override
        long javaThreadId(Object thread) {
            return ((Obj) thread).getLong("javaThreadId");
        }

        private static final Object[] EMPTY = new Object[0];
    }
}
