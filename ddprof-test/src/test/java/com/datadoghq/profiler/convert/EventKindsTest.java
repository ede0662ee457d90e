package com.datadoghq.profiler.convert;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.GZIPInputStream;

import com.datadoghq.profiler.convert.pprof.ProfileProto;
import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.TestEnv;
import io.opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest;
import jdk.jfr.Event;
import jdk.jfr.Name;
import jdk.jfr.Recording;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The converter's reading of the wall and memory sample events, on a recording made with the
 * JDK's own JFR API carrying events of those names and the fields the profiler writes
 * ({@code datadog.MethodSample}: weight long, span ids; {@code datadog.ObjectSample} and
 * {@code datadog.HeapLiveObject}: size long, weight float). The values are chosen here, so the
 * expected totals are exact: wall = sum of weights, alloc/live = sum of round(size * weight).
 */
class EventKindsTest {
    @Name("datadog.MethodSample")
    static final class WallSample extends Event {
        long weight;
        long spanId;
        long localRootSpanId;
    }

    @Name("datadog.ObjectSample")
    static final class ObjectSample extends Event {
        long size;
        float weight;
        long spanId;
        long localRootSpanId;
    }

    @Name("datadog.HeapLiveObject")
    static final class LiveObject extends Event {
        long age;
        long size;
        float weight;
        long spanId;
        long localRootSpanId;
    }

    @TempDir
    Path dir;

    static void wallSite(long weight, long span) {
        WallSample e = new WallSample();
        e.weight = weight;
        e.spanId = span;
        e.localRootSpanId = span == 0 ? 0 : 7;
        e.commit();
    }

    static void allocSite(long size, float weight) {
        ObjectSample e = new ObjectSample();
        e.size = size;
        e.weight = weight;
        e.commit();
    }

    static void liveSite(long size, float weight) {
        LiveObject e = new LiveObject();
        e.size = size;
        e.weight = weight;
        e.commit();
    }

    ProfileProto.Profile pprof(Path jfr, String kind) throws Exception {
        Path out = dir.resolve(kind + ".pb.gz");
        ChildJvm.Result r = new ChildJvm().jvmArgs("-jar", TestEnv.toolsJar().toString(), "convert", "--to", "pprof",
                "--event", kind, jfr.toString(), out.toString()).timeout(Duration.ofMinutes(3)).run(dir);
        assertEquals(0, r.exitCode, r.describe());
        try (InputStream in = new GZIPInputStream(Files.newInputStream(out))) {
            return ProfileProto.Profile.parseFrom(in);
        }
    }

    static long sum(ProfileProto.Profile p, int value) {
        return p.getSampleList().stream().mapToLong(s -> s.getValue(value)).sum();
    }

    static List<String> types(ProfileProto.Profile p) {
        List<String> out = new ArrayList<>();
        p.getSampleTypeList().forEach(t -> out.add(p.getStringTable((int) t.getType()) + "/"
                + p.getStringTable((int) t.getUnit())));
        return out;
    }

    /** Total of value {@code value} over samples whose stack has {@code method} of this class. */
    static long sumAt(ProfileProto.Profile p, String method, int value) {
        Map<Long, String> fnName = new HashMap<>();
        p.getFunctionList().forEach(f -> fnName.put(f.getId(), p.getStringTable((int) f.getName())));
        Map<Long, String> locName = new HashMap<>();
        p.getLocationList().forEach(l -> locName.put(l.getId(), fnName.get(l.getLine(0).getFunctionId())));
        String full = EventKindsTest.class.getName() + "." + method;
        return p.getSampleList().stream()
                .filter(s -> s.getLocationIdList().stream().anyMatch(id -> full.equals(locName.get(id))))
                .mapToLong(s -> s.getValue(value)).sum();
    }

