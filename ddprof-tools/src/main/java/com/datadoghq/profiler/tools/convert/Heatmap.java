package com.datadoghq.profiler.tools.convert;

import com.datadoghq.profiler.export.EventKind;
import com.datadoghq.profiler.export.Profile;

/**
 * {@code convert --to heatmap}: the flame graph page with the recording's time above it, as a grid
 * of cells: a column per second ({@link #columnNanos}), {@link #ROWS} cells down it, each cell the
 * samples' value in its slice of time (darker: more). Selecting cells draws the flame graph of
 * those samples only. The data ({@link FlameGraph}'s, plus):
 *
 * <pre>
 * "heat": { "bucketNanos": N, "rows": 10, "buckets": B,
 *           "times": [[bucket, value, bucket, value, ...], ...] }   one per entry of "stacks"
 * </pre>
 *
 * Bucket {@code b} covers {@code [start + b * bucketNanos, start + (b + 1) * bucketNanos)} from the
 * first chunk's start; column {@code b / rows}, row {@code b % rows} (top to bottom).
 */
final class Heatmap {
    static final int ROWS = 10;
    /** Columns beyond which a column holds more than a second: a long recording still fits a page. */
    static final int MAX_COLUMNS = 600;

    private Heatmap() {
    }

    /** A column's time: one second, or as many whole seconds as keep the columns within {@link #MAX_COLUMNS}. */
    static long columnNanos(long spanNanos) {
        long seconds = Math.max(1, (spanNanos + MAX_COLUMNS * 1_000_000_000L - 1) / (MAX_COLUMNS * 1_000_000_000L));
        return seconds * 1_000_000_000L;
    }

    /** The time bucket of one cell for a recording of {@code spanNanos}. */
    static long bucketNanos(long spanNanos) {
        return columnNanos(spanNanos) / ROWS;
    }

    /** The "heat" object: the samples of {@code kind} in the order {@link FlameGraph} writes their stacks. */
    static void json(Profile profile, EventKind kind, StringBuilder b) {
        long bucket = profile.bucketNanos();
        if (bucket <= 0) {
            throw new IllegalStateException("the profile was read without time buckets");
        }
        long last = Math.max(0, (profile.endNanos - profile.startNanos - 1) / bucket);
        StringBuilder times = new StringBuilder();
        for (Profile.Sample s : profile.samples(kind)) {
            long[] timeline = s.timeline();
            times.append(times.length() == 0 ? "[" : ",[");
            for (int i = 0; i < timeline.length; i++) {
                times.append(i == 0 ? "" : ",").append(timeline[i]);
            }
            if (timeline.length > 0) {
                last = Math.max(last, timeline[timeline.length - 2]);
            }
            times.append(']');
        }
        // Whole columns, so that the grid is a rectangle.
        long buckets = (last / ROWS + 1) * ROWS;
        b.append("{\"bucketNanos\":").append(bucket).append(",\"rows\":").append(ROWS)
                .append(",\"buckets\":").append(buckets).append(",\"times\":[").append(times).append("]}");
    }
}
