package com.datadoghq.profiler.convert;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.zip.GZIPInputStream;

import com.datadoghq.profiler.convert.pprof.ProfileProto;
import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.CpuBurner;
import com.datadoghq.profiler.testing.CpuWorkloadMain;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.TestEnv;
import io.opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest;
import io.opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceResponse;
import io.opentelemetry.proto.common.v1.AnyValue;
import io.opentelemetry.proto.profiles.v1development.KeyValueAndUnit;
import io.opentelemetry.proto.profiles.v1development.ProfilesDictionary;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code java -jar ddprof.jar convert}: every output format of one recording, run as a user
 * runs it (a child JVM of the JDK under test), decoded with independent readers (the official
 * protobuf runtime with pprof's and OTLP's generated classes; Chromium for the HTML page) and
 * compared with what the JDK's JFR parser reads from the same file.
 *
 * <p>The recording: this JVM's profiler at cpu=10ms with one context attribute; the test thread
 * burns CPU first inside a trace context (a span id above 2^63, local root 101, op=op-alpha), then outside
 * it.
 */
class ConvertTest {
    /** Above 2^63: span ids are unsigned 64-bit, so the encoders must keep all 64 bits. */
    static final long SPAN = Long.MIN_VALUE | 0x1001L;
    static final long ROOT_SPAN = 101;
    /** The span's 128-bit trace id: both halves non-zero and with the sign bit set in one. */
    static final long TRACE_HIGH = 0x0123_4567_89ab_cdefL;
    static final long TRACE_LOW = 0xfedc_ba98_7654_3210L;
    static final String OP = "op-alpha";
    static final String CHAIN_C = CpuBurner.class.getName() + ".chainC";

    static Path dir;
    static Path jfr;
    static List<RecordedEvent> samples;
    static long weight;

    @BeforeAll
    static void record() throws Exception {
        dir = Files.createTempDirectory("ddprof-convert-");
        jfr = dir.resolve("rec.jfr");
        TestEnv.record(jfr, "cpu=10ms,attributes=op", profiler -> {
            profiler.setTraceContext(ROOT_SPAN, SPAN, TRACE_HIGH, TRACE_LOW, 0, OP, -1, null);
            CpuBurner.burn(800);
            profiler.clearTraceContext();
            CpuBurner.burn(400);
        });
        samples = JfrReader.executionSamples(jfr);
        weight = samples.stream().mapToLong(ConvertTest::weightOf).sum();
        assertTrue(samples.size() >= 20, "too few samples to compare: " + samples.size());
    }

    @AfterAll
    static void cleanUp() throws IOException {
        TestEnv.deleteTree(dir);
    }

    static long weightOf(RecordedEvent e) {
        long w = e.hasField("weight") ? e.getLong("weight") : 1;
        return w > 0 ? w : 1;
    }

    static boolean onChainC(RecordedEvent e) {
        return JfrReader.contains(e, CpuBurner.class, "chainC");
    }

    static ChildJvm.Result convert(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(Arrays.asList("-jar", TestEnv.toolsJar().toString(), "convert"));
        cmd.addAll(Arrays.asList(args));
        return new ChildJvm().jvmArgs(cmd.toArray(new String[0])).timeout(Duration.ofMinutes(3)).run(dir);
    }

    static Path convertOk(String... args) throws Exception {
        ChildJvm.Result r = convert(args);
        assertEquals(0, r.exitCode, r.describe());
        return dir.resolve(args[args.length - 1]);
    }

