package com.datadoghq.profiler.export;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Collections;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;

/**
 * How many threads each wall-clock sample stands for. Every tick the wall sampler signals at most
 * {@code walltpt} of the threads it may sample (its pool: the registered ones under the thread
 * filter); a tick's sample of one thread then stands for {@code samplePoolSize /
 * numSuccessfulSamples} threads, and wall time summed as samples x interval falls short by that
 * factor (40 threads at 16 a tick: each shows 40% of its time). The counts are those of one tick,
 * in {@code datadog.WallClockSamplingEpoch}: an event is written at the first tick whose counts
 * differ from the previous one's, or once a second, with the time since the previous event as its
 * duration; so its counts hold from its end (startTime + duration) to the next event's end.
 * Samples before the first event, or in a recording without any, stand for one thread.
 */
final class WallEpochs {
    static final String EVENT = "datadog.WallClockSamplingEpoch";

    /** The factor in force from each epoch's end (epoch nanoseconds) on. */
    private final NavigableMap<Long, Double> fromEnd;

    private WallEpochs(NavigableMap<Long, Double> fromEnd) {
        this.fromEnd = fromEnd;
    }

    static final WallEpochs NONE = new WallEpochs(new TreeMap<>());

    /** Reads the epoch events of a recording (a pass over the file of its own). */
    static WallEpochs read(Path file) throws IOException {
        NavigableMap<Long, Double> fromEnd = new TreeMap<>();
        JfrEvents.forEach(file, Collections.singleton(EVENT), false, e -> {
            long pool = e.getLong("samplePoolSize");
            long ok = e.getLong("numSuccessfulSamples");
            long start = e.startNanos();
            long durationMs = e.hasField("duration") ? e.getLong("duration") : 0;
            fromEnd.put(start + durationMs * 1_000_000L, ok > 0 && pool > ok ? (double) pool / ok : 1.0);
        });
        return fromEnd.isEmpty() ? NONE : new WallEpochs(fromEnd);
    }

    /** The number of threads a wall sample taken at {@code nanos} stands for (1 when unknown). */
    double factorAt(long nanos) {
        Map.Entry<Long, Double> e = fromEnd.floorEntry(nanos);
        return e == null ? 1.0 : e.getValue();
    }
}
