package com.datadoghq.profiler.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import jdk.jfr.consumer.RecordedEvent;

/**
 * The native-memory gauges as a user reads them (docs/footprint.md), and the checks every
 * native-memory test makes on one set of them. The category names are spelled out here, not
 * taken from the recording, so that a category that disappears or is renamed fails the tests.
 */
public final class NativeMemoryGauges {
    public static final String LIVE = "native_mem_live_bytes";
    public static final String MAX = "native_mem_max_bytes";
    public static final String AVG = "native_mem_avg_bytes";
    public static final String OVERHEAD = "native_mem_chunk_overhead_bytes";
    public static final String RESIDENT = "native_mem_resident_bytes";
    public static final List<String> FAMILIES = Collections.unmodifiableList(Arrays.asList(LIVE, MAX, AVG, OVERHEAD));

    /** Through the counting allocator (malloc). */
    public static final List<String> HEAP = Collections.unmodifiableList(Arrays.asList(
            "misc", "dictionary", "endpoints", "method_map", "line_tables", "class_registry", "thread_info", "native_symbols",
            "live_heap", "jfr_buffers"));
    /** The profiler's own anonymous mappings. */
    public static final List<String> MAPPED = Collections.unmodifiableList(Arrays.asList("calltrace", "sample_buffers"));

    public static final List<String> ARENA = Collections.unmodifiableList(Arrays.asList(
            "malloc_arena_bytes", "malloc_in_use_bytes", "malloc_free_held_bytes",
            "malloc_trimmable_bytes", "malloc_mmap_bytes"));

    private NativeMemoryGauges() {}

    public static List<String> categories() {
        List<String> all = new java.util.ArrayList<>(HEAP);
        all.addAll(MAPPED);
        return all;
    }

    /** Every gauge name the native side must write. */
    public static List<String> names() {
        List<String> names = new java.util.ArrayList<>();
        for (String f : FAMILIES) {
            names.add(f);
            for (String c : categories()) {
                names.add(f + "." + c);
            }
        }
        for (String c : MAPPED) {
            names.add(RESIDENT + "." + c);
        }
        names.add("malloc_is_glibc");
        names.add("malloc_chunk_header_bytes");
        names.addAll(ARENA);
        return names;
    }

    /**
     * The {@code datadog.ProfilerCounter} events of a file holding one chunk (a dump, or what
     * {@code stop()} left), as name -> count; a name written twice fails.
     */
    public static Map<String, Long> ofSingleChunk(Path file) throws IOException {
        return toMap(JfrReader.events(file, JfrReader.PROFILER_COUNTER), file.toString());
    }

    public static Map<String, Long> toMap(List<RecordedEvent> counters, String where) {
        Map<String, Long> map = new LinkedHashMap<>();
        for (RecordedEvent e : counters) {
            Long before = map.put(e.getString("name"), e.getLong("count"));
            assertEquals(null, before, "counter " + e.getString("name") + " written twice in one chunk of " + where);
        }
        return map;
    }

    public static long get(Map<String, Long> counters, String name, String where) {
        Long v = counters.get(name);
        assertNotNull(v, where + ": no counter " + name);
        return v;
    }

    /**
     * Holds for any allocator: every gauge is there, the categories add up exactly to the
     * totals (live and overhead; the native side reads them as one snapshot), peaks are not
     * below live, and the mapped categories' resident bytes are within their mappings.
     */
    public static void assertPartition(Map<String, Long> c, String where) {
        for (String name : names()) {
            get(c, name, where);
        }
        for (String family : Arrays.asList(LIVE, OVERHEAD)) {
            long sum = 0;
            StringBuilder parts = new StringBuilder();
            for (String cat : categories()) {
                long v = c.get(family + "." + cat);
                assertTrue(v >= 0, where + ": " + family + "." + cat + " = " + v);
                sum += v;
                parts.append(' ').append(cat).append('=').append(v);
            }
            assertEquals(c.get(family).longValue(), sum,
                    where + ": the categories of " + family + " do not add up to the total:" + parts);
        }
        for (String cat : categories()) {
            long live = c.get(LIVE + "." + cat);
            long max = c.get(MAX + "." + cat);
            long avg = c.get(AVG + "." + cat);
            assertTrue(max >= live, where + ": " + cat + " peak " + max + " below live " + live);
            assertTrue(avg >= 0 && avg <= max, where + ": " + cat + " avg " + avg + " outside [0, peak " + max + "]");
        }
        assertTrue(c.get(MAX) >= c.get(LIVE), where + ": total peak below total live");
        for (String cat : MAPPED) {
            long live = c.get(LIVE + "." + cat);
            long resident = c.get(RESIDENT + "." + cat);
            // The mappings are page-rounded: their length is live + overhead (the rounding),
            // and the pages of that length are all that can be resident.
            long mapped = live + c.get(OVERHEAD + "." + cat);
            assertTrue(live > 0, where + ": " + cat + " has no mapping while profiling");
            assertTrue(resident > 0 && resident <= mapped,
                    where + ": " + RESIDENT + "." + cat + " = " + resident + ", outside (0, mapped length " + mapped + "]");
        }
    }

    /** Heap-category bytes of one family. */
    public static long heap(Map<String, Long> c, String family) {
        long sum = 0;
        for (String cat : HEAP) {
            sum += c.get(family + "." + cat);
        }
        return sum;
    }
}
