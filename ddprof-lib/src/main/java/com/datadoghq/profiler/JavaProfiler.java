package com.datadoghq.profiler;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The Java entry point of ddprof: a process-wide singleton wrapping the native profiler.
 *
 * <p>The first {@code getInstance} call loads {@code libjavaProfiler.so} (see
 * {@link LibraryLoader} for where it is found). Everything else is a thin call into the native
 * core, which also does all argument checking: bad input arrives here as
 * {@link IllegalArgumentException}, a call at the wrong time (for example {@code stop} while idle)
 * as {@link IllegalStateException}. Java only turns {@code null} arguments into
 * {@link IllegalArgumentException} so that no call ends in a {@link NullPointerException}.
 *
 * <p>The API mirrors DataDog's java-profiler ({@code com.datadoghq.profiler.JavaProfiler}), so
 * code written for it compiles and runs against this class unchanged.
 */
public final class JavaProfiler {
    private static JavaProfiler instance;

    private JavaProfiler() {
    }

    /**
     * The profiler, backed by the bundled native library extracted into {@code java.io.tmpdir}.
     *
     * @throws IOException if the native library cannot be found or loaded
     */
    public static JavaProfiler getInstance() throws IOException {
        return getInstance(null, null);
    }

    /**
     * The profiler, backed by the bundled native library extracted into {@code scratchDir}.
     *
     * @param scratchDir directory for the extracted library; {@code null} means {@code java.io.tmpdir}
     * @throws IOException if the native library cannot be found or loaded
     */
    public static JavaProfiler getInstance(String scratchDir) throws IOException {
        return getInstance(null, scratchDir);
    }

    /**
     * The profiler, backed by the library at {@code libLocation} (or, if that is {@code null}, the
     * bundled one extracted into {@code scratchDir}). Only the first successful call loads
     * anything; later calls return the same instance whatever they pass.
     *
     * @param libLocation the native library file to use instead of the bundled one, or {@code null}
     * @param scratchDir  directory for the extracted library; ignored when {@code libLocation} is set
     * @throws IOException if the native library cannot be found or loaded
     */
    public static synchronized JavaProfiler getInstance(String libLocation, String scratchDir) throws IOException {
        if (instance != null) {
            return instance;
        }
        LibraryLoader.Result result = LibraryLoader.builder()
                .withLibraryLocation(libLocation)
                .withScratchDir(scratchDir)
                .load();
        if (!result.succeeded) {
            throw new IOException("Failed to load the ddprof native library", result.error);
        }
        instance = new JavaProfiler();
        return instance;
    }

    /**
     * Runs a profiler command: comma-separated {@code key[=value]} options, for example
     * {@code "start,cpu=10ms,file=profile.jfr"}.
     *
     * @return the command's output ({@code "Profiling started\n"} for {@code start})
     * @throws IllegalArgumentException if the command cannot be parsed (or is {@code null})
     * @throws IllegalStateException    if the command does not fit the profiler's state
     * @throws IOException              if an output file cannot be created
     */
    public String execute(String command) throws IllegalArgumentException, IllegalStateException, IOException {
        if (command == null) {
            throw new IllegalArgumentException("command must not be null");
        }
        return execute0(command);
    }

    /**
     * Stops profiling and completes the {@code file=} recording.
     *
     * @throws IllegalStateException if the profiler is not running
     */
    public void stop() throws IllegalStateException {
        stop0();
    }

    /**
     * Writes what was recorded since the previous dump (or the start) to {@code recording} as a
     * JFR file. Does nothing while the profiler is idle.
     *
     * @param recording where to write the JFR file
     * @throws IllegalArgumentException if {@code recording} is {@code null}
     * @throws UncheckedIOException     if the file cannot be written
     */
    public void dump(Path recording) {
        if (recording == null) {
            throw new IllegalArgumentException("recording path must not be null");
        }
        try {
            dump0(recording.toAbsolutePath().toString());
        } catch (IOException e) {
            // Upstream's dump(Path) declares no checked exception; keep that signature.
            throw new UncheckedIOException("Failed to dump the recording to " + recording, e);
        }
    }

    /**
     * A human-readable status block. Its {@code "Running          : true"} line (ten spaces) is
     * what integrations wait for.
     */
    public String getStatus() {
        return getStatus0();
    }

    /** The number of samples taken since the profiler last started. */
    public static long getSamples() {
        return getSamples0();
    }

    /** The native library's version string. */
    public String getVersion() {
        return getVersion0();
    }

