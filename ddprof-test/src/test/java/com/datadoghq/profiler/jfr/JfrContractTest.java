package com.datadoghq.profiler.jfr;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.JmcParser;
import com.datadoghq.profiler.testing.ProfilerExtension;
import com.datadoghq.profiler.testing.Spinner;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * One recording, read by the three parsers users have (RecordingFile, the JDK's jfr tool, JMC),
 * holding the events and values the compatibility contract promises.
 */
@ExtendWith(ProfilerExtension.class)
class JfrContractTest {
    private static final String WORKER = "ctx-worker";
    private static final long ROOT_SPAN = 0x1234_5678_9abcL;
    private static final long SPAN = 0x0fed_cba9_8765L;
    private static final String BIG_VALUE = repeat('v', 8191);
    private static final String HUGE_VALUE = repeat('h', 10_000);

    @TempDir
    static Path dir;

    private static Path recording;
    private static List<RecordedEvent> events;

    @BeforeAll
    static void record(JavaProfiler profiler) throws Exception {
        recording = dir.resolve("contract.jfr");
        try {
            TestEnv.start(profiler, "start,cpu=10ms,cstack=vm,file=" + recording);
            profiler.recordSetting("test.with.unit", "42", "ms");
            profiler.recordSetting("test.without.unit", "plain");
            profiler.recordSetting("test.big", BIG_VALUE);
            profiler.recordSetting("test.huge", HUGE_VALUE);

            Thread worker = new Thread(() -> {
                profiler.setTraceContext(ROOT_SPAN, SPAN, 0L, 0L, -1, null, -1, null);
                Spinner.withContext(1000);
                profiler.clearTraceContext();
                Spinner.withoutContext(1000);
            }, WORKER);
            worker.start();
            worker.join();
        } finally {
            TestEnv.stopQuietly(profiler);
        }
        events = JfrReader.readAll(recording);
    }

    @Test
    void recordingFileReadsSamplesOfTheWorker() {
        List<RecordedEvent> samples = JfrReader.onThread(JfrReader.ofType(events, JfrReader.EXECUTION_SAMPLE), WORKER);
        assertTrue(samples.size() >= 20, "samples on " + WORKER + ": " + samples.size());
    }

    @Test
    void profilerConfigEchoesTheRequestedInterval() {
        List<RecordedEvent> config = JfrReader.ofType(events, JfrReader.PROFILER_CONFIG);
        assertFalse(config.isEmpty(), "no " + JfrReader.PROFILER_CONFIG + " event");
        RecordedEvent c = config.get(config.size() - 1);
        assertEquals(10L, c.getLong("cpuInterval"), "cpuInterval (ms) for cpu=10ms");
        assertEquals(Duration.ofMillis(10), c.getDuration("cpuInterval"), "cpuInterval is a Timespan in milliseconds");
        String engine = c.getString("cpuEngine");
        assertNotNull(engine, "cpuEngine");
        assertFalse(engine.isEmpty() || engine.equals("None"), "cpuEngine: '" + engine + "'");
        assertTrue((c.getInt("modeMask") & 1) != 0, "modeMask should have the CPU bit: " + c.getInt("modeMask"));
    }

    @Test
    void activeSettingsEchoCstackAndTheSampleInterval() throws IOException {
        List<RecordedEvent> settings = JfrReader.ofType(events, JfrReader.ACTIVE_SETTING);
        assertFalse(settings.isEmpty(), "no " + JfrReader.ACTIVE_SETTING + " events");
        Optional<RecordedEvent> cstack = settings.stream().filter(e -> "cstack".equals(e.getString("name"))).findFirst();
        assertTrue(cstack.isPresent(), "no cstack setting among " + names(settings));
        assertEquals("vm", cstack.get().getString("value"), "cstack echoes the requested mode");

        Long sampleTypeId = JfrReader.eventTypeIds(recording).get(JfrReader.EXECUTION_SAMPLE);
        assertNotNull(sampleTypeId, JfrReader.EXECUTION_SAMPLE + " is not declared in the metadata");
        List<RecordedEvent> ofSamples = settings.stream().filter(e -> e.getLong("id") == sampleTypeId)
                .collect(Collectors.toList());
        Optional<RecordedEvent> interval = ofSamples.stream().filter(e -> "interval".equals(e.getString("name"))).findFirst();
        assertTrue(interval.isPresent(), "no interval setting with id " + sampleTypeId + " among " + names(settings));
        assertEquals(10_000_000L, Long.parseLong(interval.get().getString("value").trim()), "interval in ns");
        assertTrue(ofSamples.stream().anyMatch(e -> "enabled".equals(e.getString("name"))
                        && "true".equals(e.getString("value"))),
                "ExecutionSample should be enabled among " + names(ofSamples));
    }

    @Test
    void defaultCstackIsNamed() throws Exception {
        JavaProfiler profiler = TestEnv.profiler();
        Path file = dir.resolve("default-cstack.jfr");
        try {
            TestEnv.start(profiler, "start,cpu=10ms,file=" + file);
            Spinner.withoutContext(100);
        } finally {
            TestEnv.stopQuietly(profiler);
        }
        List<RecordedEvent> settings = JfrReader.events(file, JfrReader.ACTIVE_SETTING);
        Optional<RecordedEvent> cstack = settings.stream().filter(e -> "cstack".equals(e.getString("name"))).findFirst();
        assertTrue(cstack.isPresent(), "no cstack setting among " + names(settings));
        assertTrue(Arrays.asList("default", "no", "fp", "dwarf", "lbr", "vm", "vmx").contains(cstack.get().getString("value")),
                "cstack value: " + cstack.get().getString("value"));
    }

    @Test
    void profilerCountersAreRecorded() {
        List<RecordedEvent> counters = JfrReader.ofType(events, JfrReader.PROFILER_COUNTER);
        assertFalse(counters.isEmpty(), "no " + JfrReader.PROFILER_COUNTER + " events");
        for (RecordedEvent c : counters) {
            String name = c.getString("name");
            assertTrue(name != null && !name.isEmpty(), "counter without a name: " + c);
            c.getLong("count");
        }
        assertTrue(counters.stream().anyMatch(c -> "calltrace_storage_traces".equals(c.getString("name"))),
                "calltrace_storage_traces missing among " + names(counters));
    }

    @Test
    void recordSettingWritesProfilerSettingEvents() {
        Map<String, RecordedEvent> byName = JfrReader.ofType(events, JfrReader.PROFILER_SETTING).stream()
                .collect(Collectors.toMap(e -> e.getString("name"), e -> e, (a, b) -> a));
        RecordedEvent withUnit = byName.get("test.with.unit");
        assertNotNull(withUnit, "no ProfilerSetting test.with.unit among " + byName.keySet());
        assertEquals("42", withUnit.getString("value"));
        assertEquals("ms", withUnit.getString("unit"));
        RecordedEvent withoutUnit = byName.get("test.without.unit");
        assertNotNull(withoutUnit, "no ProfilerSetting test.without.unit among " + byName.keySet());
        assertEquals("plain", withoutUnit.getString("value"));
        assertEquals("", withoutUnit.getString("unit"), "unit when none is given");
    }

    @Test
    void settingValuesSurviveUpTo8191BytesAndAreTruncatedBeyond() {
        Map<String, RecordedEvent> byName = JfrReader.ofType(events, JfrReader.PROFILER_SETTING).stream()
                .collect(Collectors.toMap(e -> e.getString("name"), e -> e, (a, b) -> a));
        assertNotNull(byName.get("test.big"), "no ProfilerSetting test.big");
        String big = byName.get("test.big").getString("value");
        assertEquals(8191, big.length(), "an 8191-byte value must survive whole");
        assertEquals(BIG_VALUE, big);
        assertNotNull(byName.get("test.huge"), "no ProfilerSetting test.huge");
        String huge = byName.get("test.huge").getString("value");
        assertEquals(HUGE_VALUE.substring(0, 8191), huge, "a longer value is cut at 8191 bytes");
    }

    @Test
    void traceContextLandsInSamplesAndClears() {
        List<RecordedEvent> samples = JfrReader.onThread(JfrReader.ofType(events, JfrReader.EXECUTION_SAMPLE), WORKER);
        List<RecordedEvent> with = samples.stream().filter(e -> JfrReader.contains(e, Spinner.class, "withContext"))
                .collect(Collectors.toList());
        List<RecordedEvent> without = samples.stream().filter(e -> JfrReader.contains(e, Spinner.class, "withoutContext"))
                .collect(Collectors.toList());
        assertTrue(with.size() >= 10, "samples in withContext: " + with.size() + JfrReader.describe(samples, 5));
        assertTrue(without.size() >= 10, "samples in withoutContext: " + without.size() + JfrReader.describe(samples, 5));
        for (RecordedEvent e : with) {
            assertEquals(SPAN, e.getLong("spanId"), "spanId while the context is set");
            assertEquals(ROOT_SPAN, e.getLong("localRootSpanId"), "localRootSpanId while the context is set");
        }
        for (RecordedEvent e : without) {
            assertEquals(0L, e.getLong("spanId"), "spanId after clearTraceContext()");
            assertEquals(0L, e.getLong("localRootSpanId"), "localRootSpanId after clearTraceContext()");
        }
    }

    @Test
    void jdkJfrToolPrintsAndSummarizes() throws Exception {
        Path jfr = Paths.get(System.getProperty("java.home"), "bin", "jfr");
        Assumptions.assumeTrue(Files.isExecutable(jfr),
                "the running JDK (" + System.getProperty("java.home") + ") ships no bin/jfr tool");

        String summary = runTool(jfr.toString(), "summary", recording.toString());
        assertTrue(summary.contains(JfrReader.EXECUTION_SAMPLE), "jfr summary lacks " + JfrReader.EXECUTION_SAMPLE + ":\n" + summary);

        if (Runtime.version().feature() >= 21) {
            // `jfr view` (JDK 21+) runs the JDK's queries; `recording` reads jdk.Shutdown.reason, and
            // failed on our recordings ("Can't find field") before the type was declared.
            String view = runTool(jfr.toString(), "view", "recording", recording.toString());
            assertTrue(view.contains("Recording Information") && view.contains("Event Count")
                    && !view.contains("Can't find"), "jfr view recording:\n" + head(view));
        }

        String all = runTool(jfr.toString(), "print", recording.toString());
        assertTrue(all.contains(JfrReader.PROFILER_CONFIG), "jfr print lacks the config event");
        String samples = runTool(jfr.toString(), "print", "--events", JfrReader.EXECUTION_SAMPLE, recording.toString());
        assertTrue(samples.contains("withContext"), "jfr print of the samples names no withContext frame");
    }

    @Test
    void jmcParserReadsTheSameSamples() throws Exception {
        JmcParser.Summary jmc;
        try {
            jmc = JmcParser.read(recording.toFile(), JfrReader.EXECUTION_SAMPLE, "withContext");
        } catch (UnsupportedClassVersionError e) {
            // Only a JMC built for a newer Java is a reason to skip; any other loading problem fails.
            Assumptions.assumeTrue(false, "JMC's parser needs a newer Java than " + TestEnv.jdk() + ": " + e);
            return;
        }
        long expected = JfrReader.ofType(events, JfrReader.EXECUTION_SAMPLE).size();
        assertEquals(expected, jmc.countsByType.getOrDefault(JfrReader.EXECUTION_SAMPLE, 0L).longValue(),
                "JMC and RecordingFile should count the same samples; JMC saw " + jmc.countsByType);
        long withContext = JfrReader.ofType(events, JfrReader.EXECUTION_SAMPLE).stream()
                .filter(e -> JfrReader.contains(e, Spinner.class, "withContext")).count();
        assertEquals(withContext, jmc.stacksWithMethod, "JMC and RecordingFile should see the same stacks");
        assertTrue(jmc.countsByType.getOrDefault(JfrReader.PROFILER_CONFIG, 0L) > 0, "JMC saw no config event");
    }

    private static String runTool(String... cmd) throws Exception {
        Path out = Files.createTempFile(dir, "jfr-tool", ".out");
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(out.toFile()).start();
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("timed out: " + String.join(" ", cmd));
        }
        String text = new String(Files.readAllBytes(out), StandardCharsets.UTF_8);
        assertEquals(0, p.exitValue(), String.join(" ", cmd) + " failed:\n" + head(text));
        return text;
    }

    private static String head(String s) {
        return s.length() <= 4000 ? s : s.substring(0, 4000) + "...";
    }

    private static List<String> names(List<RecordedEvent> events) {
        List<String> names = new ArrayList<>();
        for (RecordedEvent e : events) {
            names.add(e.getString("name"));
        }
        return names;
    }

    private static String repeat(char c, int n) {
        char[] chars = new char[n];
        Arrays.fill(chars, c);
        return new String(chars);
    }
}
