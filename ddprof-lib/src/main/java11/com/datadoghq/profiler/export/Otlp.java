package com.datadoghq.profiler.export;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import com.datadoghq.profiler.Main;

/**
 * OpenTelemetry's profiles signal: one {@code ExportProfilesServiceRequest}
 * ({@code opentelemetry/proto/collector/profiles/v1development}) per recording, with one
 * resource, one scope ({@code ddprof}, the library version) and one {@code Profile} per event
 * kind, all sharing one {@code ProfilesDictionary}.
 *
 * <ul>
 *   <li>Profile: {@code sample_type} {@code samples/count} for cpu and wall (with
 *       {@code period_type} {@code cpu|wall/nanoseconds} and {@code period} = the interval), or
 *       {@code alloc_space|inuse_space/bytes} for memory; {@code time_unix_nano},
 *       {@code duration_nano} from the chunk headers; a random 16-byte {@code profile_id}.</li>
 *   <li>Sample: {@code stack_index}, one value (the summed {@link Profile.Sample#value}),
 *       attributes {@code thread.name}, {@code thread.id}, {@code datadog.local_root_span_id} and
 *       each set context attribute; {@code link_index} to a Link carrying the sample's span id
 *       (8 bytes, big-endian) and, when the recording links its local root span to a trace
 *       ({@code datadog.TraceLink}), the 16-byte trace id; else {@code trace_id} stays empty.</li>
 *   <li>Dictionary: entry 0 of every table is the zero value, as the protocol requires; one
 *       Function per method ({@code name_strindex} = {@code pkg.Class.method},
 *       {@code system_name_strindex} adds the descriptor), one Location per (method, line).</li>
 *   <li>Resource attributes: {@code process.pid} and {@code process.runtime.description} from
 *       {@code jdk.JVMInformation}, when recorded.</li>
 * </ul>
 */
public final class Otlp {
    // profiles_service.proto: ExportProfilesServiceRequest
    private static final int REQUEST_RESOURCE_PROFILES = 1;
    private static final int REQUEST_DICTIONARY = 2;
    // ResourceProfiles / ScopeProfiles
    private static final int RESOURCE_PROFILES_RESOURCE = 1;
    private static final int RESOURCE_PROFILES_SCOPE_PROFILES = 2;
    private static final int SCOPE_PROFILES_SCOPE = 1;
    private static final int SCOPE_PROFILES_PROFILES = 2;
    // resource.proto / common.proto
    private static final int RESOURCE_ATTRIBUTES = 1;
    private static final int SCOPE_NAME = 1;
    private static final int SCOPE_VERSION = 2;
    private static final int KEY_VALUE_KEY = 1;
    private static final int KEY_VALUE_VALUE = 2;
    private static final int ANY_STRING = 1;
    private static final int ANY_INT = 3;
    // profiles.proto: Profile
    private static final int PROFILE_SAMPLE_TYPE = 1;
    private static final int PROFILE_SAMPLES = 2;
    private static final int PROFILE_TIME_UNIX_NANO = 3;
    private static final int PROFILE_DURATION_NANO = 4;
    private static final int PROFILE_PERIOD_TYPE = 5;
    private static final int PROFILE_PERIOD = 6;
    private static final int PROFILE_PROFILE_ID = 7;
    private static final int VALUE_TYPE_TYPE = 1;
    private static final int VALUE_TYPE_UNIT = 2;
    private static final int SAMPLE_STACK_INDEX = 1;
    private static final int SAMPLE_ATTRIBUTE_INDICES = 2;
    private static final int SAMPLE_LINK_INDEX = 3;
    private static final int SAMPLE_VALUES = 4;
    // ProfilesDictionary
    private static final int DICT_MAPPING_TABLE = 1;
    private static final int DICT_LOCATION_TABLE = 2;
    private static final int DICT_FUNCTION_TABLE = 3;
    private static final int DICT_LINK_TABLE = 4;
    private static final int DICT_STRING_TABLE = 5;
    private static final int DICT_ATTRIBUTE_TABLE = 6;
    private static final int DICT_STACK_TABLE = 7;
    private static final int LOCATION_LINES = 3;
    private static final int LINE_FUNCTION_INDEX = 1;
    private static final int LINE_LINE = 2;
    private static final int FUNCTION_NAME = 1;
    private static final int FUNCTION_SYSTEM_NAME = 2;
    private static final int LINK_TRACE_ID = 1;
    private static final int LINK_SPAN_ID = 2;
    private static final int KVU_KEY = 1;
    private static final int KVU_VALUE = 2;
    private static final int STACK_LOCATION_INDICES = 1;

