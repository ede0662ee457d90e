package com.datadoghq.profiler.export;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;


import com.datadoghq.profiler.export.JfrEvents.Event;

/**
 * Reads a JFR recording (ddprof's or the JDK's own) into a {@link Profile}, through {@link
 * JfrEvents} (our own chunk reader by default, the JDK's parser on request). Which events are samples of which kind, and what each is
 * worth, is {@link EventKind}'s; class naming is {@link Recorded}'s.
 */
public final class JfrProfileReader {
    /**
     * ddprof's context-attribute fields ({@code attributes=a;b;c}) are the fields that follow
     * this one in a sample event. (Their type, a one-field constant-pool type, reaches the
     * reader flattened to java.lang.String, so the type does not tell them apart.)
     */
    static final String LAST_FIXED_FIELD = "localRootSpanId";
    static final String PROFILER_CONFIG = "datadog.DatadogProfilerConfig";
    static final String ACTIVE_SETTING = "jdk.ActiveSetting";
    static final String JVM_INFORMATION = "jdk.JVMInformation";
    static final String JDK_EXECUTION_SAMPLE = "jdk.ExecutionSample";
    static final String TRACE_LINK = "datadog.TraceLink";
    static final String NATIVE_MEMORY_FREE = "datadog.NativeMemoryFree";

    private final Set<EventKind> kinds;
    private final Instant from;
    private final Instant to;
    /** {@link #from}, {@link #to} in epoch nanoseconds. */
    private final long fromNanos;
    private final long toNanos;
    private boolean leaks;
    private boolean rawNames;
    private boolean bytecodeIndexes;
    private long bucketNanos;
    private boolean stacksOnly;
    private StackFilter filter = StackFilter.ALL;
    /** Thread states kept ({@link #states}), normalised by {@link #state}; null: all. */
    private Set<String> states;
    private PrintStream progressOut;
    /** Read before the samples when wall samples are asked for. */
    private WallEpochs epochs = WallEpochs.NONE;

    /**
     * @param kinds the kinds to keep (empty: all)
     * @param from  keep events at or after this time (null: from the start)
     * @param to    keep events before this time (null: to the end)
     */
    public JfrProfileReader(Set<EventKind> kinds, Instant from, Instant to) {
        this.kinds = kinds.isEmpty() ? EnumSet.allOf(EventKind.class) : EnumSet.copyOf(kinds);
        this.from = from;
        this.to = to;
        this.fromNanos = from == null ? Long.MIN_VALUE : epochNanos(from);
        this.toNanos = to == null ? Long.MAX_VALUE : epochNanos(to);
    }

    /** Saturating: an instant outside the nanosecond range compares as its end of it. */
    private static long epochNanos(Instant t) {
        try {
            return Math.addExact(Math.multiplyExact(t.getEpochSecond(), 1_000_000_000L), t.getNano());
        } catch (ArithmeticException e) {
            return t.getEpochSecond() < 0 ? Long.MIN_VALUE : Long.MAX_VALUE;
        }
    }

    /**
     * Keep only native allocations ({@code datadog.NativeMemoryAllocation}) still live at the end of
     * the recording: those with no {@code datadog.NativeMemoryFree} of their address after them (an
     * allocation at the same address later also means the earlier block was freed).
     */
    public JfrProfileReader leaksOnly() {
        this.leaks = true;
        return this;
    }

    /** Class names as recorded, lambda counters and hidden-class addresses included ({@link ClassNames}). */
    public JfrProfileReader rawNames(boolean raw) {
        this.rawNames = raw;
        return this;
    }

    /** Keeps each frame's bytecode index ({@link Profile.Frame#bci}); by default 0. */
    public JfrProfileReader bytecodeIndexes(boolean keep) {
        this.bytecodeIndexes = keep;
        return this;
    }

    /**
     * Keeps each sample's value per time bucket of {@code nanos} from the recording's start
     * ({@link Profile.Sample#timeline()}, for a heatmap); 0: not kept.
     */
    public JfrProfileReader timeBuckets(long nanos) {
        this.bucketNanos = nanos;
        return this;
    }

