package com.datadoghq.profiler.convert;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.DataInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.LongPredicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.CpuBudget;
import com.datadoghq.profiler.testing.CpuBurner;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code convert --to heatmap} on a recording of two phases, {@link CpuBurner}'s chainC, then
 * {@link #phaseTwo}: the cells' values are the samples of their time slices as the JDK's JFR parser
 * times them, and in headless Chromium (skipped, saying so, where it is not installed) selecting the
 * cells of one phase draws that phase's samples and only theirs.
 */
class HeatmapTest {
    static final String PHASE_TWO = HeatmapTest.class.getName() + ".phaseTwo";

    static Path dir;
    static Path jfr;
    static Path html;
    static List<RecordedEvent> samples;
    static long weight;
    /** The first chunk's start (epoch nanoseconds), from its header: the cells count from there. */
    static long start;

    public static volatile double sink;

    /** Phase two's own hot method, so that a box tells the phases apart. */
    static double phaseTwo(long millis) {
        CpuBudget budget = CpuBudget.of(millis);
        double r = 1;
        while (budget.left()) {
            for (int i = 1; i < 50_000; i++) {
                r = r * 0.999997 + 1.0 / (i + 3);
            }
        }
        return r;
    }

    @BeforeAll
    static void record() throws Exception {
        dir = Files.createTempDirectory("ddprof-heatmap-");
        jfr = dir.resolve("rec.jfr");
        TestEnv.record(jfr, "cpu=10ms", profiler -> {
            CpuBurner.burn(700);
            sink = phaseTwo(700);
        });
        samples = JfrReader.executionSamples(jfr);
        weight = samples.stream().mapToLong(ConvertTest::weightOf).sum();
        try (DataInputStream in = new DataInputStream(Files.newInputStream(jfr))) {
            in.readFully(new byte[32]); // magic, version, size, constant pool and metadata offsets
            start = in.readLong();
        }
        html = dir.resolve("rec.heatmap.html");
        List<String> cmd = new ArrayList<>(Arrays.asList("-jar", TestEnv.toolsJar().toString(), "convert",
                "--to", "heatmap", jfr.toString()));
        ChildJvm.Result r = new ChildJvm().jvmArgs(cmd.toArray(new String[0])).timeout(Duration.ofMinutes(3)).run(dir);
        assertEquals(0, r.exitCode, r.describe());
        assertTrue(Files.exists(html), "the default output name: " + r.describe());
    }

    @AfterAll
    static void cleanUp() throws IOException {
        TestEnv.deleteTree(dir);
    }

    static long nanos(Instant t) {
        return t.getEpochSecond() * 1_000_000_000L + t.getNano();
    }

    /** The samples' weight per cell of {@code bucketNanos}, as the JDK's parser times them. */
    static Map<Long, Long> expectedCells(long bucketNanos) {
        Map<Long, Long> cells = new TreeMap<>();
        for (RecordedEvent e : samples) {
            cells.merge(Math.floorDiv(nanos(e.getStartTime()) - start, bucketNanos), ConvertTest.weightOf(e), Long::sum);
        }
        return cells;
    }

    static long bucketNanos(String page) {
        Matcher m = Pattern.compile("\"heat\":\\{\"bucketNanos\":(\\d+),\"rows\":10,").matcher(page);
        assertTrue(m.find(), "heat data in the page");
        return Long.parseLong(m.group(1));
    }

    /** The cells of a dumped DOM with a value: bucket -> value; {@code selected}: only those drawn as selected. */
    static Map<Long, Long> cells(String dom, boolean selected) {
        Map<Long, Long> out = new TreeMap<>();
        Matcher m = Pattern.compile("<div class=\"c( sel)?\"[^>]*data-bucket=\"(\\d+)\" data-value=\"(\\d+)\"")
                .matcher(dom);
        while (m.find()) {
            if ((!selected || m.group(1) != null) && (selected || Long.parseLong(m.group(3)) > 0)) {
                out.put(Long.parseLong(m.group(2)), Long.parseLong(m.group(3)));
            }
        }
        return out;
    }

    @Test
    void cellsHoldTheSamplesOfTheirTime() throws Exception {
        String page = new String(Files.readAllBytes(html), StandardCharsets.UTF_8);
        long bucket = bucketNanos(page);
        assertEquals(100_000_000L, bucket, "a second's column of 10 cells for a short recording");
        Map<Long, Long> expected = expectedCells(bucket);

        String dom = FlameGraphHtmlTest.browse(dir, html, "#icicle=1", "--dump-dom");
        assertTrue(dom.contains("data-heat-total=\"" + weight + "\""), "the cells add up to the samples");
        assertTrue(dom.contains("data-rendered=\"" + weight + "\""), "nothing selected: all samples drawn");
        assertEquals(expected, cells(dom, false), "each cell's value, as the JDK's parser times the samples");
    }

    @Test
    void selectingCellsDrawsTheirSamples() throws Exception {
        String page = new String(Files.readAllBytes(html), StandardCharsets.UTF_8);
        long bucket = bucketNanos(page);
        long lastChainC = -1;
        long firstPhaseTwo = Long.MAX_VALUE;
        for (RecordedEvent e : samples) {
            long b = Math.floorDiv(nanos(e.getStartTime()) - start, bucket);
            if (ConvertTest.onChainC(e)) {
                lastChainC = Math.max(lastChainC, b);
            }
            if (JfrReader.contains(e, HeatmapTest.class, "phaseTwo")) {
                firstPhaseTwo = Math.min(firstPhaseTwo, b);
            }
        }
        assertTrue(lastChainC >= 0 && firstPhaseTwo < Long.MAX_VALUE, "both phases sampled");
        assertTrue(lastChainC <= firstPhaseTwo, "phase one before phase two");
        long bucketMs = bucket / 1_000_000L;
        long phaseTwoFrom = firstPhaseTwo;
        long phaseOneTo = lastChainC;

        // Phase one: the cells before phase two's first; chainC drawn, phaseTwo not.
        check(0, phaseTwoFrom * bucketMs, b -> b < phaseTwoFrom, ConvertTest.CHAIN_C, PHASE_TWO);
        // Phase two: the cells after chainC's last, to the end.
        check((phaseOneTo + 1) * bucketMs, Long.MAX_VALUE, b -> b > phaseOneTo, PHASE_TWO, ConvertTest.CHAIN_C);

        // The same selections made as a user makes them: a click on the first cell, a shift-click on the last.
        checkClicks(0, phaseTwoFrom - 1, b -> b < phaseTwoFrom, ConvertTest.CHAIN_C, PHASE_TWO);
        long lastCell = Long.parseLong(match(page, "\"buckets\":(\\d+)")) - 1;
        checkClicks(phaseOneTo + 1, lastCell, b -> b > phaseOneTo, PHASE_TWO, ConvertTest.CHAIN_C);
    }

    static String match(String s, String regex) {
        Matcher m = Pattern.compile(regex).matcher(s);
        assertTrue(m.find(), regex);
        return m.group(1);
    }

    /**
     * Clicks cell {@code first}, then shift-clicks cell {@code last} (mouse events dispatched by a script
     * added to a copy of the page, to the page's own handlers), and checks what the flame graph draws.
     */
    private void checkClicks(long first, long last, LongPredicate inRange, String drawn, String notDrawn)
            throws Exception {
        String clicks = "<script>(function () {"
                + " function cell(b) { return document.querySelectorAll('#cells .c')[b]; }"
                + " cell(" + first + ").dispatchEvent(new MouseEvent('click', {bubbles: true}));"
                + " cell(" + last + ").dispatchEvent(new MouseEvent('click', {bubbles: true, shiftKey: true}));"
                + " })();</script></body>";
        Path clicked = dir.resolve("clicked.html");
        Files.writeString(clicked, Files.readString(html).replace("</body>", clicks));
        verify(FlameGraphHtmlTest.browse(dir, clicked, "#icicle=1", "--dump-dom"), "clicks " + first + ".." + last,
                inRange, drawn, notDrawn);
    }

    static String bodyTag(String dom) {
        Matcher m = Pattern.compile("<body[^>]*>").matcher(dom);
        return m.find() ? m.group() : FlameGraphHtmlTest.head(dom);
    }

    /** Selects the cells starting in [fromMs, toMs) and checks what the flame graph draws. */
    private void check(long fromMs, long toMs, LongPredicate inRange, String drawn, String notDrawn) throws Exception {
        String fragment = "#icicle=1&from=" + fromMs + (toMs == Long.MAX_VALUE ? "" : "&to=" + toMs);
        verify(FlameGraphHtmlTest.browse(dir, html, fragment, "--dump-dom"), fragment, inRange, drawn, notDrawn);
    }

    /** The dumped page draws the samples of the cells {@code inRange} holds, {@code drawn} among them. */
    private void verify(String dom, String fragment, LongPredicate inRange, String drawn, String notDrawn)
            throws IOException {
        long bucket = bucketNanos(new String(Files.readAllBytes(html), StandardCharsets.UTF_8));
        long expected = 0;
        for (Map.Entry<Long, Long> e : expectedCells(bucket).entrySet()) {
            if (inRange.test(e.getKey())) {
                expected += e.getValue();
            }
        }
        assertTrue(expected > 0, "samples in the range");
        assertTrue(dom.contains("data-rendered=\"" + expected + "\""),
                fragment + ": the selection's samples, " + expected + ", drawn: " + bodyTag(dom));
        List<String> boxes = FlameGraphHtmlTest.boxes(dom, "f");
        assertTrue(boxes.contains(drawn), fragment + ": a box for " + drawn + " in " + boxes);
        assertFalse(boxes.contains(notDrawn), fragment + ": no box for " + notDrawn);
        for (long b : cells(dom, true).keySet()) {
            assertTrue(inRange.test(b), fragment + ": cell " + b + " drawn as selected");
        }
    }
}
