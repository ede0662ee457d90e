package com.datadoghq.profiler.memory;

import static com.datadoghq.profiler.testing.NativeMemoryGauges.LIVE;
import static com.datadoghq.profiler.testing.NativeMemoryGauges.OVERHEAD;
import static com.datadoghq.profiler.testing.NativeMemoryGauges.RESIDENT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.CpuBurner;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.NativeMemoryGauges;
import com.datadoghq.profiler.testing.ProfilerExtension;
import com.datadoghq.profiler.testing.TestEnv;
import com.datadoghq.profiler.tools.MemoryBreakdown;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code report FILE.jfr --memory}: the bounds arithmetic on made-up counters, then the real
 * command on a real two-chunk recording, checked against the counters read independently.
 */
@ExtendWith(ProfilerExtension.class)
class ReportMemoryTest {
    @TempDir
    Path dir;

    private final JavaProfiler profiler;

    ReportMemoryTest(JavaProfiler profiler) {
        this.profiler = profiler;
    }

    /** A complete, made-up counter set: two heap categories, one mapped. */
    private static Map<String, Long> counters(long freeHeld) {
        Map<String, Long> c = new LinkedHashMap<>();
        long[][] v = {{1000, 2000, 1500, 100}, {500, 600, 550, 40}, {1 << 20, 1 << 20, 1 << 20, 4096}};
        String[] cats = {"misc", "thread_info", "calltrace"};
        String[] fam = {LIVE, "native_mem_max_bytes", "native_mem_avg_bytes", OVERHEAD};
        for (int f = 0; f < fam.length; f++) {
            long total = 0;
            for (int i = 0; i < cats.length; i++) {
                total += v[i][f];
            }
            c.put(fam[f], total);
            for (int i = 0; i < cats.length; i++) {
                c.put(fam[f] + "." + cats[i], v[i][f]);
            }
        }
        c.put(RESIDENT + ".calltrace", 8192L);
        c.put("malloc_is_glibc", freeHeld < 0 ? 0L : 1L);
        c.put("malloc_chunk_header_bytes", freeHeld < 0 ? 0L : 8L);
        for (String a : NativeMemoryGauges.ARENA) {
            c.put(a, freeHeld < 0 ? -1L : 10_000L);
        }
        c.put("malloc_free_held_bytes", freeHeld);
        return c;
    }

    @Test
    void boundsAreHeapLivePlusOverheadPlusMappedResidentThenPlusFreeHeld() {
        MemoryBreakdown b = MemoryBreakdown.of(counters(3000));
        assertEquals(3, b.categories.size());
        assertTrue(!b.categories.get(0).mapped && !b.categories.get(1).mapped && b.categories.get(2).mapped,
                "only the category with a resident gauge is mapped");
        // heap (1000 + 100) + (500 + 40), mapped: its resident 8192, not its 1 MiB reservation.
        assertEquals(1640 + 8192, b.lowerBound);
        assertEquals(1640 + 8192 + 3000, b.upperBound);
        assertEquals(8192, b.total.resident);

        String out = print(b);
        assertTrue(out.contains("upper bound  12.5 KiB (12,832 B)"), out);
        assertTrue(out.contains("lower bound  9.6 KiB (9,832 B)"), out);
        assertTrue(out.contains("Allocator: glibc malloc, chunk header 8 B"), out);
    }

    @Test
    void withoutArenaFiguresTheUpperBoundIsUnknown() {
        MemoryBreakdown b = MemoryBreakdown.of(counters(-1));
        assertEquals(1640 + 8192, b.lowerBound);
        assertEquals(MemoryBreakdown.UNAVAILABLE, b.upperBound);
        String out = print(b);
        assertTrue(out.contains("Process-wide malloc arenas: unavailable (allocator: not glibc)"), out);
        assertTrue(out.contains("upper bound  unknown"), out);
    }