    public static final String ATTR_THREAD_NAME = "thread.name";
    public static final String ATTR_THREAD_ID = "thread.id";
    public static final String ATTR_LOCAL_ROOT_SPAN_ID = "datadog.local_root_span_id";
    public static final String SCOPE = "ddprof";

    private Otlp() {
    }

    /** The dictionary being filled while the profiles are written. */
    private static final class Dictionary {
        final StringTable strings = new StringTable();
        final ProtoWriter locations = new ProtoWriter();
        final ProtoWriter functions = new ProtoWriter();
        final ProtoWriter links = new ProtoWriter();
        final ProtoWriter attributes = new ProtoWriter();
        final ProtoWriter stacks = new ProtoWriter();
        final Map<String, Integer> functionIds = new HashMap<>();
        final Map<String, Integer> locationIds = new HashMap<>();
        final Map<String, Integer> linkIds = new HashMap<>();
        final Map<String, Integer> attributeIds = new HashMap<>();
        final Map<String, Integer> stackIds = new HashMap<>();
        final ProtoWriter m = new ProtoWriter();
        final ProtoWriter inner = new ProtoWriter();

        Dictionary() {
            ProtoWriter empty = new ProtoWriter();
            locations.message(DICT_LOCATION_TABLE, empty);
            functions.message(DICT_FUNCTION_TABLE, empty);
            links.message(DICT_LINK_TABLE, empty);
            attributes.message(DICT_ATTRIBUTE_TABLE, empty);
            stacks.message(DICT_STACK_TABLE, empty);
            functionIds.put("", 0);
            locationIds.put("", 0);
            linkIds.put("", 0);
            attributeIds.put("", 0);
            stackIds.put("", 0);
        }

        int function(String name, String system) {
            return functionIds.computeIfAbsent(system, k -> {
                m.reset();
                m.varint(FUNCTION_NAME, strings.id(name)).varint(FUNCTION_SYSTEM_NAME, strings.id(system));
                functions.message(DICT_FUNCTION_TABLE, m);
                return functionIds.size();
            });
        }

        int location(int function, int line) {
            return locationIds.computeIfAbsent(function + ":" + line, k -> {
                inner.reset();
                inner.varint(LINE_FUNCTION_INDEX, function).varint(LINE_LINE, line);
                m.reset();
                m.message(LOCATION_LINES, inner);
                locations.message(DICT_LOCATION_TABLE, m);
                return locationIds.size();
            });
        }

        int stack(long[] locationIndexes, int count) {
            StringBuilder key = new StringBuilder();
            for (int i = 0; i < count; i++) {
                key.append(locationIndexes[i]).append(',');
            }
            return stackIds.computeIfAbsent(key.toString(), k -> {
                m.reset();
                m.packed(STACK_LOCATION_INDICES, locationIndexes, count);
                stacks.message(DICT_STACK_TABLE, m);
                return stackIds.size();
            });
        }

        /** A Link of the span, with its trace id when {@code trace} ({high, low}) is known. */
        int link(long spanId, long[] trace) {
            if (spanId == 0) {
                return 0;
            }
            String key = trace == null ? Long.toString(spanId) : spanId + ":" + trace[0] + ":" + trace[1];
            return linkIds.computeIfAbsent(key, k -> {
                m.reset();
                if (trace != null) {
                    byte[] id = new byte[16];
                    putBigEndian(id, 0, trace[0]);
                    putBigEndian(id, 8, trace[1]);
                    m.bytes(LINK_TRACE_ID, id);
                }
                byte[] id = new byte[8];
                putBigEndian(id, 0, spanId);
                m.bytes(LINK_SPAN_ID, id);
                links.message(DICT_LINK_TABLE, m);
                return linkIds.size();
            });
        }

        private static void putBigEndian(byte[] to, int at, long v) {
            for (int i = 0; i < 8; i++) {
                to[at + i] = (byte) (v >>> (56 - 8 * i));
            }
        }

