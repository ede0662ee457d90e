package com.datadoghq.profiler;

import java.lang.reflect.Field;
import java.nio.Buffer;
import java.nio.ByteBuffer;

/**
 * Plain loads and stores of the native memory behind a direct {@link ByteBuffer}, for the context
 * writer's per-call path (docs/context.md, "Writing from Java"). Where the JDK lets it be used
 * silently, {@code sun.misc.Unsafe} at the buffer's address: one instruction an access, where the
 * buffer's own {@code getLong}/{@code putLong} add a bounds check and its memory-session guard (about
 * half of an unchanged call's cost, docs/benchmarks.md "Context writes"). Elsewhere {@link #UNSAFE}
 * is null and the caller goes through the buffer:
 * <ul>
 *   <li>JDK 24 and later print a warning at the first memory access through {@code sun.misc.Unsafe}
 *       (JEP 498), and later releases deny it: a library must not make its host print that;</li>
 *   <li>a JDK 23 started with {@code --sun-misc-unsafe-memory-access} other than {@code allow};</li>
 *   <li>{@code -Dddprof.contextAccess=buffer} (the escape hatch, and the equivalence test's switch);</li>
 *   <li>any failure to find {@code Unsafe} or the buffer's address field.</li>
 * </ul>
 * Callers keep every offset within the record, as they must for the buffer too (which would throw
 * where Unsafe stores): the layout's fixed offsets and the entries' fit checks.
 */
final class NativeWords {

    /** The instance, or null where the buffer is used (see the class comment). */
    static final sun.misc.Unsafe UNSAFE;
    /** The offset of {@code java.nio.Buffer.address} (the direct buffer's memory), with {@link #UNSAFE}. */
    private static final long ADDRESS_FIELD;

    static {
        sun.misc.Unsafe u = null;
        long field = -1;
        if (allowed()) {
            try {
                Field f = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
                f.setAccessible(true);
                u = (sun.misc.Unsafe) f.get(null);
                field = u.objectFieldOffset(Buffer.class.getDeclaredField("address"));
            } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
                u = null;
            }
        }
        UNSAFE = field < 0 ? null : u;
        ADDRESS_FIELD = field;
    }

    private NativeWords() {
    }

    private static boolean allowed() {
        if ("buffer".equals(System.getProperty("ddprof.contextAccess"))) {
            return false;
        }
        if (Runtime.version().feature() >= 24) {
            return false;
        }
        // JDK 23's --sun-misc-unsafe-memory-access=warn|debug|deny (read as this property).
        String mode = System.getProperty("sun.misc.unsafe.memory.access");
        return mode == null || "allow".equals(mode);
    }

    /**
     * The address of direct buffer {@code b}'s memory (the field every direct buffer of JDK 11-23
     * keeps it in); 0 when {@link #UNSAFE} is null, and the caller then uses the buffer.
     */
    static long addressOf(ByteBuffer b) {
        if (UNSAFE == null || b == null || !b.isDirect()) {
            return 0;
        }
        return UNSAFE.getLong(b, ADDRESS_FIELD);
    }
}