    @Test
    void aMissingGaugeIsNamed() {
        Map<String, Long> c = counters(0);
        c.remove("native_mem_avg_bytes.thread_info");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> MemoryBreakdown.of(c));
        assertTrue(e.getMessage().contains("native_mem_avg_bytes.thread_info"), e.getMessage());
    }

    @Test
    void humanUnitsAreBinary() {
        assertEquals("0 B", MemoryBreakdown.human(0));
        assertEquals("1023 B", MemoryBreakdown.human(1023));
        assertEquals("1.0 KiB", MemoryBreakdown.human(1024));
        assertEquals("1.5 MiB", MemoryBreakdown.human(3 << 19));
        assertEquals("n/a", MemoryBreakdown.human(-1));
    }

    private static String print(MemoryBreakdown b) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        b.print(new PrintStream(bytes, true), "test");
        return new String(bytes.toByteArray(), StandardCharsets.UTF_8);
    }

    @Test
    void reportMemoryPrintsTheLastChunkOfARealRecording() throws Exception {
        // Two chunks in one file, as JFR files concatenate: a dump, then what stop() leaves.
        Path dump = dir.resolve("dump.jfr");
        Path rest = dir.resolve("rest.jfr");
        TestEnv.start(profiler, "start,cpu=1ms,file=" + rest);
        CpuBurner.burn(600);
        profiler.dump(dump);
        // Threads alive only in the second chunk, so that its thread_info differs from the first's.
        List<CpuBurner> burners = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            CpuBurner b = new CpuBurner();
            burners.add(b);
            threads.add(new Thread(b, "report-memory-second-chunk-thread-" + i));
        }
        threads.forEach(Thread::start);
        try {
            CpuBurner.burn(600);
            profiler.stop();
        } finally {
            burners.forEach(CpuBurner::stop);
            for (Thread t : threads) {
                t.join();
            }
        }
        Path file = dir.resolve("two-chunks.jfr");
        Files.write(file, Files.readAllBytes(dump));
        Files.write(file, Files.readAllBytes(rest), StandardOpenOption.APPEND);
        int firstCount = JfrReader.events(dump, JfrReader.PROFILER_COUNTER).size();

        List<RecordedEvent> all = JfrReader.events(file, JfrReader.PROFILER_COUNTER);
        assertTrue(all.size() > firstCount, "the second chunk of " + file + " has no counters");
        Map<String, Long> first = NativeMemoryGauges.toMap(all.subList(0, firstCount), "chunk 1");
        Map<String, Long> last = NativeMemoryGauges.toMap(all.subList(firstCount, all.size()), "chunk 2");
        // Otherwise this test could not tell which chunk the report read.
        assertNotEquals(MemoryBreakdown.human(first.get(LIVE + ".thread_info")),
                MemoryBreakdown.human(last.get(LIVE + ".thread_info")),
                "precondition: the two chunks' thread_info rows would read the same");

        ChildJvm.Result r = new ChildJvm()
                .jvmArgs("-jar", TestEnv.toolsJar().toString(), "report", file.toString(), "--memory")
                .timeout(Duration.ofSeconds(60))
                .run(dir);
        assertEquals(0, r.exitCode, r.describe());
        String out = r.stdout;
        assertTrue(out.contains("from the counters of the last chunk (chunk 2 of 2"), "which chunk:\n" + out);

        // Every category's row shows that chunk's gauges.
        Pattern row = Pattern.compile("^\\s+(\\S+)\\s+(heap|mapped|)\\s+(.*)$");
        Pattern value = Pattern.compile("\\d+(?:\\.\\d)? (?:B|KiB|MiB|GiB)|-");
        Map<String, List<String>> rows = new LinkedHashMap<>();
        for (String line : out.split("\n")) {
            Matcher m = row.matcher(line);
            if (m.matches()) {
                List<String> cells = new ArrayList<>();
                Matcher v = value.matcher(m.group(3));
                while (v.find()) {
                    cells.add(v.group());
                }
                if (cells.size() == 5) {
                    rows.put(m.group(1), cells);
                }
            }
        }
        List<String> categories = NativeMemoryGauges.categories();
        categories.add(null); // the total
        for (String cat : categories) {
            String name = cat == null ? "total" : cat;
            String suffix = cat == null ? "" : "." + cat;
            List<String> cells = rows.get(name);
            assertTrue(cells != null, "no row for " + name + ":\n" + out);
            String[] families = {LIVE, "native_mem_max_bytes", "native_mem_avg_bytes", OVERHEAD};
            for (int i = 0; i < families.length; i++) {
                assertEquals(MemoryBreakdown.human(last.get(families[i] + suffix)), cells.get(i),
                        name + ": " + families[i] + suffix + " in\n" + out);
            }
            if (cat != null && NativeMemoryGauges.MAPPED.contains(cat)) {
                assertEquals(MemoryBreakdown.human(last.get(RESIDENT + suffix)), cells.get(4), name + " resident\n" + out);
            }
        }

        // The bounds, recomputed here from the gauges.
        long lower = 0;
        for (String cat : NativeMemoryGauges.HEAP) {
            lower += last.get(LIVE + "." + cat) + last.get(OVERHEAD + "." + cat);
        }
        for (String cat : NativeMemoryGauges.MAPPED) {
            lower += last.get(RESIDENT + "." + cat);
        }
        long upper = lower + last.get("malloc_free_held_bytes");
        long printedLower = bound(out, "lower");
        long printedUpper = bound(out, "upper");
        assertEquals(lower, printedLower, out);
        assertEquals(upper, printedUpper, out);
        assertTrue(printedLower <= printedUpper, out);
        assertTrue(out.contains("Allocator: glibc malloc, chunk header 8 B"), out);
        assertTrue(out.contains("free held"), out);
    }

    private static long bound(String out, String which) {
        Matcher m = Pattern.compile(which + " bound\\s+\\S+ \\S+ \\(([\\d,]+) B\\)").matcher(out);
        assertTrue(m.find(), "no " + which + " bound line:\n" + out);
        return Long.parseLong(m.group(1).replace(",", ""));
    }
}
