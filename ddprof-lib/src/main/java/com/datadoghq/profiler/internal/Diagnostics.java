package com.datadoghq.profiler.internal;

/**
 * Reads of the native core's internal state for ddprof's own tests. Not part of the API: it may
 * change or disappear in any release. It lives apart from {@code JavaProfiler} so that the API
 * class keeps upstream's shape (public only because the tests that call it live in other
 * packages).
 *
 * <p>The native library must already be loaded ({@code JavaProfiler.getInstance}); before that,
 * every method here throws {@link UnsatisfiedLinkError}.
 */
public final class Diagnostics {
    private Diagnostics() {
    }

    /** The calling thread's OS thread id, as the native core sees it. */
    public static int getTid() {
        return getTid0();
    }

    /**
     * The JFR class trace ID of {@code c} as the native core reads it through the calibrated
     * {@code Klass} offset (the lazy method-ID mode's tags), or -1 when it cannot.
     */
    public static long getClassTraceId(Class<?> c) {
        return getClassTraceId0(c);
    }

    /**
     * Makes the jmethodIDs of every method of {@code c} (JVMTI {@code GetClassMethods}), as a
     * profiler taking stacks through {@code GetStackTrace} does for the frames it samples: the
     * positive control of tests that check a mode creates none. Returns the number of methods,
     * or -1 when JVMTI refused.
     */
    public static int makeMethodIds(Class<?> c) {
        return makeMethodIds0(c);
    }

    /**
     * For every method of {@code c} (JVMTI {@code GetClassMethods}, which creates their
     * jmethodIDs), what the lazy method-ID mode's metadata reader says about its {@code Method*}
     * and what JVMTI says: two strings per method, ours first, each
     * {@code name descriptor modifiers=N lines=[bci:line,...]} ({@code unreadable} if ours cannot
     * read it). Creates jmethodIDs: not for a JVM whose lazy counters a test checks.
     */
    public static String[] compareMethodMetadata(Class<?> c) {
        return compareMethodMetadata0(c);
    }

    /**
     * The calling thread's OTel thread-context record (640 bytes) as an outside reader finds it:
     * the exported TLS symbol {@code otel_thread_ctx_v1} looked up by name with {@code dlsym},
     * the pointer stored there followed. {@code null} if the symbol or the pointer is missing
     * (the thread never wrote a context).
     */
    public static byte[] readOtelRecordBySymbol() {
        return readOtelRecordBySymbol0();
    }

    /**
     * How the calling thread's context writes reach its native record: {@code "direct"} (stored
     * in place from Java) or {@code "jni"} (one native call per write: virtual threads, Java 8,
     * or {@code -Dddprof.contextWriter=jni}).
     */
    public static String contextWriterKind() {
        return callStatic("contextWriterKind");
    }

    /**
     * How the calling thread's context writer reaches its record: {@code "unsafe"} (in place
     * through {@code sun.misc.Unsafe}: JDK 11-23), {@code "buffer"} (in place through a direct
     * buffer: JDK 24+, or {@code -Dddprof.contextAccess=buffer}) or {@code "jni"}.
     */
    public static String contextWriterAccess() {
        return callStatic("contextWriterAccess");
    }

    private static String callStatic(String name) {
        try {
            java.lang.reflect.Method m = Class.forName("com.datadoghq.profiler.JavaProfiler")
                    .getDeclaredMethod(name);
            m.setAccessible(true);
            return (String) m.invoke(null);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * One crash-protected 8-byte load at {@code address}, made the way the signal handler reads VM
     * memory: {@code [read (1 or 0), value (0 unless read), faults recovered so far, protected
     * loads installed (1 or 0)]}. A load of an unmapped address must come back unread, with the
     * JVM alive. Before a profiler start the loads are not installed and take
     * {@code process_vm_readv} instead.
     */
    public static long[] protectedLoad(long address) {
        return protectedLoad0(address);
    }

    // ---- implemented in ddprof-native/src/api/natives.rs as
    // ---- Java_com_datadoghq_profiler_internal_Diagnostics_<name>

    private static native int getTid0();

    private static native long getClassTraceId0(Class<?> c);

    private static native byte[] readOtelRecordBySymbol0();

    private static native int makeMethodIds0(Class<?> c);

    private static native String[] compareMethodMetadata0(Class<?> c);

    private static native long[] protectedLoad0(long address);
}
