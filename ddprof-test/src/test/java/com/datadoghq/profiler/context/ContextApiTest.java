package com.datadoghq.profiler.context;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

import com.datadoghq.profiler.ContextSetter;
import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.OTelContext;
import com.datadoghq.profiler.internal.Diagnostics;
import com.datadoghq.profiler.testing.ProfilerExtension;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The context write API without sampling: argument checks, upstream's failure cases, the
 * reset-on-activate rule, tag copies, the 1.34 API of released tracers, and the OTel record as an
 * outside reader finds it through the exported symbol {@code otel_thread_ctx_v1}.
 */
@ExtendWith(ProfilerExtension.class)
class ContextApiTest {
    /**
     * The records carry their attribute entries once a process context is published, as a
     * tracer does at startup (OtelThreadRecordGateTest has the record before that).
     */
    @BeforeAll
    static void publishAProcessContext() {
        OTelContext.getInstance().initializeAllContext("test", "host", "id", "svc", "1", "t", new String[] {"op", "res"});
    }

    @TempDir
    Path dir;

    private void start(JavaProfiler profiler, String attributes) throws Exception {
        profiler.execute("start,cpu=10ms,attributes=" + attributes + ",file=" + dir.resolve("api.jfr"));
    }

    @Test
    void maxContextSlotsEqualsTheNativeCount() throws Exception {
        Method m = JavaProfiler.class.getDeclaredMethod("maxContextSlots0");
        m.setAccessible(true);
        assertEquals(JavaProfiler.MAX_CONTEXT_SLOTS, (int) m.invoke(null));
        assertEquals(10, JavaProfiler.MAX_CONTEXT_SLOTS);
    }

    @Test
    void slotBoundsAndSpanZero(JavaProfiler profiler) throws Exception {
        start(profiler, "a;b");
        profiler.setTraceContext(9, 7, 0, 7, -1, null, -1, null);
        assertThrows(IllegalArgumentException.class, () -> profiler.setTraceContext(2, 0, 0, 0, -1, null, -1, null));
        assertThrows(IllegalArgumentException.class, () -> profiler.setTraceContext(2, 1, 0, 1, 10, "x", -1, null));
        assertThrows(IllegalArgumentException.class, () -> profiler.setTraceContext(2, 1, 0, 1, -1, null, 11, "x"));
        assertThrows(IllegalArgumentException.class, () -> profiler.setContextValue(10, "x"));
        assertThrows(IllegalArgumentException.class, () -> profiler.setContextValue(-1, "x"));
        assertThrows(IllegalArgumentException.class, () -> profiler.clearContextValue(10));
        assertThrows(IllegalArgumentException.class, () -> profiler.clearContextValue(-1));
        assertEquals(7, readRecord().spanId, "rejected calls leave the active span");
        profiler.setTraceContext(2, 1, 0, 1, -5, "skipped", -1, null); // negative slot: skip
        assertTrue(profiler.setContextValue(9, "last slot"));
        profiler.clearTraceContext();
    }

    @Test
    void setContextValueFailuresClearTheSlot(JavaProfiler profiler) throws Exception {
        start(profiler, "a;b");
        profiler.setTraceContext(2, 1, 0, 1, -1, null, -1, null);
        int[] tags = new int[10];

        assertTrue(profiler.setContextValue(0, "ok"));
        assertFalse(profiler.setContextValue(0, null), "null");
        profiler.copyContextTags(tags);
        assertEquals(0, tags[0], "a null value clears the slot");

        char[] big = new char[256];
        Arrays.fill(big, 'x');
        assertTrue(profiler.setContextValue(0, new String(big, 0, 255)), "255 bytes fit");
        assertFalse(profiler.setContextValue(0, new String(big)), "256 bytes");
        profiler.copyContextTags(tags);
        assertEquals(0, tags[0]);
        char[] wide = new char[128];
        Arrays.fill(wide, '\u00e9'); // two UTF-8 bytes each: 256 bytes
        assertFalse(profiler.setContextValue(1, new String(wide)), "256 UTF-8 bytes in 128 chars");

        // The record holds 612 attribute bytes, 18 of them the root span entry.
        assertTrue(profiler.setContextValue(0, new String(big, 0, 255)));
        assertTrue(profiler.setContextValue(1, new String(big, 0, 254) + "y"));
        assertFalse(profiler.setContextValue(2, new String(big, 0, 253) + "zz"), "record full");
        assertTrue(profiler.setContextValue(3, "short"), "a short value still fits");
        profiler.clearTraceContext();
    }