        int stringAttribute(String key, String value) {
            return attributeIds.computeIfAbsent(key + "\0s" + value, k -> {
                inner.reset();
                inner.repeatedString(ANY_STRING, value);
                return addAttribute(key);
            });
        }

        int intAttribute(String key, long value) {
            return attributeIds.computeIfAbsent(key + "\0i" + value, k -> {
                inner.reset();
                inner.varintAlways(ANY_INT, value); // a oneof member: 0 must still be written
                return addAttribute(key);
            });
        }

        private int addAttribute(String key) {
            m.reset();
            m.varint(KVU_KEY, strings.id(key)).message(KVU_VALUE, inner);
            attributes.message(DICT_ATTRIBUTE_TABLE, m);
            return attributeIds.size(); // computeIfAbsent adds the key after this returns
        }
    }

    /** The request for every kind in the profile (or only {@code only}, when not null). */
    public static byte[] encode(Profile profile, EventKind only) {
        return encode(profile, only, Map.of());
    }

    /**
     * As {@link #encode(Profile, EventKind)}, with {@code resource} (string attributes, e.g.
     * {@code service.name}) first among the resource's attributes; the recording's own
     * {@code process.pid} and {@code process.runtime.description} follow unless given there.
     */
    public static byte[] encode(Profile profile, EventKind only, Map<String, String> resourceAttributes) {
        Dictionary dict = new Dictionary();
        ProtoWriter scope = new ProtoWriter();
        ProtoWriter m = new ProtoWriter();
        m.string(SCOPE_NAME, SCOPE).string(SCOPE_VERSION, Main.version());
        scope.message(SCOPE_PROFILES_SCOPE, m);
        SecureRandom random = new SecureRandom();
        for (EventKind kind : profile.kinds()) {
            if (only != null && kind != only) {
                continue;
            }
            scope.message(SCOPE_PROFILES_PROFILES, profile(profile, kind, dict, random));
        }

        ProtoWriter resource = new ProtoWriter();
        for (Map.Entry<String, String> a : resourceAttributes.entrySet()) {
            resource.message(RESOURCE_ATTRIBUTES, keyValue(new ProtoWriter(), a.getKey(), a.getValue(), 0));
        }
        if (profile.pid > 0 && !resourceAttributes.containsKey("process.pid")) {
            resource.message(RESOURCE_ATTRIBUTES, keyValue(new ProtoWriter(), "process.pid", null, profile.pid));
        }
        if (!profile.jvm.isEmpty() && !resourceAttributes.containsKey("process.runtime.description")) {
            resource.message(RESOURCE_ATTRIBUTES,
                    keyValue(new ProtoWriter(), "process.runtime.description", profile.jvm, 0));
        }
        ProtoWriter resourceProfiles = new ProtoWriter();
        resourceProfiles.message(RESOURCE_PROFILES_RESOURCE, resource);
        resourceProfiles.message(RESOURCE_PROFILES_SCOPE_PROFILES, scope);

        ProtoWriter dictionary = new ProtoWriter();
        dictionary.message(DICT_MAPPING_TABLE, new ProtoWriter());
        dictionary.raw(dict.locations.toByteArray());
        dictionary.raw(dict.functions.toByteArray());
        dictionary.raw(dict.links.toByteArray());
        for (String s : dict.strings.strings()) {
            dictionary.repeatedString(DICT_STRING_TABLE, s);
        }
        dictionary.raw(dict.attributes.toByteArray());
        dictionary.raw(dict.stacks.toByteArray());

        ProtoWriter request = new ProtoWriter();
        request.message(REQUEST_RESOURCE_PROFILES, resourceProfiles);
        request.message(REQUEST_DICTIONARY, dictionary);
        return request.toByteArray();
    }

