package com.datadoghq.profiler.export;

import java.util.Locale;

/**
 * The kinds of sample a recording can hold, the JFR event types each is read from, and what a
 * sample of that kind is worth.
 *
 * <ul>
 *   <li>{@code cpu}: {@code datadog.ExecutionSample} and the JDK's {@code jdk.ExecutionSample};
 *       value = the event's {@code weight} (1 + timer overruns; 1 when the event has none), so
 *       values add up to sampling intervals of CPU time.</li>
 *   <li>{@code wall}: {@code datadog.MethodSample}, and async-profiler's {@code profiler.WallClockSample};
 *       value = {@code weight} as for cpu (async-profiler's {@code samples}: the samples one event
 *       stands for).</li>
 *   <li>{@code alloc}: {@code datadog.ObjectSample}; value = {@code size * weight}, the estimated
 *       bytes allocated that the sample stands for ({@code weight} is the float scaling factor).</li>
 *   <li>{@code live}: {@code datadog.HeapLiveObject}; value = {@code size * weight}, the estimated
 *       live bytes.</li>
 *   <li>{@code malloc}: {@code datadog.NativeMemoryAllocation} ({@code nativemem}); value =
 *       {@code size * weight}, the estimated bytes of native memory allocated.</li>
 *   <li>{@code socket}: {@code datadog.NativeSocketEvent} ({@code natsock}); value =
 *       {@code duration * weight}, the estimated nanoseconds spent in TCP socket calls (the
 *       calls are sampled by their duration).</li>
 * </ul>
 */
public enum EventKind {
    CPU("cpu", "nanoseconds", "samples", "cpu", "datadog.ExecutionSample", "jdk.ExecutionSample"),
    WALL("wall", "nanoseconds", "samples", "wall", "datadog.MethodSample", "profiler.WallClockSample"),
    ALLOC("alloc", "bytes", "alloc_samples", "alloc_space", "datadog.ObjectSample"),
    LIVE("live", "bytes", "inuse_objects", "inuse_space", "datadog.HeapLiveObject"),
    MALLOC("malloc", "bytes", "malloc_samples", "malloc_space", "datadog.NativeMemoryAllocation"),
    SOCKET("socket", "nanoseconds", "socket_samples", "socket_time", "datadog.NativeSocketEvent");

    /** The name on the command line ({@code --event cpu}). */
    public final String option;
    /** Unit of {@link #valueType}: nanoseconds for time kinds (and socket), bytes for memory kinds. */
    public final String unit;
    /** pprof/OTLP sample type counting events ("samples", "alloc_samples", "inuse_objects"). */
    public final String countType;
    /** pprof sample type of the weighted value ("cpu", "wall", "alloc_space", "inuse_space"). */
    public final String valueType;
    final String[] eventTypes;

    EventKind(String option, String unit, String countType, String valueType, String... eventTypes) {
        this.option = option;
        this.unit = unit;
        this.countType = countType;
        this.valueType = valueType;
        this.eventTypes = eventTypes;
    }

    /** True for cpu and wall, whose values are counts of sampling intervals. */
    public boolean isTime() {
        return this == CPU || this == WALL;
    }

    /**
     * True for a {@code jdk.ExecutionSample} in a recording whose metadata also declares
     * {@code datadog.ExecutionSample}: the copy of a CPU sample that ddprof's {@code jdksamples}
     * writes for JDK tools, counted once, through the datadog event.
     */
    public static boolean isCopy(String eventType, boolean declaresDatadogCpu) {
        return declaresDatadogCpu && "jdk.ExecutionSample".equals(eventType);
    }

    /** Whether a recording's event types include ddprof's CPU sample. */
    public static boolean declaresDatadogCpu(java.util.List<jdk.jfr.EventType> types) {
        return types.stream().anyMatch(t -> "datadog.ExecutionSample".equals(t.getName()));
    }

    /** The kind a JFR event type belongs to, or null if it holds no samples we read. */
    public static EventKind ofEventType(String eventType) {
        for (EventKind k : values()) {
            for (String t : k.eventTypes) {
                if (t.equals(eventType)) {
                    return k;
                }
            }
        }
        return null;
    }

    /** {@code cpu|wall|alloc|live|malloc|socket}, or null. */
    public static EventKind ofOption(String option) {
        for (EventKind k : values()) {
            if (k.option.equals(option.toLowerCase(Locale.ROOT))) {
                return k;
            }
        }
        return null;
    }

    /** The kinds' command-line names joined by {@code separator}: "cpu|wall|...". */
    public static String optionList(String separator) {
        StringBuilder b = new StringBuilder();
        for (EventKind k : values()) {
            b.append(b.length() == 0 ? "" : separator).append(k.option);
        }
        return b.toString();
    }

    /** This kind's JFR event types, comma-separated. */
    public String eventTypeNames() {
        return String.join(", ", eventTypes);
    }

    /** Every kind's JFR event types, comma-separated. */
    public static String allEventTypeNames() {
        StringBuilder b = new StringBuilder();
        for (EventKind k : values()) {
            b.append(b.length() == 0 ? "" : ", ").append(k.eventTypeNames());
        }
        return b.toString();
    }
}