    /**
     * Prints a progress line on {@code out} during a long read ({@link Progress}); for a terminal
     * only: the line is rewritten in place.
     */
    public JfrProfileReader progress(PrintStream out) {
        this.progressOut = out;
        return this;
    }

    /**
     * Keeps only the samples of events that carry a thread state (CPU and wall samples) in one of
     * {@code states} ({@code --state}): names as recorded, case and a {@code STATE_} prefix aside
     * ({@code runnable} matches ddprof's {@code RUNNABLE} and async-profiler's
     * {@code STATE_RUNNABLE}). Events without a state field are kept.
     */
    public JfrProfileReader states(Set<String> keep) {
        Set<String> normalised = new HashSet<>();
        for (String k : keep) {
            normalised.add(state(k));
        }
        this.states = normalised;
        return this;
    }

    static String state(String recorded) {
        String s = recorded.trim().toUpperCase(Locale.ROOT);
        return s.startsWith("STATE_") ? s.substring("STATE_".length()) : s;
    }

    /**
     * Samples told apart by their stack alone, not by thread, span ids or attributes (the profile has
     * none of them): for an output that shows nothing else (collapsed stacks without threads), which
     * then neither looks up each event's thread nor keeps a sample per thread.
     */
    public JfrProfileReader stacksOnly(boolean only) {
        this.stacksOnly = only;
        return this;
    }

    /** Keeps only the samples {@code filter} keeps ({@code --include}, {@code --exclude}). */
    public JfrProfileReader filter(StackFilter filter) {
        this.filter = filter;
        return this;
    }

    public static Profile readAll(Path file) throws IOException {
        return new JfrProfileReader(Collections.emptySet(), null, null).read(file);
    }

    public Profile read(Path file) throws IOException {
        return read(Collections.singletonList(file));
    }

    /**
     * The samples of several recordings in one profile (e.g. the files of one service's dumps):
     * stacks, threads and attributes merged by name, the profile's span from the earliest chunk to
     * the latest end.
     */
    public Profile read(List<Path> files) throws IOException {
        Profile profile = new Profile();
        List<String> attributeNames = new ArrayList<>();
        long[] span = Recorded.span(files);
        profile.startNanos = span[0];
        profile.endNanos = span[1];
        profile.bucketNanos = bucketNanos;
        for (Path file : files) {
            try {
                readInto(file, profile, attributeNames);
            } catch (IOException | RuntimeException e) {
                throw new FileFailure(file, e);
            }
        }
        profile.setAttributeNames(attributeNames);
        return profile;
    }

    /** A file of several that the parser could not read: which one, and what it threw. */
    public static final class FileFailure extends IOException {
        private static final long serialVersionUID = 1L;
        public final Path file;

        FileFailure(Path file, Exception cause) {
            // One line: what a damaged file makes the reader throw may quote its bytes, line breaks too.
            super((file + ": " + cause).replace('\n', ' ').replace('\r', ' '), cause);
            this.file = file;
        }
    }