    /** Collapsed lines: stack -> value. */
    static Map<String, Long> readCollapsed(Path file) throws IOException {
        Map<String, Long> lines = new HashMap<>();
        for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            int space = line.lastIndexOf(' ');
            assertTrue(space > 0, "not a collapsed line: " + line);
            assertEquals(null, lines.put(line.substring(0, space), Long.parseLong(line.substring(space + 1))),
                    "a stack appears twice: " + line);
        }
        return lines;
    }

    @Test
    void collapsedTotalsEqualTheRecording() throws Exception {
        Map<String, Long> lines = readCollapsed(convertOk("--to", "collapsed", jfr.toString(), "out.collapsed"));
        assertEquals(weight, lines.values().stream().mapToLong(Long::longValue).sum(), "sum of all lines");
        long chainC = samples.stream().filter(ConvertTest::onChainC).mapToLong(ConvertTest::weightOf).sum();
        assertTrue(chainC > 0);
        long onLines = 0;
        for (Map.Entry<String, Long> e : lines.entrySet()) {
            List<String> frames = Arrays.asList(e.getKey().split(";"));
            int c = frames.indexOf(CHAIN_C);
            if (c >= 0) {
                onLines += e.getValue();
                // Root first: chainA calls chainB calls chainC.
                assertEquals(CpuBurner.class.getName() + ".chainB", frames.get(c - 1), e.getKey());
            }
        }
        assertEquals(chainC, onLines, "samples with chainC on the stack");

        Map<String, Long> perThread = readCollapsed(convertOk("--to", "collapsed", "--threads", jfr.toString(),
                "threads.collapsed"));
        assertEquals(weight, perThread.values().stream().mapToLong(Long::longValue).sum());
        String thread = Thread.currentThread().getName();
        long mine = samples.stream().filter(e -> thread.equals(JfrReader.threadName(e)))
                .mapToLong(ConvertTest::weightOf).sum();
        long mineOnLines = perThread.entrySet().stream().filter(e -> e.getKey().startsWith("[" + thread + " tid="))
                .mapToLong(Map.Entry::getValue).sum();
        assertEquals(mine, mineOnLines, "this thread's samples, under its [name tid=N] root");
    }

    /**
     * Several recordings read as one profile: the same file twice doubles every line; a second argument
     * that is neither a recording nor an output name (a .jfr that does not exist) is a usage error, and
     * a later argument after the output too.
     */
    /**
     * A recording of 8 MB or more, converted by the command's own JVM, which then keeps C2 out of
     * itself (a compiler directive, {@code convert/JitPolicy.java}): the same stacks as the recording
     * it repeats, each worth as many times more as there are copies, and standard output holds the
     * profile alone (a pipe reads it).
     */
    @Test
    void largeRecordingConvertsAlikeInItsOwnJvm() throws Exception {
        byte[] once = Files.readAllBytes(jfr);
        int copies = (int) ((8L << 20) / once.length) + 2;
        Path large = dir.resolve("large.jfr");
        try (OutputStream out = Files.newOutputStream(large)) {
            for (int i = 0; i < copies; i++) {
                out.write(once);
            }
        }
        ChildJvm.Result single = convert("--to", "collapsed", jfr.toString(), "-");
        assertEquals(0, single.exitCode, single.describe());
        ChildJvm.Result repeated = convert("--to", "collapsed", large.toString(), "-");
        assertEquals(0, repeated.exitCode, repeated.describe());
        StringBuilder expected = new StringBuilder();
        for (String line : single.stdout.split("\n")) {
            int space = line.lastIndexOf(' ');
            expected.append(line, 0, space + 1).append(Long.parseLong(line.substring(space + 1)) * copies).append('\n');
        }
        assertTrue(expected.length() > 0, "nothing converted");
        assertEquals(expected.toString(), repeated.stdout, copies + " copies of " + once.length + " bytes");
    }

    @Test
    void severalRecordingsAreOneProfile() throws Exception {
        Path copy = dir.resolve("copy.jfr");
        Files.copy(jfr, copy, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        Map<String, Long> one = readCollapsed(convertOk("--to", "collapsed", jfr.toString(), "one.collapsed"));
        Map<String, Long> two = readCollapsed(convertOk("--to", "collapsed", jfr.toString(), copy.toString(),
                "two.collapsed"));
        assertEquals(one.keySet(), two.keySet(), "the same stacks");
        for (Map.Entry<String, Long> e : one.entrySet()) {
            assertEquals(2 * e.getValue(), two.get(e.getKey()), e.getKey());
        }
        ChildJvm.Result r = convert("--to", "html", jfr.toString(), dir.resolve("missing.jfr").toString());
        assertEquals(2, r.exitCode, r.describe());
        assertTrue(r.stderr.contains("'" + dir.resolve("missing.jfr") + "' is not a recording to read"), r.describe());
        r = convert("--to", "collapsed", jfr.toString(), "out.collapsed", copy.toString());
        assertEquals(2, r.exitCode, r.describe());
        assertTrue(r.stderr.contains("unexpected argument"), r.describe());
        r = convert("--to", "pprof", "--diff", jfr.toString(), copy.toString(), "diff.pb.gz");
        assertEquals(2, r.exitCode, r.describe());
        assertTrue(r.stderr.contains("--diff draws a differential flame graph: it needs --to html"), r.describe());
    }

    /** {@code --state}: the samples taken in the named thread states, as the recording names them. */
    @Test
    void stateKeepsTheSamplesInThoseThreadStates() throws Exception {
        long runnable = samples.stream().filter(e -> "RUNNABLE".equals(String.valueOf((Object) e.getValue("state"))))
                .mapToLong(ConvertTest::weightOf).sum();
        assertTrue(runnable > 0, "the burn's samples are RUNNABLE");
        Map<String, Long> lines = readCollapsed(convertOk("--to", "collapsed", "--state", "runnable", jfr.toString(),
                "runnable.collapsed"));
        assertEquals(runnable, lines.values().stream().mapToLong(Long::longValue).sum());
        ChildJvm.Result r = convert("--to", "collapsed", "--state", "no-such-state", jfr.toString(), "none.collapsed");
        assertEquals(1, r.exitCode, r.describe());
        assertTrue(r.stderr.contains("in the thread states no-such-state"), r.describe());
    }

    @Test
    void timeRangeKeepsTheEventsInside() throws Exception {
        List<Instant> times = new ArrayList<>();
        samples.forEach(e -> times.add(e.getStartTime()));
        Collections.sort(times);
        Instant middle = times.get(times.size() / 2);
        long expected = samples.stream().filter(e -> !e.getStartTime().isBefore(middle))
                .mapToLong(ConvertTest::weightOf).sum();
        Map<String, Long> lines = readCollapsed(convertOk("--to", "collapsed", "--from", middle.toString(),
                jfr.toString(), "late.collapsed"));
        assertEquals(expected, lines.values().stream().mapToLong(Long::longValue).sum());
        long before = samples.stream().filter(e -> e.getStartTime().isBefore(middle))
                .mapToLong(ConvertTest::weightOf).sum();
        lines = readCollapsed(convertOk("--to", "collapsed", "--to", middle.toString(), jfr.toString(),
                "early.collapsed"));
        assertEquals(before, lines.values().stream().mapToLong(Long::longValue).sum());
    }

    @Test
    void pprofDecodesWithTheRecordingsTotals() throws Exception {
        Path out = convertOk("--to", "pprof", jfr.toString(), "out.pb.gz");
        ProfileProto.Profile p;
        try (InputStream in = new GZIPInputStream(Files.newInputStream(out))) {
            p = ProfileProto.Profile.parseFrom(in);
        }
        List<String> st = p.getStringTableList();
        assertEquals("", st.get(0));
        assertEquals(2, p.getSampleTypeCount());
        assertEquals("samples", st.get((int) p.getSampleType(0).getType()));
        assertEquals("count", st.get((int) p.getSampleType(0).getUnit()));
        assertEquals("cpu", st.get((int) p.getSampleType(1).getType()));
        assertEquals("nanoseconds", st.get((int) p.getSampleType(1).getUnit()));
        assertEquals(10_000_000L, p.getPeriod());
        assertEquals("cpu", st.get((int) p.getDefaultSampleType()));

        // One mapping, the JVM, holding every location: pprof then has a main binary to name.
        assertEquals(1, p.getMappingCount(), "mappings");
        ProfileProto.Mapping jvm = p.getMapping(0);
        assertFalse(st.get((int) jvm.getFilename()).isEmpty(), "the mapping names the JVM");
        assertTrue(jvm.getHasFunctions(), "nothing to symbolize");
        assertTrue(p.getLocationList().stream().allMatch(l -> l.getMappingId() == jvm.getId()), "every location in it");

        Map<Long, ProfileProto.Location> locations = new HashMap<>();
        p.getLocationList().forEach(l -> locations.put(l.getId(), l));
        Map<Long, ProfileProto.Function> functions = new HashMap<>();
        p.getFunctionList().forEach(f -> functions.put(f.getId(), f));

        long count = 0;
        long nanos = 0;
        long spanCount = 0;
        long opCount = 0;
        long rootCount = 0;
        Set<Long> chainCLines = new HashSet<>();
        for (ProfileProto.Sample s : p.getSampleList()) {
            count += s.getValue(0);
            nanos += s.getValue(1);
            Map<String, ProfileProto.Label> labels = new HashMap<>();
            s.getLabelList().forEach(l -> labels.put(st.get((int) l.getKey()), l));
            assertTrue(labels.containsKey("thread name"), "every sample names its thread");
            if (labels.containsKey("span id") && labels.get("span id").getNum() == SPAN) {
                spanCount += s.getValue(0);
            }
            if (labels.containsKey("local root span id") && labels.get("local root span id").getNum() == ROOT_SPAN) {
                rootCount += s.getValue(0);
            }
            if (labels.containsKey("op") && OP.equals(st.get((int) labels.get("op").getStr()))) {
                opCount += s.getValue(0);
            }
            List<String> names = new ArrayList<>();
            for (long id : s.getLocationIdList()) {
                ProfileProto.Location loc = locations.get(id);
                ProfileProto.Function fn = functions.get(loc.getLine(0).getFunctionId());
                String name = st.get((int) fn.getName());
                names.add(name);
                if (name.equals(CHAIN_C)) {
                    chainCLines.add(loc.getLine(0).getLine());
                }
            }
            int c = names.indexOf(CHAIN_C);
            if (c >= 0) {
                // Leaf first: chainC's caller comes after it.
                assertEquals(CpuBurner.class.getName() + ".chainB", names.get(c + 1), names.toString());
            }
        }
        assertEquals(samples.size(), count, "events");
        assertEquals(weight * 10_000_000L, nanos, "cpu nanoseconds = weight x interval");
        assertEquals(samples.stream().filter(e -> e.getLong("spanId") == SPAN).count(), spanCount);
        assertEquals(samples.stream().filter(e -> e.getLong("localRootSpanId") == ROOT_SPAN).count(), rootCount);
        assertTrue(spanCount > 0, "samples inside the trace context");
        assertEquals(spanCount, opCount, "the context attribute is set exactly while the span is");

        Set<Long> jfrLines = new HashSet<>();
        for (RecordedEvent e : samples) {
            for (RecordedFrame f : JfrReader.frames(e)) {
                if (f.getMethod() != null && f.getMethod().getName().equals("chainC")) {
                    jfrLines.add((long) f.getLineNumber());
                }
            }
        }
        assertEquals(jfrLines, chainCLines, "line numbers of chainC's locations");
        assertTrue(chainCLines.stream().allMatch(l -> l > 0), "Java frames have line numbers: " + chainCLines);
    }

    /** pprof's own reader, where Go is installed: it must read the file and find the same total. */
    @Test
    void goToolPprofReadsIt() throws Exception {
        String go = null;
        for (String d : System.getenv().getOrDefault("PATH", "").split(java.io.File.pathSeparator)) {
            if (new java.io.File(d, "go").canExecute()) {
                go = new java.io.File(d, "go").getPath();
                break;
            }
        }
        if (go == null && new java.io.File("/usr/local/go/bin/go").canExecute()) {
            go = "/usr/local/go/bin/go";
        }
        org.junit.jupiter.api.Assumptions.assumeTrue(go != null, "Go is not installed: go tool pprof check skipped");
        Path out = convertOk("--to", "pprof", jfr.toString(), "go.pb.gz");
        Process p = new ProcessBuilder(go, "tool", "pprof", "-raw", out.toString())
                .redirectErrorStream(true).directory(dir.toFile()).start();
        String raw = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(3, java.util.concurrent.TimeUnit.MINUTES));
        assertEquals(0, p.exitValue(), raw);
        // -raw prints "PeriodType: cpu nanoseconds" and one "count nanos: @ loc ..." line per sample.
        assertTrue(raw.contains("PeriodType: cpu nanoseconds"), raw);
        assertFalse(raw.contains("Main binary filename not available"), raw);
        long count = 0;
        long nanos = 0;
        boolean inSamples = false;
        for (String line : raw.split("\n")) {
            if (line.startsWith("Samples:")) {
                inSamples = true;
                continue;
            }
            if (line.startsWith("Locations")) {
                break;
            }
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("^\\s*(\\d+)\\s+(\\d+):").matcher(line);
            if (inSamples && m.find()) {
                count += Long.parseLong(m.group(1));
                nanos += Long.parseLong(m.group(2));
            }
        }
        assertEquals(samples.size(), count, raw.length() > 2000 ? raw.substring(0, 2000) : raw);
        assertEquals(weight * 10_000_000L, nanos);
    }

    /** OTLP sample values, span links and attributes, checked against the JFR events. */
    static void checkOtlp(ExportProfilesServiceRequest request) {
        assertEquals(1, request.getResourceProfilesCount());
        var scope = request.getResourceProfiles(0).getScopeProfiles(0);
        assertEquals("ddprof", scope.getScope().getName());
        assertEquals(1, scope.getProfilesCount(), "one profile per event kind: cpu only here");
        var profile = scope.getProfiles(0);
        ProfilesDictionary dict = request.getDictionary();
        List<String> st = dict.getStringTableList();
        assertEquals("", st.get(0));
        assertEquals("samples", st.get(profile.getSampleType().getTypeStrindex()));
        assertEquals("count", st.get(profile.getSampleType().getUnitStrindex()));
        assertEquals("cpu", st.get(profile.getPeriodType().getTypeStrindex()));
        assertEquals(10_000_000L, profile.getPeriod());
        assertEquals(16, profile.getProfileId().size());

        long total = 0;
        long linked = 0;
        long chainC = 0;
        for (var s : profile.getSamplesList()) {
            long v = s.getValues(0);
            total += v;
            if (s.getLinkIndex() != 0) {
                var link = dict.getLinkTable(s.getLinkIndex());
                assertEquals(8, link.getSpanId().size());
                assertEquals(SPAN, java.nio.ByteBuffer.wrap(link.getSpanId().toByteArray()).getLong());
                // The trace of the sample's local root span, from the recording's datadog.TraceLink.
                assertEquals(16, link.getTraceId().size(), "linked sample without its trace id");
                java.nio.ByteBuffer trace = java.nio.ByteBuffer.wrap(link.getTraceId().toByteArray());
                assertEquals(TRACE_HIGH, trace.getLong());
                assertEquals(TRACE_LOW, trace.getLong());
                linked += v;
            }
            boolean named = false;
            for (int a : s.getAttributeIndicesList()) {
                KeyValueAndUnit kv = dict.getAttributeTable(a);
                if (st.get(kv.getKeyStrindex()).equals("thread.name")) {
                    named = kv.getValue().getValueCase() == AnyValue.ValueCase.STRING_VALUE;
                }
            }
            assertTrue(named, "every sample has a thread.name attribute");
            var stack = dict.getStackTable(s.getStackIndex());
            for (int li : stack.getLocationIndicesList()) {
                var fn = dict.getFunctionTable(dict.getLocationTable(li).getLines(0).getFunctionIndex());
                if (st.get(fn.getNameStrindex()).equals(CHAIN_C)) {
                    chainC += v;
                    break;
                }
            }
        }
        assertEquals(weight, total, "sum of sample values = sum of JFR weights");
        assertEquals(samples.stream().filter(e -> e.getLong("spanId") == SPAN).mapToLong(ConvertTest::weightOf).sum(),
                linked, "samples linked to the span");
        assertTrue(linked > 0);
        assertEquals(samples.stream().filter(ConvertTest::onChainC).mapToLong(ConvertTest::weightOf).sum(), chainC);
    }

    @Test
    void recordingLinksTheRootSpanToItsTrace() throws Exception {
        // A datadog.TraceLink for the one local root span the samples carried, with both halves of
        // the trace id as setTraceContext gave them; none for the samples after clearTraceContext.
        List<RecordedEvent> links = JfrReader.events(jfr, "datadog.TraceLink");
        // (One per chunk: the file may hold more than one.)
        assertFalse(links.isEmpty(), "no datadog.TraceLink");
        for (RecordedEvent link : links) {
            assertEquals(ROOT_SPAN, link.getLong("localRootSpanId"));
            assertEquals(TRACE_HIGH, link.getLong("traceIdHigh"));
            assertEquals(TRACE_LOW, link.getLong("traceIdLow"));
        }
    }

    @Test
    void otlpFileDecodesWithTheOfficialClasses() throws Exception {
        Path out = convertOk("--to", "otlp", jfr.toString(), "out.otlp.pb");
        checkOtlp(ExportProfilesServiceRequest.parseFrom(Files.readAllBytes(out)));
    }

    @Test
    void otlpPostsToAnHttpReceiver() throws Exception {
        try (OtlpReceiver receiver = new OtlpReceiver(200,
                ExportProfilesServiceResponse.getDefaultInstance().toByteArray())) {
            ChildJvm.Result r = convert("--to", "otlp", jfr.toString(), receiver.url("/v1development/profiles"));
            assertEquals(0, r.exitCode, r.describe());
            assertTrue(r.stdout.contains("HTTP 200"), r.describe());
            assertEquals(null, receiver.failure);
            assertEquals("/v1development/profiles", receiver.path);
            assertEquals("application/x-protobuf", receiver.headers.get("content-type"));
            checkOtlp(ExportProfilesServiceRequest.parseFrom(receiver.body));
        }
    }

    @Test
    void refusedRequestIsAFailure() throws Exception {
        try (OtlpReceiver receiver = new OtlpReceiver(400, new byte[0])) {
            ChildJvm.Result r = convert("--to", "otlp", jfr.toString(), receiver.url("/v1development/profiles"));
            assertEquals(1, r.exitCode, r.describe());
            assertTrue(r.stderr.contains("HTTP 400"), r.describe());
        }
    }

    /** {@code --include} and {@code --exclude} of one pattern split the samples in two, by their frames. */
    @Test
    void includeAndExcludeSplitTheSamplesByTheirFrames() throws Exception {
        long chainC = samples.stream().filter(ConvertTest::onChainC).mapToLong(ConvertTest::weightOf).sum();
        Map<String, Long> in = readCollapsed(convertOk("--to", "collapsed", "--include", "chainC$",
                jfr.toString(), "in.collapsed"));
        assertTrue(in.keySet().stream().allMatch(k -> Arrays.asList(k.split(";")).contains(CHAIN_C)), "kept: " + in);
        assertEquals(chainC, in.values().stream().mapToLong(Long::longValue).sum(), "the samples with chainC");
        if (chainC < weight) {
            Map<String, Long> out = readCollapsed(convertOk("--to", "collapsed", "--exclude", "\\.chainC$",
                    jfr.toString(), "out.collapsed"));
            assertTrue(out.keySet().stream().noneMatch(k -> Arrays.asList(k.split(";")).contains(CHAIN_C)),
                    "left: " + out);
            assertEquals(weight - chainC, out.values().stream().mapToLong(Long::longValue).sum(), "the others");
        } else {
            // Every sample of this recording was in chainC (it happens: the burn is all it ran).
            ChildJvm.Result none = convert("--to", "collapsed", "--exclude", "\\.chainC$", jfr.toString(),
                    "out.collapsed");
            assertEquals(1, none.exitCode, none.describe());
            assertTrue(none.stderr.contains("that --include/--exclude keep"), none.describe());
        }

        // Two includes: both must match (chainA and chainC are on every burner stack: the same).
        Map<String, Long> both = readCollapsed(convertOk("--to", "collapsed", "--include", "chainC", "--include",
                "CpuBurner\\.chainA", jfr.toString(), "both.collapsed"));
        assertEquals(chainC, both.values().stream().mapToLong(Long::longValue).sum());

        ChildJvm.Result r = convert("--to", "collapsed", "--include", "chain(", jfr.toString(), "bad.collapsed");
        assertEquals(2, r.exitCode, r.describe());
        assertTrue(r.stderr.contains("--include 'chain(' is not a regular expression"), r.describe());
        assertFalse(Files.exists(dir.resolve("bad.collapsed")));
        r = convert("--to", "collapsed", "--include", "noSuchMethodAnywhere", jfr.toString(), "none.collapsed");
        assertEquals(1, r.exitCode, r.describe());
        assertTrue(r.stderr.contains("that --include/--exclude keep"), r.describe());
    }

    @Test
    void nothingToConvertIsAnErrorNotAnEmptyFile() throws Exception {
        ChildJvm.Result r = convert("--to", "pprof", "--event", "alloc", jfr.toString(), "alloc.pb.gz");
        assertEquals(1, r.exitCode, r.describe());
        assertTrue(r.stderr.contains("No alloc sample events"), r.describe());
        assertFalse(Files.exists(dir.resolve("alloc.pb.gz")));
        r = convert("--to", "svg", jfr.toString());
        assertEquals(2, r.exitCode, r.describe());
        r = convert("--to", "collapsed", dir.resolve("missing.jfr").toString());
        assertEquals(1, r.exitCode, r.describe());
    }

    /** The JDK's own recording format: jdk.ExecutionSample (sampledThread, no weight). */
    @Test
    void readsTheJdksOwnExecutionSamples() throws Exception {
        Path jdkJfr = dir.resolve("jdk.jfr");
        ChildJvm.Result run = new ChildJvm()
                .jvmArgs("-XX:StartFlightRecording=filename=" + jdkJfr + ",settings=profile")
                .main(CpuWorkloadMain.class, "1500").timeout(Duration.ofMinutes(3)).run(dir);
        assertEquals(0, run.exitCode, run.describe());
        List<RecordedEvent> jdkSamples = JfrReader.events(jdkJfr, "jdk.ExecutionSample");
        assertFalse(jdkSamples.isEmpty());
        Map<String, Long> lines = readCollapsed(convertOk("--to", "collapsed", "--threads", jdkJfr.toString(),
                "jdk.collapsed"));
        assertEquals(jdkSamples.size(), lines.values().stream().mapToLong(Long::longValue).sum());
        // The JDK writes a sample without a thread now and then (seen once beside a CPU-bound job).
        long worker = jdkSamples.stream().filter(e -> e.getThread("sampledThread") != null
                && "cpu-worker".equals(e.getThread("sampledThread").getJavaName())).count();
        assertNotEquals(0, worker);
        assertEquals(worker, lines.entrySet().stream().filter(e -> e.getKey().startsWith("[cpu-worker"))
                .mapToLong(Map.Entry::getValue).sum());
    }
}