    @Test
    void wallAllocAndLiveSamples() throws Exception {
        Path jfr = dir.resolve("kinds.jfr");
        long[] wallWeights = {1, 1, 3, 1, 2};
        long[] sizes = {1024, 300_000, 16, 4_000_000};
        float[] weights = {512.5f, 2.25f, 32768.0f, 1.0f};
        try (Recording r = new Recording()) {
            for (String name : Arrays.asList("datadog.MethodSample", "datadog.ObjectSample", "datadog.HeapLiveObject")) {
                r.enable(name).withStackTrace();
            }
            r.start();
            for (int i = 0; i < wallWeights.length; i++) {
                wallSite(wallWeights[i], i % 2 == 0 ? 4242 : 0);
            }
            for (int i = 0; i < sizes.length; i++) {
                allocSite(sizes[i], weights[i]);
                liveSite(sizes[i] / 2, weights[i]);
            }
            r.stop();
            r.dump(jfr);
        }
        long wallTotal = Arrays.stream(wallWeights).sum();
        long allocBytes = 0;
        long liveBytes = 0;
        for (int i = 0; i < sizes.length; i++) {
            allocBytes += Math.round(sizes[i] * (double) weights[i]);
            liveBytes += Math.round(sizes[i] / 2 * (double) weights[i]);
        }

        ProfileProto.Profile wall = pprof(jfr, "wall");
        assertEquals(Arrays.asList("samples/count", "wall/nanoseconds"), types(wall));
        assertEquals(wallWeights.length, sum(wall, 0));
        // No DatadogProfilerConfig in this file: the default wall interval, 50 ms.
        assertEquals(wallTotal * 50_000_000L, sum(wall, 1));
        assertEquals(wallTotal * 50_000_000L, sumAt(wall, "wallSite", 1));

        ProfileProto.Profile alloc = pprof(jfr, "alloc");
        assertEquals(Arrays.asList("alloc_samples/count", "alloc_space/bytes"), types(alloc));
        assertEquals(sizes.length, sum(alloc, 0));
        assertEquals(allocBytes, sum(alloc, 1));
        assertEquals(allocBytes, sumAt(alloc, "allocSite", 1));

        ProfileProto.Profile live = pprof(jfr, "live");
        assertEquals(Arrays.asList("inuse_objects/count", "inuse_space/bytes"), types(live));
        assertEquals(sizes.length, sum(live, 0));
        assertEquals(liveBytes, sum(live, 1));

        // OTLP: one profile per kind in one request.
        Path otlp = dir.resolve("kinds.otlp.pb");
        ChildJvm.Result r = new ChildJvm().jvmArgs("-jar", TestEnv.toolsJar().toString(), "convert", "--to", "otlp",
                jfr.toString(), otlp.toString()).timeout(Duration.ofMinutes(3)).run(dir);
        assertEquals(0, r.exitCode, r.describe());
        ExportProfilesServiceRequest request = ExportProfilesServiceRequest.parseFrom(Files.readAllBytes(otlp));
        List<String> st = request.getDictionary().getStringTableList();
        Map<String, Long> totals = new HashMap<>();
        for (var profile : request.getResourceProfiles(0).getScopeProfiles(0).getProfilesList()) {
            String type = st.get(profile.getSampleType().getTypeStrindex());
            String key = profile.hasPeriodType() ? st.get(profile.getPeriodType().getTypeStrindex()) : type;
            totals.put(key, profile.getSamplesList().stream().mapToLong(s -> s.getValues(0)).sum());
        }
        assertEquals(Map.of("wall", wallTotal, "alloc_space", allocBytes, "inuse_space", liveBytes), totals);

        // Collapsed: the default kind of this file is wall (no cpu samples).
        Path collapsed = dir.resolve("kinds.collapsed");
        r = new ChildJvm().jvmArgs("-jar", TestEnv.toolsJar().toString(), "convert", "--to", "collapsed",
                jfr.toString(), collapsed.toString()).run(dir);
        assertEquals(0, r.exitCode, r.describe());
        long lines = 0;
        for (String line : Files.readAllLines(collapsed)) {
            assertTrue(line.contains(EventKindsTest.class.getName() + ".wallSite"), line);
            lines += Long.parseLong(line.substring(line.lastIndexOf(' ') + 1));
        }
        assertEquals(wallTotal, lines);
    }
}
