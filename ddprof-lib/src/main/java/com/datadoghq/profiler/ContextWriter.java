package com.datadoghq.profiler;

/**
 * Writes the calling thread's trace context (docs/context.md). {@link JavaProfiler} keeps one
 * writer per thread: on a platform thread of Java 11+ a {@code DirectContextWriter}, which stores
 * into the thread's native context record in place (no JNI call per write); otherwise, and on
 * virtual threads (whose carrier owns the native record), this class's own implementation, one JNI
 * call per write. Both follow the same semantics; arguments are checked by the caller.
 */
class ContextWriter {

    /** The JNI writer, shared by every thread that has no direct one (it keeps no state). */
    static final ContextWriter JNI = new ContextWriter();

    /** Makes the writer for the calling thread. */
    private static final Factory FACTORY = loadFactory();

    /**
     * Whether an out-of-process reader of the OTel thread records can exist: set once this process
     * has published its OTel process context ({@link OTelContext}), whose {@code threadlocal.*}
     * attributes a reader needs before it looks for any thread record (OTEP #4947, "Reading
     * Protocol"), or from the start with {@code -Dddprof.otelThreadRecord=always}. Until then the
     * in-place writer leaves the record's attribute entries (the local root span's digits, the
     * values' bytes) out: nothing would read them (docs/context.md, "Who reads it"). Never cleared.
     */
    static volatile boolean otelReaders = "always".equals(System.getProperty("ddprof.otelThreadRecord"));

    /**
     * Whether a JNI write has been made to any thread's record: set before the first (a virtual
     * thread writes its carrier's record), never cleared. Until then no in-place writer's record
     * can have been written by anyone else, and {@code DirectContextWriter} leaves out its check
     * of the record's native write count, one access to native memory on every call.
     */
    static volatile boolean jniWrote;

    /** Before each native write of this (JNI) writer: {@link #jniWrote}. */
    private static void jniWriting() {
        if (!jniWrote) {
            jniWrote = true;
        }
    }

    /** A process context is about to be published: the thread records get their entries from now on. */
    static void otelReadersExist() {
        otelReaders = true;
    }

    /** Creates a thread's writer. */
    interface Factory {
        /** A writer for the calling thread, or {@code null} when it cannot have a direct one. */
        ContextWriter forCurrentThread();

        /** Loads and initialises the classes of the writers it makes (see {@link #preload()}). */
        void preload();
    }

    /**
     * Loads and initialises the writers' classes now ({@code JavaProfiler.getInstance}), not at an
     * application thread's first context write: a class loader that asks its parent first (the
     * Datadog tracer's) throws and catches a {@code ClassNotFoundException} for every class of ours
     * it loads, which the tracer's exception profiling records when it happens on an application
     * thread.
     */
    static void preload() {
        if (FACTORY != null) {
            try {
                FACTORY.preload();
            } catch (RuntimeException | LinkageError e) {
                // The first write tries again and falls back to JNI.
            }
        }
    }

    /** The calling thread's writer: a direct one when possible, else {@link #JNI}. */
    static ContextWriter forCurrentThread() {
        ContextWriter w = null;
        if (FACTORY != null) {
            try {
                w = FACTORY.forCurrentThread();
            } catch (RuntimeException | LinkageError e) {
                w = null;
            }
        }
        return w == null ? JNI : w;
    }

    private static Factory loadFactory() {
        // An escape hatch (and the differential test's switch): -Dddprof.contextWriter=jni.
        if ("jni".equals(System.getProperty("ddprof.contextWriter"))) {
            return null;
        }
        try {
            // Compiled for Java 11 (src/main/java11): absent in effect on Java 8.
            Class<?> c = Class.forName("com.datadoghq.profiler.DirectContextWriter$DirectFactory");
            return (Factory) c.getDeclaredConstructor().newInstance();
        } catch (ReflectiveOperationException | LinkageError | RuntimeException e) {
            return null;
        }
    }

    /** "direct" or "jni": which writer this is (for tests, through internal.Diagnostics). */
    String kind() {
        return "jni";
    }

    /**
     * How this writer reaches the record: "unsafe" or "buffer" in place (NativeWords), "jni"
     * through native calls (for tests, through internal.Diagnostics).
     */
    String access() {
        return "jni";
    }

    /**
     * The context dictionary's current epoch, which every value this writer is given must be of
     * ({@link ContextValueCache#resolve(CharSequence, int)}).
     */
    int dictionaryEpoch() {
        return ContextValueCache.currentEpoch();
    }

    /** Span activation; an entry is {@code null} to skip its slot. */
    void setTrace(long root, long span, long traceHi, long traceLo,
                  int slot0, ContextValueCache.Entry e0, int slot1, ContextValueCache.Entry e1) {
        jniWriting();
        JavaProfiler.setTraceContext0(root, span, traceHi, traceLo,
                e0 == null ? -1 : slot0, e0 == null ? 0 : e0.encoding, e0 == null ? null : e0.utf8,
                e0 == null ? 0 : e0.utf8.length,
                e1 == null ? -1 : slot1, e1 == null ? 0 : e1.encoding, e1 == null ? null : e1.utf8,
                e1 == null ? 0 : e1.utf8.length);
    }

    void clearTrace() {
        jniWriting();
        JavaProfiler.clearTraceContext0();
    }

    boolean setValue(int slot, ContextValueCache.Entry e) {
        jniWriting();
        return JavaProfiler.setContextValue0(slot, e.encoding, e.utf8, e.utf8.length);
    }

    /**
     * {@code setValue}, or {@code clearValue} for a value {@code cache} cannot encode, per pair;
     * how many were written.
     */
    int setValues(int[] slots, CharSequence[] values, int count, ContextValueCache cache) {
        int written = 0;
        int epoch = dictionaryEpoch();
        for (int i = 0; i < count; i++) {
            ContextValueCache.Entry e = cache.resolve(values[i], epoch);
            if (e == null) {
                clearValue(slots[i]);
            } else if (setValue(slots[i], e)) {
                written++;
            }
        }
        return written;
    }

    void clearValue(int slot) {
        jniWriting();
        JavaProfiler.clearContextValue0(slot);
    }

    /** The released tracers' {@code setContext(spanId, rootSpanId)}. */
    void setSpanLegacy(long span, long root) {
        jniWriting();
        JavaProfiler.setContext0(span, root);
    }

    /** The released tracers' {@code setContextValue(offset, encoding)}; any offset. */
    void setEncodingLegacy(int offset, int encoding) {
        jniWriting();
        JavaProfiler.setContextEncoding0(offset, encoding);
    }

    void copyTags(int[] out) {
        JavaProfiler.copyContextTags0(out);
    }

    void filter(boolean add) {
        JavaProfiler.filterThread0(add);
    }
}
