package com.datadoghq.profiler.export;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
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
            return Objects.hash(className, method, descriptor, line, type) * 31 + bci;
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
        /** Earliest and latest event time (epoch nanoseconds). */
        public long firstNanos = Long.MAX_VALUE;
        public long lastNanos = Long.MIN_VALUE;
        /**
         * With {@link Profile#bucketNanos} set: (time bucket, value) pairs in the order the events came,
         * a bucket repeated where events of other samples came between; {@link #timeline()} merges them.
         */
        private long[] times;
        private int timesSize;

        Sample(EventKind kind, int[] stack, int thread, long spanId, long localRootSpanId, String[] attributes) {
            this.kind = kind;
            this.stack = stack;
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

    private static final class Key {
        final EventKind kind;
        final int[] stack;
        final int thread;
        final long spanId;
        final long localRootSpanId;
        final String[] attributes;
        final int hash;

        Key(EventKind kind, int[] stack, int thread, long spanId, long localRootSpanId, String[] attributes) {
            this.kind = kind;
            this.stack = stack;
            this.thread = thread;
            this.spanId = spanId;
            this.localRootSpanId = localRootSpanId;
            this.attributes = attributes;
            // By hand: Objects.hash would box five values per event.
            int h = kind.hashCode();
            h = 31 * h + Arrays.hashCode(stack);
            h = 31 * h + thread;
            h = 31 * h + Long.hashCode(spanId);
            h = 31 * h + Long.hashCode(localRootSpanId);
            this.hash = 31 * h + Arrays.hashCode(attributes);
        }

        @Override
        public boolean equals(Object o) {
            if (!(o instanceof Key)) {
                return false;
            }
            Key k = (Key) o;
            return hash == k.hash && kind == k.kind && thread == k.thread && spanId == k.spanId
                    && localRootSpanId == k.localRootSpanId && Arrays.equals(stack, k.stack)
                    && Arrays.equals(attributes, k.attributes);
        }

        @Override
        public int hashCode() {
            return hash;
        }
    }

    private final List<Frame> frames = new ArrayList<>();
    private final Map<Frame, Integer> frameIds = new HashMap<>();
    private final List<ThreadInfo> threads = new ArrayList<>();
    private final Map<ThreadInfo, Integer> threadIds = new HashMap<>();
    private final List<String> attributeNames = new ArrayList<>();
    private final Map<Key, Sample> samples = new LinkedHashMap<>();
    private final Map<EventKind, Long> intervals = new EnumMap<>(EventKind.class);
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
        return intern(frames, frameIds, f);
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

    Sample sample(EventKind kind, int[] stack, int thread, long spanId, long localRootSpanId, String[] attributes) {
        Key key = new Key(kind, stack, thread, spanId, localRootSpanId, attributes);
        return samples.computeIfAbsent(key,
                k -> new Sample(kind, stack, thread, spanId, localRootSpanId, attributes));
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
        return samples.values();
    }

    /** The samples of one kind, in order of first appearance. */
    public List<Sample> samples(EventKind kind) {
        List<Sample> out = new ArrayList<>();
        for (Sample s : samples.values()) {
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
            for (Sample s : samples.values()) {
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
        for (Sample s : samples.values()) {
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