    private void readInto(Path file, Profile profile, List<String> attributeNames) throws IOException {
        stacks.clear();
        methods.clear();
        threadIndex.clear();
        // Which types the file declares: to tell jdk.ExecutionSample copies of CPU samples
        // (jdksamples) and the JDK's own period settings apart, and whether there are wall epochs;
        // the metadata alone is read.
        Map<Long, String> typeNames = JfrEvents.eventTypes(file);
        // The epochs may follow the samples they describe in a chunk: a pass of their own, when the
        // recording declares them (async-profiler's and the JDK's do not).
        epochs = kinds.contains(EventKind.WALL) && typeNames.containsValue(WallEpochs.EVENT) ? WallEpochs.read(file)
                : WallEpochs.NONE;
        boolean datadogCpu = typeNames.containsValue("datadog.ExecutionSample");
        Set<String> wanted = new HashSet<>(Arrays.asList(PROFILER_CONFIG, ACTIVE_SETTING, TRACE_LINK, JVM_INFORMATION));
        for (EventKind k : leaks ? EnumSet.of(EventKind.MALLOC) : kinds) {
            for (String t : k.eventTypes) {
                if (!EventKind.isCopy(t, datadogCpu)) {
                    wanted.add(t);
                }
            }
        }
        if (leaks) {
            wanted.add(NATIVE_MEMORY_FREE);
        }
        Pass pass = new Pass(profile, typeNames, attributeNames);
        Progress progress = progressOut == null ? null
                : new Progress(progressOut, "convert", profile.startNanos, profile.endNanos);
        try {
            // The pass itself when there is no progress line: no lambda between the reader and it
            // for C2 to compile the per-event code into a second time.
            JfrEvents.forEach(file, wanted, leaks, progress == null ? pass : e -> {
                progress.event(e.startNanos());
                pass.accept(e);
            });
        } finally {
            if (progress != null) {
                progress.done();
            }
        }
        if (leaks) {
            for (Event event : live(pass.allocations, pass.frees)) {
                addSample(profile, EventKind.MALLOC, event, pass.typeOf(event), attributeNames.size());
            }
        }
    }

    /**
     * What a sample's event type holds, worked out at its first event: its fields by index (the
     * per-event reads look nothing up by name).
     */
    private static final class SampleType {
        final EventKind kind;
        /** The context-attribute fields, and for each its index in the profile's attribute names. */
        final int[] attrFields;
        final int[] attrSlots;
        /** jdk.ExecutionSample names its thread sampledThread; ddprof's events eventThread. -1: none. */
        final int threadField;
        final int spanField;
        final int rootField;
        final int stateField;
        /** What an event is worth ({@link #value}): its weight (or samples), size; -1 when absent. */
        final int weightField;
        final int sizeField;
        /** The profile's count of this type's events ({@link Profile#eventTypes}). */
        final long[] events;
        /** Whether its events name their stack trace by key ({@link Event#hasStackKey}). */
        final boolean stackKeys;
        /**
         * By stack-trace key, what {@link #addSample} made of it: the stack's id, {@link #DROPPED}, or
         * with {@link #stacksOnly} the sample. A type object, and so this, is one chunk's, as its keys.
         */
        final LongMap<Object> byStackKey = new LongMap<>();
        /** Whether its events name their thread by key ({@link Event#hasKey}); by that key, the profile's thread index. */
        final boolean threadKeys;
        final LongMap<Integer> byThreadKey = new LongMap<>();
        /**
         * Whether its samples differ by stack and thread alone (keys for both; no span ids or
         * attributes: async-profiler's and the JDK's events): then by the pair of keys, the sample
         * (or {@link #DROPPED}).
         */
        final boolean sampleKeys;
        final LongPairMap<Object> bySampleKeys = new LongPairMap<>();

        SampleType(EventKind kind, Event type, List<String> attributeNames, Profile profile) {
            this.kind = kind;
            this.events = profile.eventCounter(kind, type.typeName());
            this.stackKeys = type.hasStackKey();
            List<String> names = new ArrayList<>();
            boolean after = false;
            String thread = null;
            for (String d : type.fieldNames()) {
                if (after) {
                    names.add(d);
                }
                after |= LAST_FIXED_FIELD.equals(d);
                if (thread == null && (d.equals("sampledThread") || d.equals("eventThread"))) {
                    thread = d;
                }
            }
            attrFields = new int[names.size()];
            attrSlots = new int[attrFields.length];
            for (int i = 0; i < attrFields.length; i++) {
                attrFields[i] = type.field(names.get(i));
                int at = attributeNames.indexOf(names.get(i));
                if (at < 0) {
                    at = attributeNames.size();
                    attributeNames.add(names.get(i));
                }
                attrSlots[i] = at;
            }
            threadField = thread == null ? -1 : type.field(thread);
            threadKeys = threadField >= 0 && type.hasKey(threadField);
            spanField = type.field("spanId");
            rootField = type.field("localRootSpanId");
            stateField = type.field("state");
            sampleKeys = stackKeys && threadKeys && spanField < 0 && rootField < 0 && attrFields.length == 0;
            int weight = type.field("weight");
            weightField = weight < 0 && kind.isTime() ? type.field("samples") : weight;
            sizeField = type.field("size");
        }

