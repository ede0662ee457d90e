package com.datadoghq.profiler.tools.convert;

import java.io.IOException;
import java.io.OutputStream;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.GZIPOutputStream;

import com.datadoghq.profiler.export.EventKind;
import com.datadoghq.profiler.export.Profile;
import com.datadoghq.profiler.export.ProtoWriter;
import com.datadoghq.profiler.export.StringTable;

/**
 * pprof's {@code perftools.profiles.Profile} (profile.proto), gzipped, for one event kind.
 *
 * <ul>
 *   <li>sample types: {@code [<countType>/count, <valueType>/<unit>]}, e.g. {@code samples/count}
 *       and {@code cpu/nanoseconds}; the second is the default. For cpu and wall the value is
 *       weight &times; the sampling interval (wall: also &times; the threads each tick chose from,
 *       {@code export.WallEpochs}), for alloc and live the estimated bytes.</li>
 *   <li>{@code period_type} = the value type, {@code period} = the sampling interval (time
 *       kinds; 0 for memory kinds).</li>
 *   <li>one Function per method ({@code name} = {@code pkg.Class.method}, {@code system_name} =
 *       name + JVM descriptor), one Location per (method, line), the leaf first in each
 *       sample.</li>
 *   <li>labels: {@code thread name} (str), {@code thread id} (num, the OS id), {@code span id},
 *       {@code local root span id} (num, when non-zero), and each set context attribute under
 *       its own name (str).</li>
 *   <li>{@code time_nanos} / {@code duration_nanos}: the recording's first chunk start and its
 *       length.</li>
 * </ul>
 */
public final class Pprof {
    // profile.proto field numbers.
    private static final int PROFILE_SAMPLE_TYPE = 1;
    private static final int PROFILE_SAMPLE = 2;
    private static final int PROFILE_MAPPING = 3;
    private static final int PROFILE_LOCATION = 4;
    private static final int PROFILE_FUNCTION = 5;
    private static final int PROFILE_STRING_TABLE = 6;
    private static final int PROFILE_TIME_NANOS = 9;
    private static final int PROFILE_DURATION_NANOS = 10;
    private static final int PROFILE_PERIOD_TYPE = 11;
    private static final int PROFILE_PERIOD = 12;
    private static final int PROFILE_DEFAULT_SAMPLE_TYPE = 14;
    private static final int VALUE_TYPE_TYPE = 1;
    private static final int VALUE_TYPE_UNIT = 2;
    private static final int SAMPLE_LOCATION_ID = 1;
    private static final int SAMPLE_VALUE = 2;
    private static final int SAMPLE_LABEL = 3;
    private static final int LABEL_KEY = 1;
    private static final int LABEL_STR = 2;
    private static final int LABEL_NUM = 3;
    private static final int MAPPING_ID = 1;
    private static final int MAPPING_FILENAME = 5;
    private static final int MAPPING_HAS_FUNCTIONS = 7;
    private static final int MAPPING_HAS_LINE_NUMBERS = 9;
    private static final int LOCATION_ID = 1;
    private static final int LOCATION_MAPPING_ID = 2;
    private static final int LOCATION_LINE = 4;
    private static final int LINE_FUNCTION_ID = 1;
    private static final int LINE_LINE = 2;
    private static final int FUNCTION_ID = 1;
    private static final int FUNCTION_NAME = 2;
    private static final int FUNCTION_SYSTEM_NAME = 3;

    /** The id of the one mapping (the JVM process). */
    private static final long JVM_MAPPING = 1;

    public static final String LABEL_THREAD_NAME = "thread name";
    public static final String LABEL_THREAD_ID = "thread id";
    public static final String LABEL_SPAN_ID = "span id";
    public static final String LABEL_LOCAL_ROOT_SPAN_ID = "local root span id";

    private Pprof() {
    }

    /** The uncompressed profile. */
    public static byte[] encode(Profile profile, EventKind kind) {
        return encode(profile, kind, false);
    }

