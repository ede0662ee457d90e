package com.datadoghq.profiler.export;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * A recording's samples, aggregated: every distinct (kind, stack, thread, span ids, context
 * attributes) once, with how many events fell on it ({@link Sample#count}) and what they are
 * worth ({@link Sample#value}, see {@link EventKind}). Frames and threads are interned, so each
 * output format writes each of them once. Built by {@link JfrProfileReader}; read by the writers.
 */
public final class Profile {
    /** One stack frame as the recording names it. */
    public static final class Frame {
        /** Java form ({@code java.lang.String}); empty for native and placeholder frames. */
        public final String className;
        public final String method;
        /** JVM descriptor ({@code (I)V}); {@code ()L;} on native frames. */
        public final String descriptor;
        /** Source line, 0 when unknown (native frames). */
        public final int line;
        /** JFR frame type: Interpreted, JIT compiled, Inlined, C1 compiled, Native, C++, Kernel. */
        public final String type;
        /**
         * Bytecode index (-1: not recorded), 0 unless the reader was asked for it
         * ({@link JfrProfileReader#bytecodeIndexes}):
         * otherwise frames of one line at several indexes would be several frames, and pprof locations.
         */
        public final int bci;

        Frame(String className, String method, String descriptor, int line, String type) {
            this(className, method, descriptor, line, type, 0);
        }

        Frame(String className, String method, String descriptor, int line, String type, int bci) {
            this.className = className;
            this.method = method;
            this.descriptor = descriptor;
            this.line = line;
            this.type = type;
            this.bci = bci;
        }

        /** {@code pkg.Class.method}, or the bare name of a class-less frame (as {@code report}). */
        public String name() {
            return className.isEmpty() ? method : className + "." + method;
        }

        @Override
        public boolean equals(Object o) {
            if (!(o instanceof Frame)) {
                return false;
            }
            Frame f = (Frame) o;
            return line == f.line && bci == f.bci && className.equals(f.className) && method.equals(f.method)
                    && descriptor.equals(f.descriptor) && type.equals(f.type);
        }

        @Override
        public int hashCode() {
            // By hand: Objects.hash would box the line and make an array per frame interned.
            int h = className.hashCode();
            h = 31 * h + method.hashCode();
            h = 31 * h + descriptor.hashCode();
            h = 31 * h + line;
            h = 31 * h + type.hashCode();
            return 31 * h + bci;
        }
    }

    /** A sampled thread. */
    public static final class ThreadInfo {
        /** The Java name, else the OS name ({@code [tid=N]} when the profiler knew none). */
        public final String name;
        /** OS thread id, 0 when unknown. */
        public final long osId;
        /** Java thread id, 0 for threads that are not Java threads. */
        public final long javaId;

        ThreadInfo(String name, long osId, long javaId) {
            this.name = name;
            this.osId = osId;
            this.javaId = javaId;
        }

        @Override
        public boolean equals(Object o) {
            if (!(o instanceof ThreadInfo)) {
                return false;
            }
            ThreadInfo t = (ThreadInfo) o;
            return osId == t.osId && javaId == t.javaId && name.equals(t.name);
        }

        @Override
        public int hashCode() {
            return Objects.hash(name, osId, javaId);
        }
    }

    /** Events with the same kind, stack, thread, span ids and attributes. */
    public static final class Sample {
        public final EventKind kind;
        /** Indexes into {@link #frames()}, leaf first (the JFR order). Empty: no stack. */
        public final int[] stack;
        /** Index into {@link #threads()}, -1 when the event names no thread. */
        public final int thread;
        /** 0 when the event had no trace context. */
        public final long spanId;
        public final long localRootSpanId;
        /** Per {@link #attributeNames()}: the value, or null when unset. */
        public final String[] attributes;
        /** How many events. */
        public long count;
        /** What they are worth, in {@link EventKind}'s terms: intervals for cpu/wall, bytes for alloc/live. */
        public long value;
        /**
         * {@link #value} corrected for the threads each wall tick chose from ({@link WallEpochs}): the
         * intervals of wall time the samples stand for. Equal to {@code value} for the other kinds.
         */
        public double scaled;
        /**
         * With {@link Profile#bucketNanos} set: (time bucket, value) pairs in the order the events came,
         * a bucket repeated where events of other samples came between; {@link #timeline()} merges them.
         */
        private long[] times;
        private int timesSize;

        /** {@link #stack}'s id among the profile's distinct stacks ({@link Profile#stack}). */
        final int stackId;
        /** {@code Arrays.hashCode(attributes)}: the sample's key hashed once. */
        private final int hash;

        Sample(EventKind kind, int[] stack, int stackId, int thread, long spanId, long localRootSpanId,
               String[] attributes, int hash) {
            this.kind = kind;
            this.stack = stack;
            this.stackId = stackId;
            this.hash = hash;
            this.thread = thread;
            this.spanId = spanId;
            this.localRootSpanId = localRootSpanId;
            this.attributes = attributes;
        }

        void addAt(long bucket, long v) {
            if (timesSize > 0 && times[timesSize - 2] == bucket) {
                times[timesSize - 1] += v;
                return;
            }
            if (times == null) {
                times = new long[4];
            } else if (timesSize == times.length) {
                times = Arrays.copyOf(times, times.length * 2);
            }
            times[timesSize++] = bucket;
            times[timesSize++] = v;
        }

        /**
         * The value per time bucket as (bucket, value) pairs, by bucket, each bucket once; empty unless
         * the profile was read with time buckets ({@link Profile#bucketNanos}).
         */
        public long[] timeline() {
            TreeMap<Long, Long> byBucket = new TreeMap<>();
            for (int i = 0; i < timesSize; i += 2) {
                byBucket.merge(times[i], times[i + 1], Long::sum);
            }
            long[] out = new long[byBucket.size() * 2];
            int i = 0;
            for (Map.Entry<Long, Long> e : byBucket.entrySet()) {
                out[i++] = e.getKey();
                out[i++] = e.getValue();
            }
            return out;
        }
    }

    private final List<Frame> frames = new ArrayList<>();
    private final Map<Frame, Integer> frameIds = new HashMap<>();
    private final List<ThreadInfo> threads = new ArrayList<>();
    private final Map<ThreadInfo, Integer> threadIds = new HashMap<>();
    private final List<String> attributeNames = new ArrayList<>();
    /** Distinct stacks by content, so that a sample's key holds an id rather than the stack. */
    private final List<int[]> stacks = new ArrayList<>();
    private final Map<IntArray, Integer> stackIds = new HashMap<>();
    /** The samples in order of first appearance; {@link #table} finds them by key. */
    private final List<Sample> samples = new ArrayList<>();
    /**
     * Open addressing over {@link #samples}, probed with the key's fields as they are: one event adds
     * to its sample without a key object or a hash of its stack (a map keyed by the stack hashed it
     * for every event).
     */
    private Sample[] table = new Sample[1024];
    private final Map<EventKind, Long> intervals = new EnumMap<>(EventKind.class);
    /** Per kind, its events by JFR type name (a one-element counter each), in order of first appearance. */
    private final Map<EventKind, Map<String, long[]>> eventTypes = new EnumMap<>(EventKind.class);
    /** The 128-bit trace id {high, low} of each local root span ({@code datadog.TraceLink}). */
    private final Map<Long, long[]> traces = new HashMap<>();

    /** The first chunk's start and the last chunk's end (epoch nanoseconds), 0 when unknown. */
    public long startNanos;
    public long endNanos;
    /** The recorded JVM's pid ({@code jdk.JVMInformation}), 0 when unknown. */
    public long pid;
    /** The recorded JVM's name and version ({@code jdk.JVMInformation}), empty when unknown. */
    public String jvm = "";
    /**
     * The width of a time bucket in nanoseconds, from {@link #startNanos}: each sample then keeps its
     * value per bucket ({@link Sample#timeline()}, for a heatmap); 0 (the default): not kept.
     */
    long bucketNanos;

    public long bucketNanos() {
        return bucketNanos;
    }

    /** Adds {@code v} at {@code nanos} to {@code s}'s timeline when buckets are kept. */
    void atTime(Sample s, long nanos, long v) {
        if (bucketNanos > 0) {
            s.addAt(Math.floorDiv(Math.max(0, nanos - startNanos), bucketNanos), v);
        }
    }

    int frame(Frame f) {
        Integer id = frameIds.get(f);
        if (id == null) {
            id = frames.size();
            frames.add(f);
            frameIds.put(f, id);
        }
        return id;
    }

    int thread(ThreadInfo t) {
        return intern(threads, threadIds, t);
    }

    /** The index of {@code v} in {@code list}, appended (and indexed in {@code ids}) if new. */
    private static <T> int intern(List<T> list, Map<T, Integer> ids, T v) {
        return ids.computeIfAbsent(v, k -> {
            list.add(k);
            return list.size() - 1;
        });
    }

    void setAttributeNames(List<String> names) {
        attributeNames.clear();
        attributeNames.addAll(names);
    }

    /** The id of a stack (frame indexes, leaf first) among the profile's distinct stacks. */
    int stack(int[] frames) {
        return stackIds.computeIfAbsent(new IntArray(frames), k -> {
            stacks.add(k.values);
            return stacks.size() - 1;
        });
    }

    /** The frames of stack {@code id} ({@link #stack}). */
    int[] stackFrames(int id) {
        return stacks.get(id);
    }

    /** The sample of this key (a stack by its {@link #stack} id), added if new. */
    Sample sample(EventKind kind, int stackId, int thread, long spanId, long localRootSpanId, String[] attributes) {
        int h = kind.ordinal();
        h = 31 * h + stackId;
        h = 31 * h + thread;
        h = 31 * h + Long.hashCode(spanId);
        h = 31 * h + Long.hashCode(localRootSpanId);
        h = 31 * h + (attributes == null ? 0 : Arrays.hashCode(attributes));
        int mask = table.length - 1;
        for (int i = mix(h) & mask; ; i = (i + 1) & mask) {
            Sample s = table[i];
            if (s == null) {
                break;
            }
            if (s.hash == h && s.stackId == stackId && s.thread == thread && s.kind == kind && s.spanId == spanId
                    && s.localRootSpanId == localRootSpanId && Arrays.equals(s.attributes, attributes)) {
                return s;
            }
        }
        Sample s = new Sample(kind, stacks.get(stackId), stackId, thread, spanId, localRootSpanId, attributes, h);
        samples.add(s);
        if (samples.size() * 2 > table.length) {
            table = new Sample[table.length * 2];
            for (Sample old : samples) {
                place(old);
            }
        } else {
            place(s);
        }
        return s;
    }

    private void place(Sample s) {
        int mask = table.length - 1;
        int i = mix(s.hash) & mask;
        while (table[i] != null) {
            i = (i + 1) & mask;
        }
        table[i] = s;
    }

    private static int mix(int h) {
        return h ^ (h >>> 16) ^ (h >>> 7);
    }

    /** An int array as a map key, by content. */
    private static final class IntArray {
        final int[] values;
        final int hash;

        IntArray(int[] values) {
            this.values = values;
            this.hash = Arrays.hashCode(values);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof IntArray && Arrays.equals(values, ((IntArray) o).values);
        }

        @Override
        public int hashCode() {
            return hash;
        }
    }

    /** The counter of the events of {@code type} ({@link #eventTypes}), which the reader adds to. */
    long[] eventCounter(EventKind kind, String type) {
        return eventTypes.computeIfAbsent(kind, k -> new LinkedHashMap<>()).computeIfAbsent(type, t -> new long[1]);
    }

    /** The events of a kind by JFR type name, in order of first appearance (types without any left out). */
    public Map<String, Long> eventTypes(EventKind kind) {
        Map<String, Long> out = new LinkedHashMap<>();
        for (Map.Entry<String, long[]> e : eventTypes.getOrDefault(kind, Collections.emptyMap()).entrySet()) {
            if (e.getValue()[0] > 0) {
                out.put(e.getKey(), e.getValue()[0]);
            }
        }
        return out;
    }

    void traceLink(long localRootSpanId, long high, long low) {
        traces.putIfAbsent(localRootSpanId, new long[] {high, low});
    }

    /** The trace id {high, low} of a local root span, or null when the recording links none. */
    public long[] traceOf(long localRootSpanId) {
        return localRootSpanId == 0 ? null : traces.get(localRootSpanId);
    }

    void interval(EventKind kind, long nanos) {
        if (nanos > 0) {
            intervals.put(kind, nanos);
        }
    }

    public List<Frame> frames() {
        return frames;
    }

    public List<ThreadInfo> threads() {
        return threads;
    }

    /** Names of the context attributes ({@code attributes=a;b;c}), in the recording's order. */
    public List<String> attributeNames() {
        return attributeNames;
    }

    public Collection<Sample> samples() {
        return Collections.unmodifiableList(samples);
    }

    /** The samples of one kind, in order of first appearance. */
    public List<Sample> samples(EventKind kind) {
        List<Sample> out = new ArrayList<>();
        for (Sample s : samples) {
            if (s.kind == kind) {
                out.add(s);
            }
        }
        return out;
    }

    /** Kinds with at least one sample, in {@link EventKind} order. */
    public List<EventKind> kinds() {
        List<EventKind> out = new ArrayList<>();
        for (EventKind k : EventKind.values()) {
            for (Sample s : samples) {
                if (s.kind == k) {
                    out.add(k);
                    break;
                }
            }
        }
        return out;
    }

    /**
     * The sampling interval of a time kind in nanoseconds: from the recording
     * ({@code datadog.DatadogProfilerConfig}, or the {@code period} setting of
     * {@code jdk.ExecutionSample}), else the profiler's default (cpu 10 ms, wall 50 ms); 0 for
     * memory kinds.
     */
    public long intervalNanos(EventKind kind) {
        Long v = intervals.get(kind);
        if (v != null) {
            return v;
        }
        switch (kind) {
            case CPU:
                return 10_000_000L;
            case WALL:
                return 50_000_000L;
            default:
                return 0;
        }
    }

    /** True when {@link #intervalNanos} comes from the recording rather than a default. */
    public boolean intervalRecorded(EventKind kind) {
        return intervals.containsKey(kind);
    }

    /** Total events of a kind. */
    public long totalCount(EventKind kind) {
        return total(kind, s -> s.count);
    }

    /** Total value of a kind ({@link Sample#value}). */
    public long totalValue(EventKind kind) {
        return total(kind, s -> s.value);
    }

    private long total(EventKind kind, java.util.function.ToLongFunction<Sample> of) {
        long n = 0;
        for (Sample s : samples) {
            if (s.kind == kind) {
                n += of.applyAsLong(s);
            }
        }
        return n;
    }

    /**
     * A sample's value in the kind's unit: nanoseconds for cpu/wall ({@code value * interval}),
     * bytes for alloc/live.
     */
    public long valueInUnit(Sample s) {
        if (s.kind == EventKind.WALL) {
            return Math.round(s.scaled * intervalNanos(s.kind));
        }
        return s.kind.isTime() ? s.value * intervalNanos(s.kind) : s.value;
    }

    /**
     * The value as a count of what the kind counts, wall corrected for the threads each tick chose
     * from ({@link Sample#scaled}): what OTLP writes beside the period.
     */
    public long correctedValue(Sample s) {
        return s.kind == EventKind.WALL ? Math.round(s.scaled) : s.value;
    }
}
