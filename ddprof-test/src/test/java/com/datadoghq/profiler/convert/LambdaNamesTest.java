package com.datadoghq.profiler.convert;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.export.EventKind;
import com.datadoghq.profiler.tools.Report;
import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.CpuBurner;
import com.datadoghq.profiler.testing.TestEnv;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The converters name a lambda's class stably across runs (issue 37): the JVM names it
 * {@code Outer$$Lambda$6/0x00007fd704006428} (JDK 11-20; {@code Outer$$Lambda/0x...} on 21+), whose
 * counter and address differ from run to run, so two profiles of the same code could not be
 * compared. By default the frame is {@code Outer$$Lambda.run}; {@code --raw-names} keeps the
 * recorded name. {@code report} names it as the converters do, with the same option.
 */
class LambdaNamesTest {
    /** A lambda class's run-specific part: its counter and its address (or JDK 11's identity number). */
    static final Pattern RAW = Pattern.compile("\\$\\$Lambda(\\$[0-9]+)?[./](0x[0-9a-fA-F]+|[0-9]+)");
    static final String STABLE = LambdaNamesTest.class.getName() + "$$Lambda.run";

    static Path dir;

    @BeforeAll
    static void record() throws Exception {
        dir = Files.createTempDirectory("ddprof-lambda-");
        JavaProfiler profiler = TestEnv.profiler();
        TestEnv.stopQuietly(profiler);
        profiler.execute("start,cpu=10ms,file=" + dir.resolve("rec.jfr"));
        try {
            Runnable burn = () -> CpuBurner.burn(600);
            burn.run();
        } finally {
            profiler.stop();
        }
    }

    @AfterAll
    static void cleanUp() throws IOException {
        TestEnv.deleteTree(dir);
    }

    /** Runs {@code convert} in {@link #dir} (relative paths resolve there); returns the output file. */
    static Path convert(String... args) throws Exception {
        java.util.List<String> cmd = new java.util.ArrayList<>(
                java.util.Arrays.asList("-jar", TestEnv.toolsJar().toString(), "convert"));
        cmd.addAll(java.util.Arrays.asList(args));
        ChildJvm.Result r = new ChildJvm().jvmArgs(cmd.toArray(new String[0])).timeout(Duration.ofMinutes(3)).run(dir);
        assertEquals(0, r.exitCode, r.describe());
        return dir.resolve(args[args.length - 1]);
    }

    /** {@code report}'s output on {@link #dir}'s recording. */
    static String report(String... options) throws Exception {
        java.util.List<String> cmd = new java.util.ArrayList<>(
                java.util.Arrays.asList("-jar", TestEnv.toolsJar().toString(), "report", "rec.jfr"));
        cmd.addAll(java.util.Arrays.asList(options));
        ChildJvm.Result r = new ChildJvm().jvmArgs(cmd.toArray(new String[0])).timeout(Duration.ofMinutes(3)).run(dir);
        assertEquals(0, r.exitCode, r.describe());
        return r.stdout;
    }

    static Set<String> lambdaFrames(Path collapsed) throws IOException {
        return ConvertTest.readCollapsed(collapsed).keySet().stream()
                .flatMap(stack -> java.util.Arrays.stream(stack.split(";")))
                .filter(f -> f.contains("$$Lambda"))
                .collect(Collectors.toSet());
    }

    @Test
    void aLambdasClassIsNamedWithoutItsCounterAndAddress() throws Exception {
        Set<String> frames = lambdaFrames(convert("--to", "collapsed", "rec.jfr", "stable.collapsed"));
        assertTrue(frames.contains(STABLE), "the burning lambda's frame: " + frames);
        assertFalse(frames.stream().anyMatch(f -> RAW.matcher(f).find()), "run-specific names left: " + frames);

        Set<String> raw = lambdaFrames(convert("--to", "collapsed", "--raw-names", "rec.jfr", "raw.collapsed"));
        assertTrue(raw.stream().anyMatch(f -> f.startsWith(LambdaNamesTest.class.getName() + "$$Lambda")
                && RAW.matcher(f).find() && f.endsWith(".run")), "--raw-names keeps the recorded name: " + raw);
    }

    /**
     * {@code report}'s rows (all of them: its printed table shows the top by self value, and a
     * lambda's {@code run} is a frame with total but little self time), read as the command reads them.
     */
    @Test
    void reportNamesTheLambdaAsTheConvertersDo() throws Exception {
        Path jfr = dir.resolve("rec.jfr");
        Set<String> stable = methods(Report.read(jfr, EventKind.CPU, false));
        assertTrue(stable.contains(STABLE), "report's rows name the lambda stably: " + lambdas(stable));
        assertFalse(stable.stream().anyMatch(m -> RAW.matcher(m).find()), "run-specific names left: " + lambdas(stable));
        Set<String> raw = methods(Report.read(jfr, EventKind.CPU, true));
        assertTrue(raw.stream().anyMatch(m -> RAW.matcher(m).find()), "raw names keep the recorded name: " + lambdas(raw));
        report("--raw-names");
    }

    static Set<String> methods(Report.Summary summary) {
        return summary.kinds.get(EventKind.CPU).methods.stream().map(r -> r.method).collect(Collectors.toSet());
    }

    static Set<String> lambdas(Set<String> methods) {
        return methods.stream().filter(m -> m.contains("$$Lambda")).collect(Collectors.toSet());
    }
}