        /** What one event is worth: see {@link EventKind}. */
        long value(Event event) {
            if (kind.isTime()) {
                long w = weightField < 0 ? 1 : event.getLong(weightField);
                return w > 0 ? w : 1;
            }
            double weight = weightField < 0 ? 1 : event.getDouble(weightField);
            if (!(weight > 0)) {
                weight = 1;
            }
            if (kind == EventKind.SOCKET) {
                return Math.round(event.durationNanos() * weight);
            }
            return Math.round((sizeField < 0 ? 0 : event.getLong(sizeField)) * weight);
        }
    }

    /** One read of a file: its events in, the profile out. */
    private final class Pass implements Consumer<Event> {
        final Profile profile;
        final Map<Long, String> typeNames;
        final List<String> attributeNames;
        /** Per event type object (one per chunk's metadata): null for the side events. */
        final Map<Object, SampleType> types = new IdentityHashMap<>();
        /** --leak: native allocations and frees, matched once everything is read. */
        final List<Event> allocations = new ArrayList<>();
        final List<Event> frees = new ArrayList<>();

        Pass(Profile profile, Map<Long, String> typeNames, List<String> attributeNames) {
            this.profile = profile;
            this.typeNames = typeNames;
            this.attributeNames = attributeNames;
        }

        /** The last event's type and what it holds: most events follow one of their own type. */
        private Object lastType;
        private SampleType lastSample;

        /** What {@code event}'s type holds, worked out at its type's first event; null for side events. */
        SampleType typeOf(Event event) {
            Object type = event.type();
            if (type == lastType) {
                return lastSample;
            }
            lastType = type;
            lastSample = typeOfNew(event, type);
            return lastSample;
        }

        private SampleType typeOfNew(Event event, Object type) {
            Object memo = event.memo(type, this);
            if (memo != null) {
                return memo == NO_SAMPLES ? null : (SampleType) memo;
            }
            SampleType t = types.get(type);
            if (t == null && !types.containsKey(type)) {
                EventKind kind = EventKind.ofEventType(event.typeName());
                t = kind == null ? null : new SampleType(kind, event, attributeNames, profile);
                types.put(type, t);
            }
            event.memo(type, this, t == null ? NO_SAMPLES : t);
            return t;
        }

        @Override
        public void accept(Event event) {
            SampleType sample = typeOf(event);
            if (sample == null) {
                if (leaks && NATIVE_MEMORY_FREE.equals(event.typeName())) {
                    frees.add(event);
                } else {
                    readSide(event, event.typeName(), typeNames, profile);
                }
                return;
            }
            if (from != null || to != null) {
                long time = event.startNanos();
                if ((from != null && time < fromNanos) || (to != null && time >= toNanos)) {
                    return;
                }
            }
            if (states != null && sample.stateField >= 0) {
                String v = event.text(sample.stateField);
                if (v == null || !states.contains(state(v))) {
                    return;
                }
            }
            if (leaks) {
                allocations.add(event);
                return;
            }
            addSample(profile, sample.kind, event, sample, attributeNames.size());
        }
    }

    /** {@link Pass#typeOf}'s memo of a type without samples. */
    private static final Object NO_SAMPLES = new Object();

    /** The allocations no later free (or later allocation) of their address ended, in time order. */
    static List<Event> live(List<Event> allocations, List<Event> frees) {
        List<Event> all = new ArrayList<>(allocations);
        all.addAll(frees);
        // By time; at the same instant an allocation comes before a free of its address.
        all.sort((a, b) -> {
            int c = Long.compare(a.startNanos(), b.startNanos());
            if (c != 0) {
                return c;
            }
            return Boolean.compare(isFree(a), isFree(b));
        });
        Map<Long, Event> byAddress = new java.util.LinkedHashMap<>();
        for (Event e : all) {
            long address = e.getLong("address");
            if (isFree(e)) {
                byAddress.remove(address);
            } else {
                byAddress.remove(address);
                byAddress.put(address, e);
            }
        }
        return new ArrayList<>(byAddress.values());
    }