    /**
     * The native core's named counters and gauges, by name, in the order the core lists them.
     * Empty if the core exposes none.
     */
    public Map<String, Long> getDebugCounters() {
        ByteBuffer buffer = getDebugCounters0();
        if (buffer == null || buffer.capacity() == 0) {
            return Collections.emptyMap();
        }
        String[] names = describeDebugCounters0();
        if (names == null) {
            return Collections.emptyMap();
        }
        buffer = buffer.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        Map<String, Long> counters = new LinkedHashMap<>();
        // One counter per 128-byte slot (a cache-line pair, so counters never share a line).
        for (int i = 0; i < names.length && (long) i * 128 + 8 <= buffer.capacity(); i++) {
            counters.put(names[i], buffer.getLong(i * 128));
        }
        return counters;
    }

    /** Records a {@code datadog.ProfilerSetting} event without a unit. */
    public void recordSetting(String name, String value) {
        recordSetting(name, value, "");
    }

    /**
     * Records a {@code datadog.ProfilerSetting} event.
     *
     * @param unit the value's unit; {@code null} is written as {@code ""}
     * @throws IllegalArgumentException if {@code name} is {@code null} (from the native core)
     */
    public void recordSetting(String name, String value, String unit) {
        recordSetting0(name, value, unit == null ? "" : unit);
    }

    /** Adds the calling thread to the profiled threads (with the {@code filter} option). */
    public void addThread() {
        filterThread0(true);
    }

    /** Removes the calling thread from the profiled threads (with the {@code filter} option). */
    public void removeThread() {
        filterThread0(false);
    }

    /**
     * Activates a span on the calling thread: its ids then appear as {@code spanId} /
     * {@code localRootSpanId} in the thread's samples, and up to two custom attributes are set.
     *
     * <p>As upstream, activation is meant to start a fresh attribute set, so that attributes of a
     * previous span do not leak into this one; that reset belongs to the native span write
     * ({@code setContext0}), which Java calls first. A negative slot, or a {@code null} value,
     * skips that attribute; a slot beyond the configured attributes is rejected by the native core
     * with {@link IllegalArgumentException} (after the span ids were written).
     *
     * <p>{@code traceIdHigh} / {@code traceIdLow} are accepted for API compatibility; the samples
     * carry no trace-id field, so they are not stored.
     *
     * @throws IllegalArgumentException if {@code spanId} is 0 (use {@link #clearTraceContext()})
     */
    public void setTraceContext(long rootSpanId, long spanId, long traceIdHigh, long traceIdLow,
                                int slot0, CharSequence v0, int slot1, CharSequence v1) {
        if (spanId == 0) {
            throw new IllegalArgumentException("spanId must be non-zero; use clearTraceContext() to clear the trace context");
        }
        setContext0(spanId, rootSpanId);
        if (slot0 >= 0 && v0 != null) {
            setContextValue0(slot0, v0.toString());
        }
        if (slot1 >= 0 && v1 != null) {
            setContextValue0(slot1, v1.toString());
        }
    }

    /** Clears the calling thread's span ids and custom attributes (span deactivation). */
    public void clearTraceContext() {
        setContext0(0, 0);
    }

    /**
     * Sets one custom attribute of the calling thread.
     *
     * @param slot  the attribute's index in the {@code attributes=} option
     * @param value the value; {@code null} clears the slot
     * @return {@code true} if a value was written, {@code false} if the slot was cleared
     * @throws IllegalArgumentException if the native core rejects {@code slot}
     */
    public boolean setContextValue(int slot, String value) {
        setContextValue0(slot, value);
        return value != null;
    }

    /**
     * Clears one custom attribute of the calling thread.
     *
     * @throws IllegalArgumentException if the native core rejects {@code slot}
     */
    public void clearContextValue(int slot) {
        setContextValue0(slot, null);
    }

    /**
     * Records the completion of a trace root: a {@code datadog.Endpoint} event with the
     * endpoint, the operation (may be {@code null}) and the local root span id.
     *
     * <p>As upstream, {@code sizeLimit} bounds the distinct endpoints of the recording (the
     * dictionary {@code start} empties): an endpoint already seen is always accepted, a new one
     * only while fewer than {@code sizeLimit} are known. A refused endpoint writes nothing. While
     * the profiler is idle nothing is written, but the answer is still the dictionary's.
     *
     * @return whether the endpoint was accepted; {@code false} for a {@code null} endpoint
     */
    public boolean recordTraceRoot(long rootSpanId, String endpoint, String operation, int sizeLimit) {
        return recordTrace0(rootSpanId, endpoint, operation, sizeLimit);
    }

