package com.datadoghq.profiler.export;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.TestEnv;
import io.opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.profiles.v1development.Profile;
import io.opentelemetry.proto.profiles.v1development.ProfilesDictionary;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The OTLP exporter (docs/exporter.md) as a user runs it: {@code -javaagent:ddprof.jar=start,...,
 * otlp=URL,otlpinterval=1s} in a child JVM, a fake collector here. Each request is checked
 * against the recording file, which holds every chunk the exporter cut plus stop's last one:
 * each request's CPU sample count equals its chunk's {@code datadog.ExecutionSample} count (by
 * weight), and
 * every chunk with samples reached the collector (or, past the backlog bound, was counted
 * dropped). The child runs until a counter reaches a value, never for a wall-clock window.
 */
class OtlpExportTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(120);

    @TempDir
    Path dir;

    /** The README's one-line setup (docs/exporter.md), with a short interval. */
    @Test
    void exportsEachIntervalWithHeadersResourceLinksAndAFinalExportAtStop() throws Exception {
        try (OtlpCollector collector = new OtlpCollector(i -> 200)) {
            Path file = dir.resolve("app.jfr");
            ChildJvm.Result r = child(collector, file, "cpu,wall,filter=,memory,otlpinterval=1s", "otlp_exports", 2, "stop")
                    .env("OTEL_SERVICE_NAME", "env-service")
                    .env("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=test%20env,service.version=1.2.3")
                    .env("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=s3cret,x-tenant=team%2Fa")
                    .run(dir);
            assertRan(r);
            List<OtlpCollector.Request> requests = collector.requests();
            assertTrue(requests.size() >= 3, "two interval exports and stop's final one:\n" + r.describe());
            for (OtlpCollector.Request q : requests) {
                assertEquals("/v1development/profiles", q.path);
                assertEquals("application/x-protobuf", q.headers.get("content-type"));
                assertEquals("gzip", q.headers.get("content-encoding"));
                assertEquals("s3cret", q.headers.get("x-api-key"));
                assertEquals("team/a", q.headers.get("x-tenant"));
                ExportProfilesServiceRequest req = q.decode();
                Map<String, String> resource = resource(req);
                assertEquals("env-service", resource.get("service.name"));
                assertEquals("1.2.3", resource.get("service.version"));
                assertEquals("test env", resource.get("deployment.environment"));
                assertNotNull(resource.get("host.name"));
                assertNotNull(resource.get("process.pid"));
            }
            Map<Long, Long> chunks = cpuSamplesByChunk(file);
            assertEveryChunkExported(chunks, requests, r);
            // Span links and attributes on the workload's samples.
            long linked = 0;
            boolean threadNamed = false;
            boolean wall = false;
            for (OtlpCollector.Request q : requests) {
                ExportProfilesServiceRequest req = q.decode();
                ProfilesDictionary dict = req.getDictionary();
                for (Profile p : req.getResourceProfiles(0).getScopeProfiles(0).getProfilesList()) {
                    wall |= "wall".equals(dict.getStringTable(p.getPeriodType().getTypeStrindex()));
                    for (var s : p.getSamplesList()) {
                        if (s.getLinkIndex() != 0) {
                            var link = dict.getLinkTable(s.getLinkIndex());
                            if (ByteBuffer.wrap(link.getSpanId().toByteArray()).getLong() == OtlpExportMain.SPAN) {
                                linked += s.getValues(0);
                            }
                        }
                        for (int a : s.getAttributeIndicesList()) {
                            var kv = dict.getAttributeTable(a);
                            if (dict.getStringTable(kv.getKeyStrindex()).equals("thread.name")
                                    && kv.getValue().getStringValue().equals("cpu-worker")) {
                                threadNamed = true;
                            }
                        }
                    }
                }
            }
            assertTrue(linked > 0, "no sample linked to the workload's span");
            assertTrue(threadNamed, "no sample with thread.name=cpu-worker");
            assertTrue(wall, "no wall profile");
            Map<String, Long> counters = counters(r);
            assertEquals(requests.size(), counters.get("otlp_exports"));
            assertEquals(0, counters.get("otlp_export_failures"));
            assertEquals(0, counters.get("otlp_dropped"));
            assertEquals(requests.stream().mapToLong(q -> q.body.length).sum(), counters.get("otlp_bytes"));
            assertFalse(r.stderr.contains("Unknown argument"), r.describe());
            assertEquals(List.of(), backlog(file), "nothing left queued");
        }
    }

    @Test
    void refusedExportsAreKeptAndReplayedWhenTheCollectorRecovers() throws Exception {
        int refused = 3;
        try (OtlpCollector collector = new OtlpCollector(i -> i < refused ? 503 : 200)) {
            Path file = dir.resolve("replay.jfr");
            ChildJvm.Result r = child(collector, file, "cpu=10ms,otlpinterval=1s,otlpservice=option-service",
                    "otlp_exports", 2, "stop")
                    .env("OTEL_SERVICE_NAME", "env-service")
                    .run(dir);
            assertRan(r);
            List<OtlpCollector.Request> requests = collector.requests();
            List<OtlpCollector.Request> accepted = requests.stream().filter(q -> q.answered == 200)
                    .collect(Collectors.toList());
            for (OtlpCollector.Request q : accepted) {
                assertEquals("option-service", resource(q.decode()).get("service.name"), "the option wins");
            }
            assertEveryChunkExported(cpuSamplesByChunk(file), accepted, r);
            Map<String, Long> counters = counters(r);
            assertEquals(refused, counters.get("otlp_export_failures"), r.describe());
            assertEquals(accepted.size(), counters.get("otlp_exports"));
            assertEquals(0, counters.get("otlp_dropped"));
            assertEquals(accepted.stream().mapToLong(q -> q.body.length).sum(), counters.get("otlp_bytes"));
            // A refused request is sent again as it was: the first accepted one is the first refused one.
            assertTrue(Arrays.equals(requests.get(0).body, accepted.get(0).body), "the oldest goes first");
        }
    }

    @Test
    void pastTheBacklogBoundTheOldestAreDroppedAndTheRestSentByTheNextSession() throws Exception {
        Path file = dir.resolve("bounded.jfr");
        try (OtlpCollector down = new OtlpCollector(i -> 503)) {
            ChildJvm.Result r = child(down, file, "cpu=10ms,otlpinterval=1s,otlpbacklog=2", "otlp_dropped", 2, "stop")
                    .run(dir);
            assertRan(r);
            Map<String, Long> counters = counters(r);
            assertEquals(0, counters.get("otlp_exports"));
            List<Path> left = backlog(file);
            assertEquals(2, left.size(), "the bound: " + left);
            Map<Long, Long> chunks = cpuSamplesByChunk(file);
            long withSamples = chunks.values().stream().filter(n -> n > 0).count();
            // Each chunk with samples was queued once: it is left, or it was dropped.
            assertEquals(withSamples, left.size() + counters.get("otlp_dropped"), chunks + "\n" + r.describe());
            // The ones left are the newest: the last two chunks with samples.
            List<Long> newest = chunks.entrySet().stream().filter(e -> e.getValue() > 0).map(Map.Entry::getKey)
                    .sorted().skip(withSamples - 2).collect(Collectors.toList());
            List<Long> leftStarts = new ArrayList<>();
            for (Path p : left) {
                OtlpCollector.Request q = new OtlpCollector.Request(0, "", Map.of("content-encoding", "gzip"),
                        Files.readAllBytes(p), 0);
                leftStarts.add(startOf(q.decode()));
            }
            assertEquals(newest, leftStarts);
            Files.copy(file, dir.resolve("first-session.jfr"));
        }
        // The next session with the same file sends what the first one left, first.
        try (OtlpCollector up = new OtlpCollector(i -> 200)) {
            ChildJvm.Result r = child(up, file, "cpu=10ms,otlpinterval=1s", "otlp_exports", 3, "stop").run(dir);
            assertRan(r);
            List<OtlpCollector.Request> requests = up.requests();
            Map<Long, Long> first = cpuSamplesByChunk(dir.resolve("first-session.jfr"));
            List<Long> newest = first.entrySet().stream().filter(e -> e.getValue() > 0).map(Map.Entry::getKey)
                    .sorted().skip(first.values().stream().filter(n -> n > 0).count() - 2)
                    .collect(Collectors.toList());
            assertEquals(newest, List.of(startOf(requests.get(0).decode()), startOf(requests.get(1).decode())));
            assertEquals(List.of(), backlog(file));
        }
    }

    @Test
    void aJvmThatExitsWithoutStopStillSendsItsLastInterval() throws Exception {
        try (OtlpCollector collector = new OtlpCollector(i -> 200)) {
            Path file = dir.resolve("exit.jfr");
            ChildJvm.Result r = child(collector, file, "cpu=10ms,otlpinterval=1s", "otlp_exports", 1, "exit")
                    .run(dir);
            assertRan(r);
            assertEveryChunkExported(cpuSamplesByChunk(file), collector.requests(), r);
        }
    }

    /**
     * A collector that takes the connection and never answers must not hold up the application:
     * stop abandons the POST in flight, tries the final export within its budget (10 s), and
     * keeps every request on disk.
     */
    @Test
    void aHungCollectorDoesNotHoldUpStopAndNothingIsLost() throws Exception {
        try (OtlpCollector hung = new OtlpCollector(i -> -1)) {
            Path file = dir.resolve("hung.jfr");
            Path inFlight = dir.resolve("request-in-flight");
            hung.touchOnRequest = inFlight;
            ChildJvm.Result r = new ChildJvm()
                    .jvmArgs("-javaagent:" + TestEnv.libJar() + "=start,cpu,otlpinterval=1s,otlp=" + hung.url()
                            + ",file=" + file)
                    .main(OtlpExportMain.class, "otlp_exports", "0", "stop", inFlight.toString())
                    .timeout(TIMEOUT)
                    .run(dir);
            assertRan(r);
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("stop took (\\d+) ms").matcher(r.stdout);
            assertTrue(m.find(), r.describe());
            // Abandoning the POST: at most 5 s; the final export: at most 10 s. Without the
            // cut-off, stop waited for the 30 s read timeout.
            assertTrue(Long.parseLong(m.group(1)) < 25_000, "stop took " + m.group(1) + " ms\n" + r.describe());
            Map<String, Long> counters = counters(r);
            assertEquals(0, counters.get("otlp_exports"));
            assertEquals(0, counters.get("otlp_dropped"));
            long withSamples = cpuSamplesByChunk(file).values().stream().filter(n -> n > 0).count();
            assertEquals(withSamples, backlog(file).size(), "every chunk with samples is kept\n" + r.describe());
        }
    }

    /** The README's line as written, without file=: the recording goes to java.io.tmpdir. */
    @Test
    void withoutFileTheRecordingGoesToTheTempDirectory() throws Exception {
        try (OtlpCollector collector = new OtlpCollector(i -> 200)) {
            Path tmp = Files.createDirectories(dir.resolve("tmp"));
            ChildJvm.Result r = new ChildJvm()
                    .jvmArgs("-Djava.io.tmpdir=" + tmp, "-javaagent:" + TestEnv.libJar()
                            + "=start,cpu,wall,filter=,memory,otlp=" + collector.url() + ",otlpinterval=1s")
                    .main(OtlpExportMain.class, "otlp_exports", "1", "stop")
                    .timeout(TIMEOUT)
                    .run(dir);
            assertRan(r);
            List<Path> recordings;
            try (Stream<Path> s = Files.list(tmp)) {
                recordings = s.filter(p -> p.getFileName().toString().matches("ddprof-otlp-\\d+\\.jfr"))
                        .collect(Collectors.toList());
            }
            assertEquals(1, recordings.size(), "one ddprof-otlp-<pid>.jfr in " + tmp + ":\n" + r.describe());
            assertEveryChunkExported(cpuSamplesByChunk(recordings.get(0)), collector.requests(), r);
        }
    }

    @Test
    void badExporterValuesRefuseTheStartAndChangeNothing() throws Exception {
        JavaProfiler profiler = TestEnv.profiler();
        TestEnv.stopQuietly(profiler);
        Path file = dir.resolve("bad.jfr");
        String[][] cases = {
            {"otlp=ftp://127.0.0.1/x", "Invalid value 'ftp://127.0.0.1/x' for option 'otlp': expected an http:// or https:// URL"},
            {"otlp=http://", "option 'otlp'"},
            {"otlp=", "option 'otlp': must not be empty"},
            {"otlp=http://127.0.0.1:1/p,otlpinterval=abc", "Invalid value 'abc' for option 'otlpinterval': expected a duration"},
            {"otlp=http://127.0.0.1:1/p,otlpinterval=10ms", "option 'otlpinterval': must be between 1s and 24h"},
            {"otlp=http://127.0.0.1:1/p,otlpbacklog=0", "option 'otlpbacklog'"},
            {"otlp=http://127.0.0.1:1/p,otlpattr=novalue", "option 'otlpattr': expected KEY=VALUE"},
            {"otlpinterval=5s", "'otlpinterval' needs otlp=URL"},
        };
        for (String[] c : cases) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> profiler.execute("start,cpu=10ms," + c[0] + ",file=" + file), c[0]);
            assertTrue(e.getMessage().contains(c[1]), c[0] + ": " + e.getMessage());
            assertFalse(TestEnv.isRunning(profiler), c[0] + " started the profiler");
            assertFalse(Files.exists(file), c[0] + " created the recording");
        }
    }

    // ---- helpers ----

    static ChildJvm child(OtlpCollector collector, Path file, String options, String counter, long until,
                                  String mode) {
        return new ChildJvm()
                .jvmArgs("-javaagent:" + TestEnv.libJar() + "=start," + options + ",otlp=" + collector.url()
                        + ",file=" + file)
                .main(OtlpExportMain.class, counter, Long.toString(until), mode)
                .timeout(TIMEOUT);
    }

    static void assertRan(ChildJvm.Result r) {
        assertFalse(r.timedOut, "child JVM hung:\n" + r.describe());
        assertEquals(0, r.exitCode, "child JVM failed:\n" + r.describe());
        assertTrue(r.stdout.contains("workload done"), r.describe());
    }

    /**
     * Every chunk of the recording that holds CPU samples arrived in exactly one accepted
     * request, whose CPU profile counts as many samples as the chunk holds events.
     */
    private static void assertEveryChunkExported(Map<Long, Long> chunks, List<OtlpCollector.Request> requests,
                                                 ChildJvm.Result r) throws IOException {
        Map<Long, Long> exported = new HashMap<>();
        for (OtlpCollector.Request q : requests) {
            if (q.answered / 100 != 2) {
                continue;
            }
            ExportProfilesServiceRequest req = q.decode();
            Long before = exported.put(startOf(req), cpuSamples(req));
            assertEquals(null, before, "a chunk exported twice");
        }
        Map<Long, Long> expected = new HashMap<>();
        chunks.forEach((start, n) -> {
            if (n > 0) {
                expected.put(start, n);
            }
        });
        Map<Long, Long> got = new HashMap<>();
        exported.forEach((start, n) -> {
            if (n > 0) {
                got.put(start, n);
            }
        });
        assertEquals(expected, got, "CPU samples by chunk start: recording vs collector\n" + r.describe());
        assertTrue(expected.size() >= 2, "at least two chunks with samples: " + expected);
    }

    /** The CPU sample count of a request's {@code cpu} profile (0 without one). */
    static long cpuSamples(ExportProfilesServiceRequest req) {
        List<String> st = req.getDictionary().getStringTableList();
        long n = 0;
        for (Profile p : req.getResourceProfiles(0).getScopeProfiles(0).getProfilesList()) {
            if ("cpu".equals(st.get(p.getPeriodType().getTypeStrindex()))) {
                for (var s : p.getSamplesList()) {
                    n += s.getValues(0);
                }
            }
        }
        return n;
    }

    private static long startOf(ExportProfilesServiceRequest req) {
        return req.getResourceProfiles(0).getScopeProfiles(0).getProfiles(0).getTimeUnixNano();
    }

    /**
     * The resource's attributes as strings. Keys and string values may be written inline (ours) or
     * as indexes into the dictionary's string table (what the collector re-encodes to).
     */
    static Map<String, String> resource(ExportProfilesServiceRequest req) {
        List<String> st = req.getDictionary().getStringTableList();
        Map<String, String> out = new HashMap<>();
        for (KeyValue kv : req.getResourceProfiles(0).getResource().getAttributesList()) {
            String key = kv.getKey().isEmpty() ? st.get(kv.getKeyStrindex()) : kv.getKey();
            var v = kv.getValue();
            String value = v.hasStringValue() ? v.getStringValue()
                    : v.hasStringValueStrindex() ? st.get(v.getStringValueStrindex())
                    : Long.toString(v.getIntValue());
            out.put(key, value);
        }
        return out;
    }

    /** {chunk start (epoch ns, from its header) -> datadog.ExecutionSample events, by weight} of a recording. */
    static Map<Long, Long> cpuSamplesByChunk(Path recording) throws IOException {
        byte[] all = Files.readAllBytes(recording);
        Map<Long, Long> out = new HashMap<>();
        ByteBuffer b = ByteBuffer.wrap(all);
        int at = 0;
        int n = 0;
        while (at + 68 <= all.length) {
            assertEquals(0x464c5200, b.getInt(at), "chunk magic at " + at);
            long size = b.getLong(at + 8);
            long start = b.getLong(at + 32);
            Path chunk = recording.resolveSibling(recording.getFileName() + ".chunk" + n++);
            Files.write(chunk, Arrays.copyOfRange(all, at, (int) (at + size)));
            // A CPU sample counts its weight (the periods it stands for), as the converter does.
            long samples = 0;
            for (var e : JfrReader.ofType(JfrReader.readAll(chunk), JfrReader.EXECUTION_SAMPLE)) {
                samples += e.hasField("weight") && e.getLong("weight") > 0 ? e.getLong("weight") : 1;
            }
            Files.delete(chunk);
            out.merge(start, samples, Long::sum);
            at += (int) size;
        }
        assertEquals(all.length, at, "the recording ends with a whole chunk");
        return out;
    }

    private static List<Path> backlog(Path recording) throws IOException {
        Path dir = recording.resolveSibling(recording.getFileName() + ".otlp");
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> p.getFileName().toString().endsWith(".otlp.pb.gz")).sorted()
                    .collect(Collectors.toList());
        }
    }

    private static Map<String, Long> counters(ChildJvm.Result r) {
        Map<String, Long> out = new HashMap<>();
        for (String line : r.stdout.split("\n")) {
            if (line.startsWith("counter ")) {
                String[] kv = line.substring("counter ".length()).trim().split("=");
                out.put(kv[0], Long.parseLong(kv[1]));
            }
        }
        assertTrue(out.containsKey("otlp_exports"), "no counters printed:\n" + r.describe());
        return out;
    }
}