    @Test
    void fullDictionaryFailsAndANewRecordingClearsIt(JavaProfiler profiler) throws Exception {
        start(profiler, "a");
        profiler.setTraceContext(2, 1, 0, 1, -1, null, -1, null);
        int added = 0;
        while (profiler.setContextValue(0, "v" + added)) {
            added++;
            assertTrue(added <= 1 << 16, "the dictionary is bounded");
        }
        assertEquals(1 << 16, added);
        assertEquals(1L << 16, profiler.getDebugCounters().get("dictionary_context_keys"));
        int[] tags = new int[1];
        profiler.copyContextTags(tags);
        assertEquals(0, tags[0], "the failed value cleared the slot");
        assertTrue(profiler.setContextValue(0, "v7"), "a known value still resolves");
        profiler.stop();

        start(profiler, "a");
        assertEquals(0L, profiler.getDebugCounters().get("dictionary_context_keys"), "cleared at start");
        profiler.copyContextTags(tags);
        assertEquals(0, tags[0], "an encoding of the previous recording reads as unset");
        assertTrue(profiler.setContextValue(0, "fresh"));
        assertEquals(1L, profiler.getDebugCounters().get("dictionary_context_keys"));
        profiler.clearTraceContext();
    }

    @Test
    void activationResetsEverySlotAndCopyContextTagsRoundTrips(JavaProfiler profiler) throws Exception {
        start(profiler, "op;res;k2;k3");
        profiler.setTraceContext(1, 1, 0, 1, 0, "op-a", -1, null);
        assertTrue(profiler.setContextValue(3, "k3-a"));
        int[] tags = new int[12];
        Arrays.fill(tags, -7);
        profiler.copyContextTags(tags);
        assertNotEquals(0, tags[0]);
        assertNotEquals(0, tags[3]);
        assertNotEquals(tags[0], tags[3]);
        assertEquals(0, tags[1]);
        assertEquals(-7, tags[10], "entries beyond the slots are left alone");
        int opA = tags[0];

        profiler.setTraceContext(2, 2, 0, 2, 1, "res-b", -1, null);
        profiler.copyContextTags(tags);
        assertEquals(0, tags[0], "activation reset slot 0");
        assertEquals(0, tags[3], "activation reset slot 3");
        assertNotEquals(0, tags[1]);

        assertTrue(profiler.setContextValue(2, "op-a"));
        profiler.copyContextTags(tags);
        assertEquals(opA, tags[2], "one value, one encoding, whatever the slot");
        profiler.clearContextValue(2);
        profiler.copyContextTags(tags);
        assertEquals(0, tags[2]);

        profiler.clearTraceContext();
        profiler.copyContextTags(tags);
        assertArrayEquals(new int[10], Arrays.copyOf(tags, 10));
    }

    /** The record through dlsym("otel_thread_ctx_v1"), parsed as OTEP #4947 lays it out. */
    static OtelRecordView readRecord() {
        OtelRecordView r = OtelRecordView.ofCurrentThread();
        assertNotNull(r, "otel_thread_ctx_v1 not found by dlsym, or not set on this thread");
        return r;
    }

    @Test
    void otelRecordIsReadableThroughTheExportedSymbol(JavaProfiler profiler) throws Exception {
        start(profiler, "op;res");
        profiler.setTraceContext(0x1111222233334444L, 0x0102030405060708L, 0x5555666677778888L, 0x9999aaaabbbbccccL,
                0, "servlet.request", 1, "GET /users");
        OtelRecordView r = readRecord();
        assertEquals(0x5555666677778888L, r.traceHi);
        assertEquals(0x9999aaaabbbbccccL, r.traceLo);
        assertEquals(0x0102030405060708L, r.spanId);
        assertEquals(1, r.valid);
        assertEquals(0, r.reserved);
        assertEquals("1111222233334444", r.attrs.get(0), "key 0: local root span id in hex");
        assertEquals("servlet.request", r.attrs.get(1), "slot 0 is key 1");
        assertEquals("GET /users", r.attrs.get(2));

        AtomicReference<Object> other = new AtomicReference<>();
        Thread t = new Thread(() -> {
            try {
                profiler.setTraceContext(5, 6, 0, 6, 1, "other", -1, null);
                other.set(readRecord());
            } catch (Throwable e) {
                other.set(e);
            }
        });
        t.start();
        t.join();
        assertTrue(other.get() instanceof OtelRecordView, String.valueOf(other.get()));
        OtelRecordView o = (OtelRecordView) other.get();
        assertEquals(6, o.spanId, "each thread has its own record");
        assertEquals("other", o.attrs.get(2));
        assertEquals(0x0102030405060708L, readRecord().spanId, "and this thread's is unchanged");

        profiler.clearTraceContext();
        OtelRecordView cleared = readRecord();
        assertEquals(0, cleared.valid);
        assertEquals(0, cleared.spanId);
        assertTrue(cleared.attrs.isEmpty(), "cleared: " + cleared.attrs);
    }