    /**
     * With {@code simpleNames} ({@code --simple}), a function's name leaves its class's package out;
     * its system name stays whole, so methods of two classes with one simple name stay two functions.
     */
    static byte[] encode(Profile profile, EventKind kind, boolean simpleNames) {
        StringTable strings = new StringTable();
        ProtoWriter out = new ProtoWriter();
        ProtoWriter m = new ProtoWriter();
        ProtoWriter inner = new ProtoWriter();

        out.message(PROFILE_SAMPLE_TYPE, valueType(m, strings, kind.countType, "count"));
        out.message(PROFILE_SAMPLE_TYPE, valueType(m, strings, kind.valueType, kind.unit));

        List<Profile.Frame> frames = profile.frames();
        // Profile frame index -> location id (1-based); functions by (name, descriptor).
        long[] locationOf = new long[frames.size()];
        Map<String, Long> functions = new HashMap<>();
        Map<String, Long> locations = new HashMap<>();
        ProtoWriter functionTable = new ProtoWriter();
        ProtoWriter locationTable = new ProtoWriter();
        long[] ids = new long[16];
        for (Profile.Sample s : profile.samples(kind)) {
            if (ids.length < s.stack.length) {
                ids = new long[s.stack.length * 2];
            }
            for (int i = 0; i < s.stack.length; i++) {
                int f = s.stack[i];
                if (locationOf[f] == 0) {
                    Profile.Frame frame = frames.get(f);
                    String name = frame.name();
                    String system = name + frame.descriptor;
                    if (simpleNames && !frame.className.isEmpty()) {
                        name = FrameNames.simpleName(frame.className) + "." + frame.method;
                    }
                    Long fn = functions.get(system);
                    if (fn == null) {
                        fn = (long) functions.size() + 1;
                        functions.put(system, fn);
                        m.reset();
                        m.varint(FUNCTION_ID, fn)
                                .varint(FUNCTION_NAME, strings.id(name))
                                .varint(FUNCTION_SYSTEM_NAME, strings.id(system));
                        functionTable.message(PROFILE_FUNCTION, m);
                    }
                    String key = fn + ":" + frame.line;
                    Long loc = locations.get(key);
                    if (loc == null) {
                        loc = (long) locations.size() + 1;
                        locations.put(key, loc);
                        inner.reset();
                        inner.varint(LINE_FUNCTION_ID, fn).varint(LINE_LINE, frame.line);
                        m.reset();
                        m.varint(LOCATION_ID, loc).varint(LOCATION_MAPPING_ID, JVM_MAPPING)
                                .message(LOCATION_LINE, inner);
                        locationTable.message(PROFILE_LOCATION, m);
                    }
                    locationOf[f] = loc;
                }
                ids[i] = locationOf[f];
            }
            m.reset();
            m.packed(SAMPLE_LOCATION_ID, ids, s.stack.length);
            m.packed(SAMPLE_VALUE, new long[] {s.count, profile.valueInUnit(s)}, 2);
            if (s.thread >= 0) {
                Profile.ThreadInfo t = profile.threads().get(s.thread);
                m.message(SAMPLE_LABEL, strLabel(inner, strings, LABEL_THREAD_NAME, t.name));
                if (t.osId > 0) {
                    m.message(SAMPLE_LABEL, numLabel(inner, strings, LABEL_THREAD_ID, t.osId));
                }
            }
            if (s.spanId != 0) {
                m.message(SAMPLE_LABEL, numLabel(inner, strings, LABEL_SPAN_ID, s.spanId));
            }
            if (s.localRootSpanId != 0) {
                m.message(SAMPLE_LABEL, numLabel(inner, strings, LABEL_LOCAL_ROOT_SPAN_ID, s.localRootSpanId));
            }
            if (s.attributes != null) {
                for (int a = 0; a < s.attributes.length; a++) {
                    if (s.attributes[a] != null) {
                        m.message(SAMPLE_LABEL,
                                strLabel(inner, strings, profile.attributeNames().get(a), s.attributes[a]));
                    }
                }
            }
            out.message(PROFILE_SAMPLE, m);
        }
        // Field order on the wire is free; tables after the samples that filled them.
        ProtoWriter tables = new ProtoWriter();
        byte[] loc = locationTable.toByteArray();
        byte[] fn = functionTable.toByteArray();
        ProtoWriter whole = new ProtoWriter();
        whole.raw(out.toByteArray());
        // One mapping, the JVM process: every location is in it, and its functions and lines are
        // given (nothing for pprof to symbolize). Without one pprof says "Main binary filename not
        // available"; the recording does not say which library a native frame came from, so there
        // is no mapping per library.
        m.reset();
        m.varint(MAPPING_ID, JVM_MAPPING)
                .varint(MAPPING_FILENAME, strings.id(profile.jvm == null || profile.jvm.isEmpty() ? "java" : profile.jvm))
                .varint(MAPPING_HAS_FUNCTIONS, 1)
                .varint(MAPPING_HAS_LINE_NUMBERS, 1);
        whole.message(PROFILE_MAPPING, m);
        whole.raw(loc);
        whole.raw(fn);
        whole.varint(PROFILE_TIME_NANOS, profile.startNanos);
        whole.varint(PROFILE_DURATION_NANOS, Math.max(0, profile.endNanos - profile.startNanos));
        whole.message(PROFILE_PERIOD_TYPE, valueType(m, strings, kind.valueType, kind.unit));
        whole.varint(PROFILE_PERIOD, profile.intervalNanos(kind));
        whole.varint(PROFILE_DEFAULT_SAMPLE_TYPE, strings.id(kind.valueType));
        for (String s : strings.strings()) {
            tables.repeatedString(PROFILE_STRING_TABLE, s);
        }
        whole.raw(tables.toByteArray());
        return whole.toByteArray();
    }

    public static void write(Profile profile, EventKind kind, OutputStream out) throws IOException {
        write(profile, kind, false, out);
    }

    static void write(Profile profile, EventKind kind, boolean simpleNames, OutputStream out) throws IOException {
        GZIPOutputStream gz = new GZIPOutputStream(out);
        gz.write(encode(profile, kind, simpleNames));
        gz.finish();
    }

    private static ProtoWriter valueType(ProtoWriter m, StringTable strings, String type, String unit) {
        m.reset();
        return m.varint(VALUE_TYPE_TYPE, strings.id(type)).varint(VALUE_TYPE_UNIT, strings.id(unit));
    }

    private static ProtoWriter strLabel(ProtoWriter m, StringTable strings, String key, String value) {
        m.reset();
        return m.varint(LABEL_KEY, strings.id(key)).varint(LABEL_STR, strings.id(value));
    }

    private static ProtoWriter numLabel(ProtoWriter m, StringTable strings, String key, long value) {
        m.reset();
        return m.varint(LABEL_KEY, strings.id(key)).varint(LABEL_NUM, value);
    }
}
