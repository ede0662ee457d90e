package com.datadoghq.profiler.convert;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.GZIPInputStream;

import com.datadoghq.profiler.convert.pprof.ProfileProto;
import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.CpuBurner;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code convert --simple | --lines | --bci | --dot} on a real recording of {@link CpuBurner}: the
 * names the options print are checked against what the JDK's JFR parser reads from the same file
 * (chainC's line numbers and bytecode indexes, sample by sample), and the totals stay the
 * recording's.
 */
class NameFormatsTest {
    static final String SIMPLE_CHAIN_C = CpuBurner.class.getSimpleName() + ".chainC";

    static Path dir;
    static Path jfr;
    static List<RecordedEvent> samples;
    static long weight;

    @BeforeAll
    static void record() throws Exception {
        dir = Files.createTempDirectory("ddprof-names-");
        jfr = dir.resolve("rec.jfr");
        TestEnv.record(jfr, "cpu=10ms", profiler -> CpuBurner.burn(800));
        samples = JfrReader.executionSamples(jfr);
        weight = samples.stream().mapToLong(ConvertTest::weightOf).sum();
        assertTrue(samples.stream().filter(ConvertTest::onChainC).count() >= 10,
                "too few samples in chainC to compare: " + JfrReader.describe(samples, 5));
    }

    @AfterAll
    static void cleanUp() throws IOException {
        TestEnv.deleteTree(dir);
    }

    private static Map<String, Long> collapsed(String out, String... options) throws Exception {
        String[] args = new String[options.length + 4];
        args[0] = "--to";
        args[1] = "collapsed";
        System.arraycopy(options, 0, args, 2, options.length);
        args[args.length - 2] = jfr.toString();
        args[args.length - 1] = out;
        convertOk(args);
        Map<String, Long> lines = ConvertTest.readCollapsed(dir.resolve(out));
        assertEquals(weight, lines.values().stream().mapToLong(Long::longValue).sum(), "total of " + out);
        return lines;
    }

    /** {@code java -jar ddprof-tools.jar convert ARGS} in a child JVM, in this test's directory: exit 0. */
    private static void convertOk(String... args) throws Exception {
        convertOk(new String[0], args);
    }

    private static void convertOk(String[] jvmOptions, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(Arrays.asList(jvmOptions));
        cmd.addAll(Arrays.asList("-jar", TestEnv.toolsJar().toString(), "convert"));
        cmd.addAll(Arrays.asList(args));
        ChildJvm.Result r = new ChildJvm().jvmArgs(cmd.toArray(new String[0])).timeout(Duration.ofMinutes(3)).run(dir);
        assertEquals(0, r.exitCode, r.describe());
    }

    /** chainC's frame in each sample through it, as {@code key} names it, and the weight per name. */
    private static Map<String, Long> expectedChainC(Function<RecordedFrame, String> key) {
        Map<String, Long> out = new HashMap<>();
        for (RecordedEvent e : samples) {
            for (RecordedFrame f : JfrReader.frames(e)) {
                if (JfrReader.isMethod(f, CpuBurner.class, "chainC")) {
                    out.merge(key.apply(f), ConvertTest.weightOf(e), Long::sum);
                    break; // chainC does not recurse: once per sample
                }
            }
        }
        return out;
    }

    /** The frames matching {@code frame} (a regular expression, whole frame) in the lines, with the weight per frame. */
    private static Map<String, Long> frames(Map<String, Long> lines, String frame) {
        Pattern p = Pattern.compile("(?:^|;)(" + frame + ")(?=;|$)");
        Map<String, Long> out = new HashMap<>();
        for (Map.Entry<String, Long> e : lines.entrySet()) {
            Matcher m = p.matcher(e.getKey());
            if (m.find()) {
                out.merge(m.group(1), e.getValue(), Long::sum);
            }
        }
        return out;
    }

    @Test
    void simpleLeavesThePackagesOut() throws Exception {
        Map<String, Long> full = collapsed("full.collapsed");
        Map<String, Long> simple = collapsed("simple.collapsed", "--simple");
        long chainC = frames(full, Pattern.quote(ConvertTest.CHAIN_C)).values().stream().mapToLong(Long::longValue).sum();
        assertTrue(chainC > 0);
        assertEquals(Map.of(SIMPLE_CHAIN_C, chainC), frames(simple, Pattern.quote(SIMPLE_CHAIN_C)));
        assertTrue(simple.keySet().stream().anyMatch(k -> k.endsWith(";CpuBurner.chainA;CpuBurner.chainB;"
                + SIMPLE_CHAIN_C)), "the hot chain, named simply: " + simple.keySet());
        for (String line : simple.keySet()) {
            assertFalse(line.contains("com.datadoghq.") || line.contains("java.lang."), "a package left: " + line);
        }
        // --dot: what async-profiler's converter prints by it is what we print anyway.
        collapsed("dot.collapsed", "--dot");
        assertEquals(Files.readString(dir.resolve("full.collapsed")), Files.readString(dir.resolve("dot.collapsed")));
    }

    @Test
    void linesAndBytecodeIndexesAreTheRecordings() throws Exception {
        Map<String, Long> expectedLines = expectedChainC(f -> ConvertTest.CHAIN_C + ":" + f.getLineNumber());
        assertTrue(expectedLines.keySet().stream().noneMatch(k -> k.endsWith(":0") || k.endsWith(":-1")),
                "chainC's samples have line numbers: " + expectedLines);
        Map<String, Long> lines = collapsed("lines.collapsed", "--lines");
        assertEquals(expectedLines, frames(lines, Pattern.quote(ConvertTest.CHAIN_C) + ":\\d+"));
        // Its callers too: the line of chainB that calls chainC.
        assertTrue(frames(lines, Pattern.quote(CpuBurner.class.getName() + ".chainB") + ":\\d+").size() >= 1);

        Map<String, Long> expectedBci = expectedChainC(f -> ConvertTest.CHAIN_C + "@" + f.getBytecodeIndex());
        Map<String, Long> bci = collapsed("bci.collapsed", "--bci");
        assertEquals(expectedBci, frames(bci, Pattern.quote(ConvertTest.CHAIN_C) + "@\\d+"));

        Map<String, Long> expectedBoth = expectedChainC(
                f -> SIMPLE_CHAIN_C + ":" + f.getLineNumber() + "@" + f.getBytecodeIndex());
        Map<String, Long> both = collapsed("both.collapsed", "--simple", "--lines", "--bci");
        assertEquals(expectedBoth, frames(both, Pattern.quote(SIMPLE_CHAIN_C) + ":\\d+@\\d+"));
        // The JDK's parser, kept one release behind -Dddprof.jfr.reader=jdk, gives the same names.
        convertOk(new String[] {"-Dddprof.jfr.reader=jdk"}, "--to", "collapsed", "--simple", "--lines", "--bci",
                jfr.toString(), "both-jdk.collapsed");
        assertEquals(Files.readString(dir.resolve("both.collapsed")), Files.readString(dir.resolve("both-jdk.collapsed")));
    }

    @Test
    void htmlAndPprofTakeTheNames() throws Exception {
        convertOk("--to", "html", "--simple", "--lines", jfr.toString(), "names.html");
        String page = new String(Files.readAllBytes(dir.resolve("names.html")), StandardCharsets.UTF_8);
        Matcher data = Pattern.compile("<script id=\"profile-data\" type=\"application/json\">(.*?)</script>",
                Pattern.DOTALL).matcher(page);
        assertTrue(data.find());
        String json = data.group(1);
        assertTrue(json.contains("\"total\":" + weight + ","), FlameGraphHtmlTest.head(json));
        for (String name : expectedChainC(f -> SIMPLE_CHAIN_C + ":" + f.getLineNumber()).keySet()) {
            assertTrue(json.contains("\"" + name + "\""), name + " in " + FlameGraphHtmlTest.head(json));
        }
        assertFalse(json.contains("\"" + ConvertTest.CHAIN_C), "no full name left");

        // pprof: the function's name is simple, its system name whole; lines are the locations' own.
        convertOk("--to", "pprof", "--simple", jfr.toString(), "simple.pb.gz");
        ProfileProto.Profile p;
        try (InputStream in = new GZIPInputStream(Files.newInputStream(dir.resolve("simple.pb.gz")))) {
            p = ProfileProto.Profile.parseFrom(in);
        }
        List<String> st = p.getStringTableList();
        ProfileProto.Function chainC = p.getFunctionList().stream()
                .filter(fn -> st.get((int) fn.getName()).equals(SIMPLE_CHAIN_C)).findFirst()
                .orElseThrow(() -> new AssertionError("no function " + SIMPLE_CHAIN_C));
        assertEquals(ConvertTest.CHAIN_C + "(D)D", st.get((int) chainC.getSystemName()));
        long total = p.getSampleList().stream().mapToLong(s -> s.getValue(0)).sum();
        assertEquals(samples.size(), total, "events");
    }
}