    private static boolean isFree(Event e) {
        return NATIVE_MEMORY_FREE.equals(e.typeName());
    }

    /**
     * Memos keyed by the parser's objects. The JDK's parser resolves each constant-pool entry of a
     * chunk (a stack trace, a method, a thread) to one object that every event of the chunk shares,
     * so most samples repeat a stack trace already converted. Keyed by identity: a miss only costs
     * the conversion. Emptied past {@link #MEMO_LIMIT} entries, which keeps a long recording's old
     * chunks from being held through them.
     */
    private final Map<Object, Integer> stacks = new IdentityHashMap<>();
    private final Map<Object, Profile.Frame> methods = new IdentityHashMap<>();
    private final Map<Object, Integer> threadIndex = new IdentityHashMap<>();
    /** The memo of a stack the filter drops (a stack's id is 0 or more); compared by identity. */
    private static final Integer DROPPED = -1;
    static final int MEMO_LIMIT = 1 << 16;

    private void addSample(Profile profile, EventKind kind, Event event, SampleType type, int attrCount) {
        if (!type.stackKeys) {
            addSample(profile, kind, event, type, attrCount, stackId(profile, event));
            return;
        }
        if (type.sampleKeys && !stacksOnly) {
            long stackKey = event.stackKey();
            long threadKey = event.key(type.threadField);
            Object sample = type.bySampleKeys.get(stackKey, threadKey);
            if (sample == null) {
                Integer stack = stackByKey(profile, event, type, stackKey);
                sample = stack == DROPPED ? DROPPED
                        : profile.sample(kind, stack, threadByKey(profile, event, type, threadKey), 0, 0, null);
                type.bySampleKeys.putNew(stackKey, threadKey, sample);
            }
            if (sample != DROPPED) {
                add(profile, (Profile.Sample) sample, kind, event, type);
            }
            return;
        }
        // The events of a chunk mostly repeat a few stack keys: what the first of a key found is kept
        // by the key, with no look-up of the trace in the chunk's pool per event.
        long key = event.stackKey();
        Object known = type.byStackKey.get(key);
        if (known == null) {
            Integer stack = stackId(profile, event);
            known = stack == DROPPED || !stacksOnly ? stack : profile.sample(kind, stack, -1, 0, 0, null);
            type.byStackKey.put(key, known);
        }
        if (known instanceof Profile.Sample) {
            add(profile, (Profile.Sample) known, kind, event, type);
        } else {
            addSample(profile, kind, event, type, attrCount, (Integer) known);
        }
    }

    /** {@link #stackId} through the chunk's memo by stack-trace key. */
    private Integer stackByKey(Profile profile, Event event, SampleType type, long key) {
        Integer stack = (Integer) type.byStackKey.get(key);
        if (stack == null) {
            stack = stackId(profile, event);
            type.byStackKey.put(key, stack);
        }
        return stack;
    }

    /** {@link #threadOf} through the chunk's memo by thread key. */
    private Integer threadByKey(Profile profile, Event event, SampleType type, long key) {
        Integer thread = type.byThreadKey.get(key);
        if (thread == null) {
            thread = threadOf(profile, event, type);
            type.byThreadKey.put(key, thread);
        }
        return thread;
    }

    /** The profile's id of {@code event}'s stack, {@link #DROPPED} when the filter drops it. */
    private Integer stackId(Profile profile, Event event) {
        Object trace = event.stackTrace();
        Integer stack = trace == null ? null : (Integer) event.memo(trace, stacks);
        if (stack == null) {
            stack = trace == null ? null : stacks.get(trace);
            if (stack == null) {
                int[] frames = stackOf(profile, event, trace != null);
                stack = frames == null ? DROPPED : profile.stack(frames);
                if (trace != null) {
                    if (stacks.size() >= MEMO_LIMIT) {
                        stacks.clear();
                    }
                    stacks.put(trace, stack);
                }
            }
            if (trace != null) {
                event.memo(trace, stacks, stack);
            }
        }
        return stack;
    }