    private static ProtoWriter profile(Profile profile, EventKind kind, Dictionary dict, SecureRandom random) {
        ProtoWriter p = new ProtoWriter();
        ProtoWriter m = new ProtoWriter();
        StringTable strings = dict.strings;
        boolean time = kind.isTime();
        m.varint(VALUE_TYPE_TYPE, strings.id(time ? kind.countType : kind.valueType))
                .varint(VALUE_TYPE_UNIT, strings.id(time ? "count" : kind.unit));
        p.message(PROFILE_SAMPLE_TYPE, m);

        List<Profile.Frame> frames = profile.frames();
        int[] locationOf = new int[frames.size()];
        long[] indexes = new long[16];
        List<Long> attrs = new ArrayList<>();
        for (Profile.Sample s : profile.samples(kind)) {
            if (indexes.length < s.stack.length) {
                indexes = new long[s.stack.length * 2];
            }
            for (int i = 0; i < s.stack.length; i++) {
                int f = s.stack[i];
                if (locationOf[f] == 0) {
                    Profile.Frame frame = frames.get(f);
                    int fn = dict.function(frame.name(), frame.name() + frame.descriptor);
                    locationOf[f] = dict.location(fn, frame.line);
                }
                indexes[i] = locationOf[f];
            }
            attrs.clear();
            if (s.thread >= 0) {
                Profile.ThreadInfo t = profile.threads().get(s.thread);
                attrs.add((long) dict.stringAttribute(ATTR_THREAD_NAME, t.name));
                if (t.osId > 0) {
                    attrs.add((long) dict.intAttribute(ATTR_THREAD_ID, t.osId));
                }
            }
            if (s.localRootSpanId != 0) {
                attrs.add((long) dict.intAttribute(ATTR_LOCAL_ROOT_SPAN_ID, s.localRootSpanId));
            }
            if (s.attributes != null) {
                for (int a = 0; a < s.attributes.length; a++) {
                    if (s.attributes[a] != null) {
                        attrs.add((long) dict.stringAttribute(profile.attributeNames().get(a), s.attributes[a]));
                    }
                }
            }
            long[] attrArray = new long[attrs.size()];
            for (int i = 0; i < attrArray.length; i++) {
                attrArray[i] = attrs.get(i);
            }
            m.reset();
            m.varint(SAMPLE_STACK_INDEX, dict.stack(indexes, s.stack.length));
            m.packed(SAMPLE_ATTRIBUTE_INDICES, attrArray, attrArray.length);
            m.varint(SAMPLE_LINK_INDEX, dict.link(s.spanId, profile.traceOf(s.localRootSpanId)));
            m.packed(SAMPLE_VALUES, new long[] {profile.correctedValue(s)}, 1);
            p.message(PROFILE_SAMPLES, m);
        }
        p.fixed64(PROFILE_TIME_UNIX_NANO, profile.startNanos);
        p.varint(PROFILE_DURATION_NANO, Math.max(0, profile.endNanos - profile.startNanos));
        if (time) {
            m.reset();
            m.varint(VALUE_TYPE_TYPE, strings.id(kind.valueType)).varint(VALUE_TYPE_UNIT, strings.id(kind.unit));
            p.message(PROFILE_PERIOD_TYPE, m);
            p.varint(PROFILE_PERIOD, profile.intervalNanos(kind));
        }
        byte[] id = new byte[16];
        random.nextBytes(id);
        p.bytes(PROFILE_PROFILE_ID, id);
        return p;
    }

    private static ProtoWriter keyValue(ProtoWriter m, String key, String str, long num) {
        ProtoWriter any = new ProtoWriter();
        if (str != null) {
            any.repeatedString(ANY_STRING, str);
        } else {
            any.varintAlways(ANY_INT, num);
        }
        m.string(KEY_VALUE_KEY, key).message(KEY_VALUE_VALUE, any);
        return m;
    }

    /**
     * POSTs {@code request} to an OTLP/HTTP endpoint ({@code http://host:4318/v1development/profiles}
     * or whatever the receiver serves) as {@code application/x-protobuf}. Returns the HTTP status;
     * throws when the receiver cannot be reached.
     */
    public static int post(byte[] request, URL endpoint, StringBuilder responseBody) throws IOException {
        HttpURLConnection c = (HttpURLConnection) endpoint.openConnection();
        c.setRequestMethod("POST");
        c.setDoOutput(true);
        c.setConnectTimeout(10_000);
        c.setReadTimeout(60_000);
        c.setRequestProperty("Content-Type", "application/x-protobuf");
        c.setFixedLengthStreamingMode(request.length);
        try (OutputStream out = c.getOutputStream()) {
            out.write(request);
        }
        int status = c.getResponseCode();
        InputStream body = status >= 400 ? c.getErrorStream() : c.getInputStream();
        if (body != null) {
            try (InputStream in = body) {
                responseBody.append(new String(in.readAllBytes(), StandardCharsets.UTF_8));
            }
        }
        c.disconnect();
        return status;
    }
}
