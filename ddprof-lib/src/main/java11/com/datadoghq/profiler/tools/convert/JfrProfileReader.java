package com.datadoghq.profiler.tools.convert;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;


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
 * Reads a JFR recording (ddprof's or the JDK's own) into a {@link Profile}, with the JDK's
 * parser ({@code jdk.jfr.consumer}). Which events are samples of which kind, and what each is
 * worth, is {@link EventKind}'s; frame and class naming is {@link Report}'s.
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
    private boolean leaks;
    private boolean rawNames;
    private StackFilter filter = StackFilter.ALL;
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

    /** Keeps only the samples {@code filter} keeps ({@code --include}, {@code --exclude}). */
    JfrProfileReader filter(StackFilter filter) {
        this.filter = filter;
        return this;
    }

    public static Profile readAll(Path file) throws IOException {
        return new JfrProfileReader(Collections.emptySet(), null, null).read(file);
    }

    public Profile read(Path file) throws IOException {
        Profile profile = new Profile();
        // The epochs may follow the samples they describe in a chunk: a pass of their own.
        epochs = kinds.contains(EventKind.WALL) ? WallEpochs.read(file) : WallEpochs.NONE;
        List<long[]> chunks = Recorded.chunkTimes(file);
        if (!chunks.isEmpty()) {
            profile.startNanos = chunks.get(0)[0];
            for (long[] c : chunks) {
                profile.endNanos = Math.max(profile.endNanos, c[0] + c[1]);
            }
        }
        List<String> attributeNames = new ArrayList<>();
        // Per event type: for each attribute field, its index in attributeNames.
        Map<String, int[]> attributeSlots = new HashMap<>();
        Map<String, String[]> attributeFields = new HashMap<>();
        Map<Long, String> typeNames = new HashMap<>();
        // --leak: native allocations and frees, matched once everything is read.
        List<RecordedEvent> allocations = new ArrayList<>();
        List<RecordedEvent> frees = new ArrayList<>();
        try (RecordingFile recording = new RecordingFile(file)) {
            List<EventType> declared = recording.readEventTypes();
            for (EventType t : declared) {
                typeNames.put(t.getId(), t.getName());
            }
            boolean datadogCpu = EventKind.declaresDatadogCpu(declared);
            while (recording.hasMoreEvents()) {
                RecordedEvent event = recording.readEvent();
                EventType type = event.getEventType();
                String typeName = type.getName();
                if (EventKind.isCopy(typeName, datadogCpu)) {
                    continue;
                }
                EventKind kind = EventKind.ofEventType(typeName);
                if (leaks && NATIVE_MEMORY_FREE.equals(typeName)) {
                    frees.add(event);
                    continue;
                }
                if (leaks && kind != EventKind.MALLOC) {
                    if (kind == null) {
                        readSide(event, typeName, typeNames, profile);
                    }
                    continue;
                }
                if (kind == null) {
                    readSide(event, typeName, typeNames, profile);
                    continue;
                }
                if (!kinds.contains(kind)) {
                    continue;
                }
                Instant time = event.getStartTime();
                if ((from != null && time.isBefore(from)) || (to != null && !time.isBefore(to))) {
                    continue;
                }
                String[] fields = attributeFields.get(typeName);
                if (fields == null) {
                    List<String> names = new ArrayList<>();
                    boolean after = false;
                    for (ValueDescriptor d : type.getFields()) {
                        if (after) {
                            names.add(d.getName());
                        }
                        after |= LAST_FIXED_FIELD.equals(d.getName());
                    }
                    fields = names.toArray(new String[0]);
                    int[] slots = new int[fields.length];
                    for (int i = 0; i < fields.length; i++) {
                        int at = attributeNames.indexOf(fields[i]);
                        if (at < 0) {
                            at = attributeNames.size();
                            attributeNames.add(fields[i]);
                        }
                        slots[i] = at;
                    }
                    attributeFields.put(typeName, fields);
                    attributeSlots.put(typeName, slots);
                }
                if (leaks) {
                    allocations.add(event);
                    continue;
                }
                addSample(profile, kind, event, fields, attributeSlots.get(typeName), attributeNames.size());
            }
        }
        if (leaks) {
            for (RecordedEvent event : live(allocations, frees)) {
                String typeName = event.getEventType().getName();
                addSample(profile, EventKind.MALLOC, event, attributeFields.get(typeName),
                        attributeSlots.get(typeName), attributeNames.size());
            }
        }
        profile.setAttributeNames(attributeNames);
        return profile;
    }

    /** The allocations no later free (or later allocation) of their address ended, in time order. */
    static List<RecordedEvent> live(List<RecordedEvent> allocations, List<RecordedEvent> frees) {
        List<RecordedEvent> all = new ArrayList<>(allocations);
        all.addAll(frees);
        // By time; at the same instant an allocation comes before a free of its address.
        all.sort((a, b) -> {
            int c = a.getStartTime().compareTo(b.getStartTime());
            if (c != 0) {
                return c;
            }
            return Boolean.compare(isFree(a), isFree(b));
        });
        Map<Long, RecordedEvent> byAddress = new java.util.LinkedHashMap<>();
        for (RecordedEvent e : all) {
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

    private static boolean isFree(RecordedEvent e) {
        return NATIVE_MEMORY_FREE.equals(e.getEventType().getName());
    }

    private void addSample(Profile profile, EventKind kind, RecordedEvent event, String[] attrFields,
                                  int[] attrSlots, int attrCount) {
        RecordedStackTrace trace = event.getStackTrace();
        List<RecordedFrame> recorded = trace == null ? Collections.emptyList() : trace.getFrames();
        Profile.Frame[] frames = new Profile.Frame[recorded.size()];
        for (int i = 0; i < frames.length; i++) {
            frames[i] = frame(recorded.get(i), rawNames);
        }
        if (!filter.keepsEverything()) {
            List<String> names = new ArrayList<>(frames.length);
            for (Profile.Frame f : frames) {
                names.add(f.name());
            }
            if (!filter.keeps(names)) {
                return;
            }
        }
        int[] stack = new int[frames.length];
        for (int i = 0; i < stack.length; i++) {
            stack[i] = profile.frame(frames[i]);
        }
        RecordedThread t = thread(event);
        int thread = -1;
        if (t != null) {
            String name = t.getJavaName() != null ? t.getJavaName() : t.getOSName();
            thread = profile.thread(new Profile.ThreadInfo(name == null ? "" : name,
                    Math.max(0, t.getOSThreadId()), Math.max(0, t.getJavaThreadId())));
        }
        long spanId = event.hasField("spanId") ? event.getLong("spanId") : 0;
        long rootSpanId = event.hasField("localRootSpanId") ? event.getLong("localRootSpanId") : 0;
        String[] attributes = null;
        if (attrFields.length > 0) {
            for (int i = 0; i < attrFields.length; i++) {
                String v = attributeValue(event, attrFields[i]);
                if (v != null) {
                    if (attributes == null) {
                        attributes = new String[attrCount];
                    }
                    attributes[attrSlots[i]] = v;
                }
            }
        }
        Profile.Sample s = profile.sample(kind, stack, thread, spanId, rootSpanId, attributes);
        s.count++;
        long v = value(kind, event);
        s.value += v;
        long nanos = event.getStartTime().getEpochSecond() * 1_000_000_000L + event.getStartTime().getNano();
        s.scaled += kind == EventKind.WALL ? v * epochs.factorAt(nanos) : v;
        s.firstNanos = Math.min(s.firstNanos, nanos);
        s.lastNanos = Math.max(s.lastNanos, nanos);
    }

    /** What one event is worth: see {@link EventKind}. */
    public static long value(EventKind kind, RecordedEvent event) {
        if (kind.isTime()) {
            return Recorded.weightOf(event);
        }
        double weight = event.hasField("weight") ? event.getDouble("weight") : 1;
        if (!(weight > 0)) {
            weight = 1;
        }
        if (kind == EventKind.SOCKET) {
            return Math.round(event.getDuration().toNanos() * weight);
        }
        long size = event.hasField("size") ? event.getLong("size") : 0;
        return Math.round(size * weight);
    }

    private static RecordedThread thread(RecordedEvent event) {
        // jdk.ExecutionSample names its thread sampledThread; ddprof's events eventThread.
        for (String field : new String[] {"sampledThread", "eventThread"}) {
            if (event.hasField(field)) {
                Object v = event.getValue(field);
                if (v instanceof RecordedThread) {
                    return (RecordedThread) v;
                }
            }
        }
        return null;
    }

    private static String attributeValue(RecordedEvent event, String field) {
        Object v = event.getValue(field);
        if (v instanceof RecordedObject) {
            RecordedObject o = (RecordedObject) v;
            v = o.hasField("value") ? o.getValue("value") : null;
        }
        if (v == null) {
            return null;
        }
        String s = v.toString();
        return s.isEmpty() ? null : s;
    }

    private static Profile.Frame frame(RecordedFrame f, boolean rawNames) {
        RecordedMethod m = f.getMethod();
        String type = f.getType() == null ? "" : f.getType();
        if (m == null) {
            return new Profile.Frame("", "<no method>", "", 0, type);
        }
        String name = m.getName() == null ? "" : m.getName();
        String descriptor = m.getDescriptor() == null ? "" : m.getDescriptor();
        String cls = Recorded.className(m, rawNames);
        return new Profile.Frame(cls, name, descriptor, Math.max(0, f.getLineNumber()), type);
    }

    /** Intervals and JVM facts from the events that are not samples. */
    private static void readSide(RecordedEvent event, String typeName, Map<Long, String> typeNames, Profile profile) {
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
                if ("period".equals(event.getString("name"))
                        && JDK_EXECUTION_SAMPLE.equals(typeNames.get(event.getLong("id")))
                        && !profile.intervalRecorded(EventKind.CPU)) {
                    profile.interval(EventKind.CPU, parsePeriod(event.getString("value")));
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

    /** A JFR period setting ("10 ms", "20 ms", "1 s") in nanoseconds; 0 when it is not a time. */
    static long parsePeriod(String value) {
        if (value == null) {
            return 0;
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