    private void addSample(Profile profile, EventKind kind, Event event, SampleType type, int attrCount,
                           Integer stack) {
        if (stack == DROPPED) {
            return;
        }
        if (stacksOnly) {
            add(profile, profile.sample(kind, stack, -1, 0, 0, null), kind, event, type);
            return;
        }
        int thread = -1;
        if (type.threadKeys) {
            thread = threadByKey(profile, event, type, event.key(type.threadField));
        } else if (type.threadField >= 0) {
            thread = threadOf(profile, event, type);
        }
        long spanId = type.spanField < 0 ? 0 : event.getLong(type.spanField);
        long rootSpanId = type.rootField < 0 ? 0 : event.getLong(type.rootField);
        String[] attributes = null;
        for (int i = 0; i < type.attrFields.length; i++) {
            String v = event.text(type.attrFields[i]);
            v = v == null || v.isEmpty() ? null : v;
            if (v != null) {
                if (attributes == null) {
                    attributes = new String[attrCount];
                }
                attributes[type.attrSlots[i]] = v;
            }
        }
        add(profile, profile.sample(kind, stack, thread, spanId, rootSpanId, attributes), kind, event, type);
    }

    /** The profile's index of {@code event}'s thread, -1 when it names none. */
    private Integer threadOf(Profile profile, Event event, SampleType type) {
        Object t = event.thread(type.threadField);
        if (t == null) {
            return -1;
        }
        Integer known = (Integer) event.memo(t, threadIndex);
        if (known == null) {
            known = threadIndex.get(t);
        }
        if (known == null) {
            String name = event.threadName(t);
            known = profile.thread(new Profile.ThreadInfo(name == null ? "" : name,
                    Math.max(0, event.osThreadId(t)), Math.max(0, event.javaThreadId(t))));
            if (threadIndex.size() >= MEMO_LIMIT) {
                threadIndex.clear();
            }
            threadIndex.put(t, known);
        }
        event.memo(t, threadIndex, known);
        return known;
    }

    private void add(Profile profile, Profile.Sample s, EventKind kind, Event event, SampleType type) {
        s.count++;
        type.events[0]++;
        long v = type.value(event);
        s.value += v;
        // The event's time only where something reads it (a ticks-to-nanoseconds division each).
        s.scaled += kind == EventKind.WALL && epochs != WallEpochs.NONE ? v * epochs.factorAt(event.startNanos()) : v;
        if (profile.bucketNanos > 0) {
            profile.atTime(s, event.startNanos(), v);
        }
    }

    /**
     * The profile's frame indices of {@code trace}, root last; null if the filter drops it.
     *
     * <p>One method, the frames named in its loop: it runs once per distinct stack, beside the
     * per-event code that calls it, and at over 325 bytes of bytecode (HotSpot's FreqInlineSize, the
     * same on JDK 11 to 25) C2 compiles it on its own rather than into that caller: the per-event code
     * stays small to compile (docs/benchmarks.md, "Conversion", session 24).
     */
    private int[] stackOf(Profile profile, Event event, boolean hasTrace) {
        int n = hasTrace ? event.frameCount() : 0;
        Profile.Frame[] frames = new Profile.Frame[n];
        for (int i = 0; i < n; i++) {
            Object f = event.frame(i);
            String type = event.frameType(f);
            Object m = event.frameMethod(f);
            // The method's names once per method; the line and type are the frame's own.
            Profile.Frame named = NO_METHOD;
            if (m != null) {
                named = (Profile.Frame) event.memo(m, methods);
                if (named == null) {
                    named = methods.get(m);
                    if (named == null) {
                        named = nameOf(event, m);
                    }
                    event.memo(m, methods, named);
                }
            }
            frames[i] = new Profile.Frame(named.className, named.method, named.descriptor,
                    m == null ? 0 : Math.max(0, event.frameLine(f)), type == null ? "" : type,
                    bytecodeIndexes && m != null ? event.frameBci(f) : 0);
        }
        if (!filter.keepsEverything()) {
            List<String> names = new ArrayList<>(frames.length);
            for (Profile.Frame f : frames) {
                names.add(f.name());
            }
            if (!filter.keeps(names)) {
                return null;
            }
        }
        int[] stack = new int[frames.length];
        for (int i = 0; i < stack.length; i++) {
            stack[i] = profile.frame(frames[i]);
        }
        return stack;
    }

