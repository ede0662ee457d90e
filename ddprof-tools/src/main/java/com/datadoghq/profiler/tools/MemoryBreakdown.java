package com.datadoghq.profiler.tools;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The profiler's native memory as one set of counters describes it (one chunk's
 * {@code datadog.ProfilerCounter} events, or {@code getDebugCounters()}), and the bounds of
 * its share of the process RSS. Plain arithmetic on a name -> value map, so that it can be
 * checked without a JVM or a recording; {@code report FILE.jfr --memory} prints it.
 *
 * <p>Categories are found from the names, not listed here: every
 * {@code native_mem_live_bytes.<category>} is one. A category with a
 * {@code native_mem_resident_bytes.<category>} gauge is <em>mapped</em> (the profiler's own
 * anonymous mappings, committed page by page, so only the resident part costs RSS); the
 * others are <em>heap</em> (malloc blocks, which cost their live bytes plus the allocator's
 * overhead).
 *
 * <ul>
 *   <li>lower bound = heap live + heap overhead + mapped resident: memory that is the
 *       profiler's and is (or, for the heap, was once written and so normally is) resident;</li>
 *   <li>upper bound = lower bound + {@code malloc_free_held_bytes}: the free chunks glibc's
 *       arenas keep instead of returning them. Some may be the profiler's freed blocks, but the
 *       figure is process-wide (the JVM's and every library's free chunks are in it too), which
 *       is why it only bounds from above. Unknown (-1) when the arena figures are
 *       unavailable.</li>
 * </ul>
 */
public final class MemoryBreakdown {
    public static final String LIVE = "native_mem_live_bytes";
    public static final String MAX = "native_mem_max_bytes";
    public static final String AVG = "native_mem_avg_bytes";
    public static final String OVERHEAD = "native_mem_chunk_overhead_bytes";
    public static final String RESIDENT = "native_mem_resident_bytes";

    public static final String IS_GLIBC = "malloc_is_glibc";
    public static final String HEADER = "malloc_chunk_header_bytes";
    public static final String ARENA = "malloc_arena_bytes";
    public static final String IN_USE = "malloc_in_use_bytes";
    public static final String FREE_HELD = "malloc_free_held_bytes";
    public static final String TRIMMABLE = "malloc_trimmable_bytes";
    public static final String MMAP = "malloc_mmap_bytes";

    /** What the native side writes for a figure it cannot know, and what this class uses too. */
    public static final long UNAVAILABLE = -1;

    /** One category's figures (bytes). */
    public static final class Category {
        public final String name;
        public final boolean mapped;
        public final long live;
        public final long peak;
        public final long avg;
        public final long overhead;
        /** Resident bytes of a mapped category; {@link #UNAVAILABLE} for heap categories. */
        public final long resident;

        Category(String name, boolean mapped, long live, long peak, long avg, long overhead, long resident) {
            this.name = name;
            this.mapped = mapped;
            this.live = live;
            this.peak = peak;
            this.avg = avg;
            this.overhead = overhead;
            this.resident = resident;
        }

        /** What this category adds to the lower bound of the RSS share. */
        public long rssShare() {
            return mapped ? resident : live + overhead;
        }
    }

    /** Categories in the order the counters list them. */
    public final List<Category> categories;
    /** The unsuffixed gauges; its resident is the sum over the mapped categories. */
    public final Category total;
    /** {@code malloc_is_glibc}: whether glibc's malloc serves this process. */
    public final boolean glibc;
    public final long headerBytes;
    /** The process-wide {@code mallinfo2} figures, {@link #UNAVAILABLE} when unknown. */
    public final long arenaBytes;
    public final long inUseBytes;
    public final long freeHeldBytes;
    public final long trimmableBytes;
    public final long mmapBytes;
    public final long heapFootprint;
    public final long mappedResident;
    public final long lowerBound;
    /** {@link #UNAVAILABLE} when {@code malloc_free_held_bytes} is. */
    public final long upperBound;

