package com.datadoghq.profiler;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

import com.datadoghq.profiler.internal.OtlpExport;

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

    /** The native context dictionary's epoch when last looked at (see {@link #execute}). */
    private static volatile int contextEpoch;

    /** Encodings and bytes of recent attribute values (one per process, as the dictionary). */
    private final ContextValueCache contextValueCache = new ContextValueCache();

    /** Each thread's context writer (in place where it can be, else JNI: {@link ContextWriter}). */
    private static final ThreadLocal<ContextWriter> CONTEXT_WRITER = new ThreadLocal<ContextWriter>() {
        @Override
        protected ContextWriter initialValue() {
            return ContextWriter.forCurrentThread();
        }
    };

    private static ContextWriter writer() {
        return CONTEXT_WRITER.get();
    }

    /** The calling thread's context writer kind, "direct" or "jni" (internal.Diagnostics). */
    static String contextWriterKind() {
        return writer().kind();
    }

    /** How the calling thread's writer reaches its record: "unsafe", "buffer" or "jni" (internal.Diagnostics). */
    static String contextWriterAccess() {
        return writer().access();
    }

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
        if (isVirtualThread(Thread.currentThread())) {
            // As upstream: the native core keeps per-thread state that a virtual thread, which
            // moves between carriers, cannot own during initialisation.
            throw new IOException("Cannot initialize profiler on a virtual thread");
        }
        LibraryLoader.Result result = LibraryLoader.builder()
                .withLibraryLocation(libLocation)
                .withScratchDir(scratchDir)
                .load();
        if (!result.succeeded) {
            throw new IOException("Failed to load the ddprof native library", result.error);
        }
        instance = new JavaProfiler();
        contextEpoch = contextEpoch0();
        // The classes of the context writes, loaded here rather than on the application's threads.
        ContextWriter.preload();
        ContextValueCache.preload();
        return instance;
    }

    /** Thread.isVirtual() (JDK 19+), looked up once; this class compiles for JDK 8. */
    private static final java.lang.reflect.Method IS_VIRTUAL = lookupIsVirtual();

    private static java.lang.reflect.Method lookupIsVirtual() {
        // Looked up only where it exists: a failed lookup throws, and exception profilers count it.
        if (!Platform.isJavaVersionAtLeast(19)) {
            return null;
        }
        try {
            return Thread.class.getMethod("isVirtual");
        } catch (NoSuchMethodException e) {
            return null;
        }
    }

    private static boolean isVirtualThread(Thread t) {
        if (IS_VIRTUAL == null) {
            return false;
        }
        try {
            return (Boolean) IS_VIRTUAL.invoke(t);
        } catch (ReflectiveOperationException e) {
            return false;
        }
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
        String action = OtlpExport.action(command);
        // The exporter's options (docs/exporter.md) are checked before the core sees the
        // command: a bad value refuses it with nothing started.
        OtlpExport.Config otlp = OtlpExport.parse(command, System.getenv());
        if (otlp != null && (action.equals("start") || action.equals("resume"))) {
            if (!OtlpExport.available()) {
                throw new IllegalArgumentException("Option 'otlp' needs JDK 11 or later (this is "
                        + System.getProperty("java.version") + ")");
            }
            if (!OtlpExport.hasFile(command)) {
                command = command + ",file=" + OtlpExport.defaultFile();
            }
        }
        if (action.equals("stop") && exporting()) {
            stop();
            return ""; // the core's reply to stop
        }
        String reply;
        try {
            reply = execute0(command);
        } finally {
            // A 'start' clears the native context dictionary; drop encodings cached here.
            refreshContextEpoch();
        }
        if (otlp != null && (action.equals("start") || action.equals("resume"))) {
            startExporter(otlp);
        }
        return reply;
    }

    /** Guards {@link #exporter} and orders dumps, the exporter's chunks and stop. */
    private final Object exportLock = new Object();
    /** The running OTLP exporter, if {@code otlp=} started one. */
    private OtlpExport.Exporter exporter;

    private void startExporter(OtlpExport.Config config) throws IOException {
        synchronized (exportLock) {
            if (exporter != null) {
                return; // a resume of a session that exports already
            }
            try {
                exporter = OtlpExport.start(config, new OtlpExport.Profiler() {
                    @Override
                    public void exportChunk(Path path) {
                        try {
                            exportChunk0(path.toAbsolutePath().toString());
                        } catch (IOException e) {
                            throw new UncheckedIOException(e);
                        }
                    }

                    @Override
                    public String recordingFile() {
                        return recordingFile0();
                    }

                    @Override
                    public void stopSession() {
                        stop();
                    }

                    @Override
                    public void locked(Runnable action) {
                        synchronized (exportLock) {
                            action.run();
                        }
                    }
                });
            } catch (ReflectiveOperationException | RuntimeException e) {
                // Nothing runs half-configured: the session goes with the exporter.
                Throwable cause = e instanceof java.lang.reflect.InvocationTargetException ? e.getCause() : e;
                try {
                    stop0();
                } catch (IOException | RuntimeException ignored) {
                    // the start's error is the one to report
                }
                throw new IOException("Could not start the OTLP exporter: " + cause, cause);
            }
        }
    }

    /**
     * Stops profiling and completes the {@code file=} recording.
     *
     * @throws IllegalStateException if the profiler is not running
     * @throws UncheckedIOException  if the recording cannot be written (the unwritten data is
     *                               kept for the next recording written)
     */
    public void stop() throws IllegalStateException {
        OtlpExport.Exporter e;
        synchronized (exportLock) {
            e = exporter;
            if (e == null) {
                stopNative();
                return;
            }
            exporter = null;
        }
        // The exporter runs stop itself (under exportLock), after its last interval and before
        // the final export; not under the lock here, as its thread may be waiting for it.
        RuntimeException[] failure = new RuntimeException[1];
        e.finish(() -> {
            try {
                stopNative();
            } catch (RuntimeException x) {
                failure[0] = x;
            }
        });
        if (failure[0] != null) {
            throw failure[0];
        }
    }

    private boolean exporting() {
        synchronized (exportLock) {
            return exporter != null;
        }
    }

    private void stopNative() {
        try {
            stop0();
        } catch (IOException e) {
            // Upstream's stop() declares no checked exception; keep that signature.
            throw new UncheckedIOException("Failed to complete the recording", e);
        }
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
            synchronized (exportLock) {
                dump0(recording.toAbsolutePath().toString());
                if (exporter != null) {
                    exporter.mainFileRestarted();
                }
            }
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
        // The OTLP exporter's counters (Java-side, docs/exporter.md) follow the core's.
        buffer = buffer.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        Map<String, Long> counters = new LinkedHashMap<>();
        // One counter per 128-byte slot (a cache-line pair, so counters never share a line).
        for (int i = 0; i < names.length && (long) i * 128 + 8 <= buffer.capacity(); i++) {
            counters.put(names[i], buffer.getLong(i * 128));
        }
        OtlpExport.addCounters(counters);
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
        writer().filter(true);
    }

    /** Removes the calling thread from the profiled threads (with the {@code filter} option). */
    public void removeThread() {
        writer().filter(false);
    }

    // ---- Trace context (docs/context.md). Every write updates the calling thread's native context
    // ---- record (OTel layout, exported as otel_thread_ctx_v1) and the sidecar the sampler copies
    // ---- into each event: in place from Java on platform threads, else one JNI call (ContextWriter).

    /**
     * Context attribute slots per thread; slot {@code i} is the {@code i}-th name of the
     * {@code attributes=} option. Equals the native {@code maxContextSlots0()}.
     */
    public static final int MAX_CONTEXT_SLOTS = 10;

    /**
     * Activates a span on the calling thread: its ids appear as {@code spanId} /
     * {@code localRootSpanId} in the thread's events, every custom attribute slot is reset, and
     * up to two attributes are then set (for example the operation and resource names). A
     * negative {@code slotN}, a {@code null} value or one that cannot be written (longer than 255
     * UTF-8 bytes, dictionary full) skips that attribute.
     *
     * @param rootSpanId  the local root span id
     * @param spanId      the span id, non-zero
     * @param traceIdHigh upper 64 bits of the 128-bit trace id
     * @param traceIdLow  lower 64 bits of the 128-bit trace id
     * @throws IllegalArgumentException if {@code spanId} is 0 (use {@link #clearTraceContext()}),
     *                                  or a slot is {@code >= MAX_CONTEXT_SLOTS}
     */
    public void setTraceContext(long rootSpanId, long spanId, long traceIdHigh, long traceIdLow,
                                int slot0, CharSequence v0, int slot1, CharSequence v1) {
        if (spanId == 0) {
            throw new IllegalArgumentException("spanId must be non-zero; use clearTraceContext() to clear the trace context");
        }
        checkActivationSlot(slot0);
        checkActivationSlot(slot1);
        ContextWriter w = writer();
        ContextValueCache.Entry e0 = null;
        ContextValueCache.Entry e1 = null;
        if ((slot0 & slot1) >= 0) { // either slot set
            int epoch = w.dictionaryEpoch();
            e0 = slot0 < 0 ? null : contextValueCache.resolve(v0, epoch);
            e1 = slot1 < 0 ? null : contextValueCache.resolve(v1, epoch);
        }
        w.setTrace(rootSpanId, spanId, traceIdHigh, traceIdLow, slot0, e0, slot1, e1);
    }

    /** Clears the calling thread's span ids and custom attributes (span deactivation). */
    public void clearTraceContext() {
        writer().clearTrace();
    }

    /**
     * Sets one custom attribute of the calling thread.
     *
     * @param slot  the attribute's slot, {@code [0, MAX_CONTEXT_SLOTS)}
     * @param value the value
     * @return {@code true} if written; {@code false}, with the slot cleared, if {@code value} is
     *         {@code null}, longer than 255 UTF-8 bytes, does not fit in the thread's record, or
     *         the dictionary is full
     * @throws IllegalArgumentException if {@code slot} is out of range
     */
    public boolean setContextValue(int slot, String value) {
        checkSlot(slot);
        ContextWriter w = writer();
        ContextValueCache.Entry e = contextValueCache.resolve(value, w.dictionaryEpoch());
        if (e == null) {
            w.clearValue(slot);
            return false;
        }
        return w.setValue(slot, e);
    }

    /**
     * Sets several custom attributes of the calling thread at once, as that many
     * {@link #setContextValue(int, String)} calls would, in one write of the thread's record: for
     * re-applying an application's attributes after {@link #setTraceContext}, which resets every
     * slot. Each value that cannot be written (see {@code setContextValue}) clears its slot; the
     * others are written. A slot given twice takes its last value.
     *
     * @param slots  the attributes' slots, each in {@code [0, MAX_CONTEXT_SLOTS)}
     * @param values the values, {@code values[i]} for {@code slots[i]}
     * @param count  how many of the pairs to apply, from the first
     * @return how many values were written
     * @throws IllegalArgumentException if an array is {@code null} or shorter than {@code count},
     *                                  or a slot is out of range (then nothing is written)
     */
    public int setContextValues(int[] slots, CharSequence[] values, int count) {
        if (slots == null || values == null || count < 0 || slots.length < count || values.length < count) {
            throw new IllegalArgumentException("setContextValues needs " + count + " slots and values");
        }
        for (int i = 0; i < count; i++) {
            checkSlot(slots[i]);
        }
        return writer().setValues(slots, values, count, contextValueCache);
    }

    /**
     * Clears one custom attribute of the calling thread.
     *
     * @throws IllegalArgumentException if {@code slot} is out of range
     */
    public void clearContextValue(int slot) {
        checkSlot(slot);
        writer().clearValue(slot);
    }

    /**
     * Copies the calling thread's attribute encodings (index = slot, 0 = unset) into {@code out};
     * entries beyond {@code MAX_CONTEXT_SLOTS} are left as they are.
     */
    public void copyContextTags(int[] out) {
        if (out != null) {
            writer().copyTags(out);
        }
    }

    private static void checkActivationSlot(int slot) {
        if (slot >= MAX_CONTEXT_SLOTS) {
            throw new IllegalArgumentException("slot " + slot + " out of range [0, " + MAX_CONTEXT_SLOTS + ")");
        }
    }

    private static void checkSlot(int slot) {
        if (slot < 0 || slot >= MAX_CONTEXT_SLOTS) {
            throw new IllegalArgumentException("slot " + slot + " out of range [0, " + MAX_CONTEXT_SLOTS + ")");
        }
    }

    // ---- The context API of java-profiler 1.34, which released tracers (dd-java-agent 1.56)
    // ---- still call. Same semantics: ids and attributes are written independently, nothing
    // ---- is checked, and nothing is thrown into the caller's thread.

    /**
     * Sets the calling thread's span ids, keeping its attributes. {@code (0, 0)} clears them.
     *
     * @deprecated use {@link #setTraceContext} / {@link #clearTraceContext()}
     */
    @Deprecated
    public void setContext(long spanId, long rootSpanId) {
        try {
            writer().setSpanLegacy(spanId, rootSpanId);
        } catch (LinkageError e) {
            // A library without the call: no context, but the application's thread goes on.
        }
    }

    /**
     * Clears the calling thread's span ids, keeping its attributes.
     *
     * @deprecated use {@link #clearTraceContext()}
     */
    @Deprecated
    public void clearContext() {
        setContext(0, 0);
    }

    /**
     * Sets slot {@code offset} of the calling thread to an encoding from
     * {@link #registerConstant(String)} (through {@link ContextSetter#encode}); 0 clears it. An
     * offset outside the slots is ignored.
     */
    public void setContextValue(int offset, int encoding) {
        try {
            writer().setEncodingLegacy(offset, encoding);
        } catch (LinkageError e) {
            // as in setContext
        }
    }

    /** Copies the calling thread's encodings into {@code snapshot} (index = slot). */
    void copyTags(int[] snapshot) {
        if (snapshot == null) {
            return;
        }
        try {
            writer().copyTags(snapshot);
        } catch (LinkageError e) {
            // as in setContext
        }
    }

    /** The dictionary encoding of {@code value} (>= 1), or a negative value if it cannot be encoded. */
    int registerConstant(String value) {
        try {
            return registerConstant0(value);
        } catch (LinkageError e) {
            return -1;
        }
    }

    /** The native dictionary's epoch as last seen: it changes when a recording starts. */
    static int contextEpoch() {
        return contextEpoch;
    }

    private void refreshContextEpoch() {
        int epoch = contextEpoch0();
        if (epoch != contextEpoch) {
            contextValueCache.clear();
            contextEpoch = epoch;
        }
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

    // Package-private hooks for park/block instrumentation, as upstream's: a registered thread
    // (addThread) says it is about to park or sleep and when it is done. Under wallprecheck the
    // wall-clock sampler then takes one sample of such a run, not one per tick (a thread without
    // a span only). A thread that never registered is not followed: the calls do nothing. Nor is a
    // virtual thread: the native side would mark its carrier, which goes on to run other virtual
    // threads while this one is parked, and this one may resume on another carrier.

    void parkEnter() {
        if (!isVirtualThread(Thread.currentThread())) {
            parkEnter0();
        }
    }

    void parkExit(long blocker, long unblockingSpanId) {
        if (!isVirtualThread(Thread.currentThread())) {
            parkExit0(blocker, unblockingSpanId);
        }
    }

    /**
     * @param state HotSpot's OSThread state of the run; only SLEEPING (7) is followed
     * @return a token for {@link #blockExit(long)}; 0 when nothing was armed (another state, a
     *     thread that never registered, a virtual thread)
     */
    long blockEnter(int state) {
        return isVirtualThread(Thread.currentThread()) ? 0 : blockEnter0(state);
    }

    void blockExit(long token) {
        if (token != 0) {
            blockExit0(token);
        }
    }

    private static native void parkEnter0();

    private static native void parkExit0(long blocker, long unblockingSpanId);

    private static native long blockEnter0(int state);

    private static native void blockExit0(long token);

    // ---- native methods, implemented in ddprof-native/src/api as
    // ---- Java_com_datadoghq_profiler_JavaProfiler_<name> (the tests' probes are in
    // ---- internal.Diagnostics)

    private native String execute0(String command) throws IllegalArgumentException, IllegalStateException, IOException;

    private native void stop0() throws IllegalStateException, IOException;

    private native void dump0(String path) throws IOException;

    private native void exportChunk0(String path) throws IOException;

    private native String recordingFile0();

    private native String getStatus0();

    private static native long getSamples0();

    private static native String getVersion0();

    private static native ByteBuffer getDebugCounters0();

    private static native String[] describeDebugCounters0();

    private static native void recordSetting0(String name, String value, String unit);

    static native void filterThread0(boolean add);

    // Trace context (docs/context.md). Java checks the arguments; these never throw. A value
    // goes as its UTF-8 bytes and their count, which must be the array's length.
    static native void setTraceContext0(long rootSpanId, long spanId, long traceIdHigh, long traceIdLow,
                                                int slot0, int encoding0, byte[] utf8v0, int length0,
                                                int slot1, int encoding1, byte[] utf8v1, int length1);

    static native void clearTraceContext0();

    static native boolean setContextValue0(int slot, int encoding, byte[] utf8, int length);

    /**
     * Upstream's shape of the single-attribute write, which its AllNativeContextTest reaches by
     * reflection: the caller's encoding and bytes, through the thread's writer as
     * {@code setContextValue} goes (so its later reads agree); {@code utf8} null is the empty value.
     * False for a slot out of range (nothing changed) or a value the record has no room for (the
     * slot cleared), true once written and published.
     */
    private static boolean setContextValue0(int slot, int encoding, byte[] utf8) {
        if (slot < 0 || slot >= MAX_CONTEXT_SLOTS) {
            return false;
        }
        byte[] bytes = utf8 == null ? new byte[0] : utf8;
        return writer().setValue(slot,
                new ContextValueCache.Entry(null, encoding, ContextValueCache.currentEpoch(), bytes));
    }

    static native void clearContextValue0(int slot);

    static native void copyContextTags0(int[] out);

    /** The native slot count; {@link #MAX_CONTEXT_SLOTS} must equal it (checked by the tests). */
    static native int maxContextSlots0();

    /** Dictionary encoding of {@code value}, -1 if it cannot be added (full, or null). */
    static native int registerConstant0(String value);

    static native int contextEpoch0();

    // The in-place writer's view of the native context (api/context_buffer.rs)
    static native int[] contextLayout0();

    static native java.nio.ByteBuffer contextBuffer0();

    static native java.nio.ByteBuffer epochBuffer0();

    static native byte[] contextValueBytes0(int encoding);

    // java-profiler 1.34 API
    static native void setContext0(long spanId, long rootSpanId);

    static native void setContextEncoding0(int offset, int encoding);

    // ---- Test hooks. Upstream's own tests call these on JavaProfiler, so they are here, not in
    // ---- internal.Diagnostics; they only read or log, never change profiler state.

    /** Test hook: writes {@code msg} to the profiler's stderr log. */
    public static native void testlog(String msg);

    /** Test hook: logs the calling thread's context record to stderr. */
    public static native void dumpContext();

    /**
     * Test hook: whether the exported TLS slot is primed safely for the sampler. Always true
     * here: the slot is set at a thread's first context write, outside any signal handler, and
     * the sampler never reads it (it reaches the record through a pthread key).
     */
    public static native boolean testTlsPrimingAvailable();

    /** Test hook: the calling thread's span id as its record holds it. */
    long testGetSpanId() {
        return testGetSpanId0();
    }

    /** Test hook: the calling thread's local root span id. */
    long testGetRootSpanId() {
        return testGetRootSpanId0();
    }

    /** Test hook: the calling thread's trace id, 32 lowercase hex digits. */
    String testReadTraceId() {
        return testReadTraceId0();
    }

    /** Test hook: the value of attribute {@code slot} in the calling thread's record, or null. */
    String testReadContextAttribute(int slot) {
        return testReadContextAttribute0(slot);
    }

    /** Test hook: whether the calling thread's record is valid (published). */
    boolean testIsContextValid() {
        return testIsContextValid0();
    }

    private static native long testGetSpanId0();

    private static native long testGetRootSpanId0();

    private static native String testReadTraceId0();

    private static native String testReadContextAttribute0(int slot);

    private static native boolean testIsContextValid0();
}