    private static final Profile.Frame NO_METHOD = new Profile.Frame("", "<no method>", "", 0, "");

    private Profile.Frame named(Event event, Object m) {
        Profile.Frame named = (Profile.Frame) event.memo(m, methods);
        if (named == null) {
            named = methods.get(m);
            if (named == null) {
                named = nameOf(event, m);
            }
            event.memo(m, methods, named);
        }
        return named;
    }

    /** A method's names (in a frame without line and type), kept in {@link #methods}. */
    private Profile.Frame nameOf(Event event, Object m) {
        String name = event.methodName(m) == null ? "" : event.methodName(m);
        String descriptor = event.methodDescriptor(m) == null ? "" : event.methodDescriptor(m);
        String cls = event.className(m);
        Profile.Frame named = new Profile.Frame(rawNames ? cls : ClassNames.normalize(cls), name, descriptor, 0, "");
        if (methods.size() >= MEMO_LIMIT) {
            methods.clear();
        }
        methods.put(m, named);
        return named;
    }

    /** Intervals and JVM facts from the events that are not samples. */
    private static void readSide(Event event, String typeName, Map<Long, String> typeNames, Profile profile) {
        switch (typeName) {
            case PROFILER_CONFIG:
                if (event.hasField("cpuInterval")) {
                    profile.interval(EventKind.CPU, event.getLong("cpuInterval") * 1_000_000L);
                }
                if (event.hasField("wallInterval")) {
                    profile.interval(EventKind.WALL, event.getLong("wallInterval") * 1_000_000L);
                }
                break;
            case ACTIVE_SETTING:
                if (JDK_EXECUTION_SAMPLE.equals(typeNames.get(event.getLong("id")))) {
                    // The JDK's "period" ("10 ms"); async-profiler's "interval" and "wall" (nanoseconds).
                    String name = event.getString("name");
                    EventKind k = "wall".equals(name) ? EventKind.WALL
                            : "period".equals(name) || "interval".equals(name) ? EventKind.CPU : null;
                    if (k != null && !profile.intervalRecorded(k)) {
                        profile.interval(k, parsePeriod(event.getString("value")));
                    }
                }
                break;
            case TRACE_LINK:
                profile.traceLink(event.getLong("localRootSpanId"), event.getLong("traceIdHigh"),
                        event.getLong("traceIdLow"));
                break;
            case JVM_INFORMATION:
                if (event.hasField("pid")) {
                    profile.pid = event.getLong("pid");
                }
                if (event.hasField("jvmName") && event.getString("jvmName") != null) {
                    profile.jvm = event.getString("jvmName")
                            + (event.getString("jvmVersion") == null ? "" : " " + event.getString("jvmVersion"));
                }
                break;
            default:
                break;
        }
    }

    /**
     * A JFR period setting ("10 ms", "20 ms", "1 s"; a bare number is nanoseconds, as async-profiler
     * writes its intervals) in nanoseconds; 0 when it is not a time.
     */
    static long parsePeriod(String value) {
        if (value == null) {
            return 0;
        }
        if (value.trim().matches("\\d+")) {
            return Long.parseLong(value.trim());
        }
        String[] parts = value.trim().split("\\s+");
        if (parts.length != 2) {
            return 0;
        }
        long n;
        try {
            n = Long.parseLong(parts[0]);
        } catch (NumberFormatException e) {
            return 0;
        }
        switch (parts[1].toLowerCase(Locale.ROOT)) {
            case "ns":
                return n;
            case "us":
                return n * 1_000L;
            case "ms":
                return n * 1_000_000L;
            case "s":
                return n * 1_000_000_000L;
            default:
                return 0;
        }
    }
}