    /**
     * Records the completion of a trace root without an operation; see
     * {@link #recordTraceRoot(long, String, String, int)}.
     */
    @Deprecated
    public boolean recordTraceRoot(long rootSpanId, String endpoint, int sizeLimit) {
        return recordTrace0(rootSpanId, endpoint, null, sizeLimit);
    }

    /**
     * The current time on the clock of the recording's events (CLOCK_MONOTONIC nanoseconds; the
     * chunk header's ticks per second is 1,000,000,000), for {@link #recordQueueTime} and
     * {@link #isThresholdExceeded}.
     */
    public long getCurrentTicks() {
        return currentTicks0();
    }

    /** Whether more than {@code thresholdMillis} passed between two {@link #getCurrentTicks()} values. */
    public boolean isThresholdExceeded(long thresholdMillis, long startTicks, long endTicks) {
        return endTicks - startTicks > thresholdMillis * TICKS_PER_MILLISECOND;
    }

    /**
     * Records how long a task waited in a queue: a {@code datadog.QueueTime} event from
     * {@code startTicks} (enqueued) lasting until {@code endTicks} (dequeued), both
     * {@link #getCurrentTicks()} values, on the calling thread with its trace context. As
     * upstream, every call while the profiler runs is an event: callers apply their threshold
     * first with {@link #isThresholdExceeded}. No event when {@code origin} has no native
     * thread (not started, ended, or virtual).
     *
     * @param task the class of the task
     * @param scheduler the class of the thread pool or executor that ran it
     * @param queueType the class of the queue
     * @param queueLength the queue's length when the task was enqueued
     * @param origin the thread the task was submitted on
     */
    public void recordQueueTime(long startTicks, long endTicks, Class<?> task, Class<?> scheduler,
                                Class<?> queueType, int queueLength, Thread origin) {
        recordQueueEnd0(startTicks, endTicks, task == null ? null : task.getName(),
                scheduler == null ? null : scheduler.getName(), origin,
                queueType == null ? null : queueType.getName(), queueLength);
    }

    /**
     * The form older tracers call (dd-java-agent 1.40), from before the queue's type and length
     * were recorded: the event has no {@code queueType} and a {@code queueLength} of 0.
     */
    @Deprecated
    public void recordQueueTime(long startTicks, long endTicks, Class<?> task, Class<?> scheduler,
                                Thread origin) {
        recordQueueEnd0(startTicks, endTicks, task == null ? null : task.getName(),
                scheduler == null ? null : scheduler.getName(), origin, null, 0);
    }

    // Natives of the endpoint and queue-time events (ddprof-native/src/api/tracing.rs).

    private static final long TICKS_PER_MILLISECOND = 1_000_000L;

    private static native boolean recordTrace0(long rootSpanId, String endpoint, String operation, int sizeLimit);

    private static native void recordQueueEnd0(long startTicks, long endTicks, String task, String scheduler,
                                               Thread origin, String queueType, int queueLength);

    private static native long currentTicks0();

    // Package-private hooks for park/block instrumentation. Upstream uses them to tell the
    // wall-clock sampler that a thread is parked or blocked. ddprof has no wall-clock engine yet,
    // so there is nothing to tell: they are deliberate no-ops, kept so instrumentation that calls
    // them keeps linking.

    void parkEnter() {
    }

    void parkExit(long blocker, long unblockingSpanId) {
    }

    /** @return a token for {@link #blockExit(long)}; always 0 (nothing armed). */
    long blockEnter(int state) {
        return 0;
    }

    void blockExit(long token) {
    }

    // ---- native methods, implemented in ddprof-native/src/api as
    // ---- Java_com_datadoghq_profiler_JavaProfiler_<name> (the tests' probes are in
    // ---- internal.Diagnostics)

    private native String execute0(String command) throws IllegalArgumentException, IllegalStateException, IOException;

    private native void stop0() throws IllegalStateException;

    private native void dump0(String path) throws IOException;

    private native String getStatus0();

    private static native long getSamples0();

    private static native String getVersion0();

    private static native ByteBuffer getDebugCounters0();

    private static native String[] describeDebugCounters0();

    private static native void recordSetting0(String name, String value, String unit);

    private static native void filterThread0(boolean add);

    private static native void setContext0(long spanId, long rootSpanId);

    /** A {@code null} value clears the slot. */
    private static native void setContextValue0(int slot, String value);
}