    private MemoryBreakdown(List<Category> categories, Category total, Map<String, Long> c) {
        this.categories = Collections.unmodifiableList(categories);
        this.total = total;
        this.glibc = get(c, IS_GLIBC) == 1;
        this.headerBytes = get(c, HEADER);
        this.arenaBytes = get(c, ARENA);
        this.inUseBytes = get(c, IN_USE);
        this.freeHeldBytes = get(c, FREE_HELD);
        this.trimmableBytes = get(c, TRIMMABLE);
        this.mmapBytes = get(c, MMAP);
        long heap = 0;
        long resident = 0;
        for (Category cat : categories) {
            if (cat.mapped) {
                resident += cat.resident;
            } else {
                heap += cat.live + cat.overhead;
            }
        }
        this.heapFootprint = heap;
        this.mappedResident = resident;
        this.lowerBound = heap + resident;
        // Any negative figure is the native side's "unknown" (-1), never a real size.
        this.upperBound = freeHeldBytes < 0 ? UNAVAILABLE : lowerBound + freeHeldBytes;
    }

    /** Whether {@code counters} carry the native-memory gauges at all. */
    public static boolean present(Map<String, Long> counters) {
        return counters.containsKey(LIVE);
    }

    /**
     * Reads the breakdown from one set of counters.
     *
     * @throws IllegalArgumentException naming the first gauge that is missing
     */
    public static MemoryBreakdown of(Map<String, Long> counters) {
        List<Category> categories = new ArrayList<>();
        String prefix = LIVE + ".";
        for (String name : counters.keySet()) {
            if (name.startsWith(prefix)) {
                categories.add(category(counters, name.substring(prefix.length())));
            }
        }
        if (categories.isEmpty()) {
            throw new IllegalArgumentException("no " + prefix + "<category> counters");
        }
        long resident = 0;
        for (Category cat : categories) {
            if (cat.mapped) {
                resident += cat.resident;
            }
        }
        Category total = new Category("total", false, get(counters, LIVE), get(counters, MAX),
                get(counters, AVG), get(counters, OVERHEAD), resident);
        return new MemoryBreakdown(categories, total, counters);
    }

    private static Category category(Map<String, Long> counters, String name) {
        String suffix = "." + name;
        Long resident = counters.get(RESIDENT + suffix);
        return new Category(name, resident != null,
                get(counters, LIVE + suffix), get(counters, MAX + suffix), get(counters, AVG + suffix),
                get(counters, OVERHEAD + suffix), resident == null ? UNAVAILABLE : resident);
    }

    private static long get(Map<String, Long> counters, String name) {
        Long v = counters.get(name);
        if (v == null) {
            throw new IllegalArgumentException("no " + name + " counter");
        }
        return v;
    }

    /** Bytes in binary units: {@code 878 B}, {@code 8.6 KiB}, {@code 35.0 MiB}; negative: {@code n/a}. */
    public static String human(long bytes) {
        if (bytes < 0) {
            return "n/a";
        }
        if (bytes < 1024) {
            return bytes + " B";
        }
        String[] units = {"KiB", "MiB", "GiB", "TiB"};
        double v = bytes;
        int u = -1;
        do {
            v /= 1024;
            u++;
        } while (v >= 1024 && u < units.length - 1);
        return String.format(Locale.ROOT, "%.1f %s", v, units[u]);
    }

    /** Exact bytes with thousands separators, for the bounds. */
    static String exact(long bytes) {
        return String.format(Locale.ROOT, "%,d B", bytes);
    }