    @Test
    void legacyApiRoundTrip(JavaProfiler profiler) throws Exception {
        start(profiler, "region;customer");
        ContextSetter setter = new ContextSetter(profiler, Arrays.asList("region", "customer", "region"));
        assertEquals(2, setter.size());
        assertEquals(1, setter.offsetOf("customer"));
        assertEquals(-1, setter.offsetOf("nope"));
        int acme = setter.encode("acme");
        assertTrue(acme > 0);
        assertEquals(acme, setter.encode("acme"));
        assertEquals(0, setter.encode(null));

        profiler.setContext(11, 22);
        assertTrue(setter.setContextValue("customer", "acme"));
        assertArrayEquals(new int[] {0, acme}, setter.snapshotTags());
        OtelRecordView r = readRecord();
        assertEquals(11, r.spanId);
        assertEquals(1, r.valid);
        assertEquals("acme", r.attrs.get(2));
        profiler.setContext(0, 0);
        assertArrayEquals(new int[] {0, acme}, setter.snapshotTags(), "setContext keeps the attributes (1.34)");
        assertTrue(setter.clearContextValue("customer"));
        assertArrayEquals(new int[] {0, 0}, setter.snapshotTags());
        assertFalse(setter.clearContextValue("nope"));
        assertFalse(setter.setContextValue(-1, acme));
        profiler.setContextValue(99, acme); // ignored, never thrown
        assertEquals(0, readRecord().valid, "nothing set: the record is not published");
    }

    /**
     * Upstream's private {@code setContextValue0(int, int, byte[])}, as its AllNativeContextTest
     * reaches it by reflection: writes the slot's encoding and value and publishes the record; a
     * null array is the empty value; a slot out of range is refused and changes nothing.
     */
    @Test
    void upstreamsPrivateSetContextValue0WritesTheSlot(JavaProfiler profiler) throws Exception {
        start(profiler, "op;res");
        Method set = JavaProfiler.class.getDeclaredMethod("setContextValue0", int.class, int.class, byte[].class);
        assertTrue(java.lang.reflect.Modifier.isPrivate(set.getModifiers()), "private, as upstream's");
        assertTrue(java.lang.reflect.Modifier.isStatic(set.getModifiers()), "static, as upstream's");
        assertEquals(boolean.class, set.getReturnType());
        set.setAccessible(true);
        Method register = JavaProfiler.class.getDeclaredMethod("registerConstant0", String.class);
        register.setAccessible(true);
        int encoding = (int) register.invoke(null, "GET /orders");
        assertTrue(encoding > 0, "encoding " + encoding);

        profiler.setTraceContext(0x2L, 0x1L, 0L, 0x1L, -1, null, -1, null);
        assertTrue((boolean) set.invoke(null, 1, encoding, "GET /orders".getBytes(StandardCharsets.UTF_8)));
        int[] tags = new int[2];
        profiler.copyContextTags(tags);
        assertArrayEquals(new int[] {0, encoding}, tags);
        OtelRecordView r = readRecord();
        assertEquals(1, r.valid);
        assertEquals("GET /orders", r.attrs.get(2), "slot 1 is key 2");

        assertTrue((boolean) set.invoke(null, 0, 0, null), "a null array is the empty value");
        assertEquals("", readRecord().attrs.get(1));

        assertFalse((boolean) set.invoke(null, 10, encoding, new byte[] {'x'}), "slot out of range");
        assertFalse((boolean) set.invoke(null, -1, encoding, new byte[] {'x'}), "negative slot");
        OtelRecordView after = readRecord();
        assertEquals(r.attrs.get(2), after.attrs.get(2), "refused writes change nothing");
        assertEquals(3, after.attrs.size(), "root, slot 0, slot 1: " + after.attrs);
        profiler.clearTraceContext();
    }

    @Test
    void contextSetterDeduplicatesAndTruncatesToTheSlots(JavaProfiler profiler) {
        ContextSetter setter = new ContextSetter(profiler,
                Arrays.asList("a", "b", "a", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"));
        // The first ten names (a b a c d e f g h i), duplicates dropped: nine slots.
        assertEquals(9, setter.size());
        assertEquals(2, setter.offsetOf("c"));
        assertEquals(8, setter.offsetOf("i"));
        assertEquals(-1, setter.offsetOf("j"));
    }

    @Test
    void setContextValuesWritesSeveralSlotsAtOnce(JavaProfiler profiler) throws Exception {
        start(profiler, "a;b;c");
        profiler.setTraceContext(3, 4, 0, 4, 0, "op", -1, null);
        char[] big = new char[256];
        Arrays.fill(big, 'x');
        assertEquals(2, profiler.setContextValues(new int[] {1, 2, 0}, new String[] {"one", "two", new String(big)}, 3));
        OtelRecordView r = readRecord();
        assertEquals(1, r.valid);
        assertEquals("one", r.attrs.get(2));
        assertEquals("two", r.attrs.get(3));
        assertNull(r.attrs.get(1), "the value too long cleared its slot");
        assertEquals("0000000000000003", r.attrs.get(0), "the span's root entry stays");
        int[] tags = new int[3];
        profiler.copyContextTags(tags);
        assertEquals(0, tags[0]);
        assertTrue(tags[1] > 0 && tags[2] > 0 && tags[1] != tags[2]);
        assertThrows(IllegalArgumentException.class,
                () -> profiler.setContextValues(new int[] {0, 10}, new String[] {"new", "x"}, 2));
        assertEquals("one", readRecord().attrs.get(2), "a rejected batch writes nothing");
        assertNull(readRecord().attrs.get(1));
        assertThrows(IllegalArgumentException.class, () -> profiler.setContextValues(new int[] {0}, new String[0], 1));
    }
}