    /** The table, the arena figures and the bounds; {@code source} says which counters these are. */
    public void print(PrintStream out, String source) {
        out.println("Native memory of the profiler, " + source);
        out.println();
        String[] header = {"category", "kind", "live", "peak", "avg", "overhead", "resident"};
        List<String[]> rows = new ArrayList<>();
        for (Category c : categories) {
            rows.add(row(c, c.mapped ? "mapped" : "heap"));
        }
        rows.add(row(total, ""));
        Table.print(out, header, rows, 2);
        out.println("  (live: bytes requested; for a mapped category that is its reserved size, of which");
        out.println("  only the resident pages cost RSS. peak: since start. avg: over the chunks since start.)");
        out.println();

        if (glibc) {
            out.println("Allocator: glibc malloc, chunk header " + headerBytes + " B (probed)");
        } else {
            out.println("Allocator: not glibc's malloc (e.g. an LD_PRELOADed jemalloc), chunk header "
                    + headerBytes + " B (probed)");
        }
        if (arenaBytes < 0) {
            out.println("Process-wide malloc arenas: unavailable (allocator: "
                    + (glibc ? "glibc without mallinfo2" : "not glibc") + ")");
        } else {
            out.println("Process-wide malloc arenas (all of the process, not only the profiler):");
            List<String[]> arena = new ArrayList<>();
            arena.add(new String[] {"arena", human(arenaBytes), "obtained from the system for the main and thread arenas"});
            arena.add(new String[] {"in use", human(inUseBytes), "allocated chunks"});
            arena.add(new String[] {"free held", human(freeHeldBytes), "free chunks kept by the allocator"});
            arena.add(new String[] {"trimmable", human(trimmableBytes), "releasable at the top of the main arena"});
            arena.add(new String[] {"mmapped", human(mmapBytes), "large blocks in their own mappings"});
            Table.print(out, null, arena, 2);
        }
        out.println();

        out.println("Profiler's share of RSS:");
        out.println("  lower bound  " + human(lowerBound) + " (" + exact(lowerBound) + ")"
                + " = heap live + overhead " + human(heapFootprint)
                + " + mapped resident " + human(mappedResident));
        if (upperBound < 0) {
            out.println("  upper bound  unknown (free-but-held arena bytes unavailable: allocator: "
                    + (glibc ? "glibc without mallinfo2" : "not glibc") + ")");
        } else {
            out.println("  upper bound  " + human(upperBound) + " (" + exact(upperBound) + ")"
                    + " = lower bound + free held " + human(freeHeldBytes)
                    + " (process-wide: other code's free chunks are in it too)");
        }
    }

    private static String[] row(Category c, String kind) {
        return new String[] {
            c.name, kind, human(c.live), human(c.peak), human(c.avg), human(c.overhead),
            c.resident < 0 ? "-" : human(c.resident)};
    }

    /** Right-aligned columns except the first, and the last when it is text. */
    static final class Table {
        private Table() {
        }

        static void print(PrintStream out, String[] header, List<String[]> rows, int indent) {
            int columns = header != null ? header.length : rows.get(0).length;
            int[] width = new int[columns];
            List<String[]> all = new ArrayList<>();
            if (header != null) {
                all.add(header);
            }
            all.addAll(rows);
            for (String[] r : all) {
                for (int i = 0; i < columns; i++) {
                    width[i] = Math.max(width[i], r[i].length());
                }
            }
            // A trailing free-text column (the arena descriptions) is left-aligned and unpadded.
            boolean textLast = header == null;
            for (String[] r : all) {
                StringBuilder line = new StringBuilder();
                for (int s = 0; s < indent; s++) {
                    line.append(' ');
                }
                for (int i = 0; i < columns; i++) {
                    if (i > 0) {
                        line.append("  ");
                    }
                    boolean left = i == 0 || (textLast && i == columns - 1);
                    if (!left) {
                        pad(line, width[i] - r[i].length());
                    }
                    line.append(r[i]);
                    if (left && i < columns - 1) {
                        pad(line, width[i] - r[i].length());
                    }
                }
                out.println(line);
            }
        }

        private static void pad(StringBuilder line, int n) {
            for (int i = 0; i < n; i++) {
                line.append(' ');
            }
        }
    }
}
