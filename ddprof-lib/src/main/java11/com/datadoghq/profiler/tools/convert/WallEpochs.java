package com.datadoghq.profiler.tools.convert;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;

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

    /** Epoch ends (epoch nanoseconds), ascending, and the factor from each on. */
    private final long[] from;
    private final double[] factor;

    private WallEpochs(long[] from, double[] factor) {
        this.from = from;
        this.factor = factor;
    }

    static final WallEpochs NONE = new WallEpochs(new long[0], new double[0]);

    /** Reads the epoch events of a recording (a pass over the file of its own). */
    static WallEpochs read(Path file) throws IOException {
        List<long[]> ends = new ArrayList<>();
        List<Double> factors = new ArrayList<>();
        try (RecordingFile recording = new RecordingFile(file)) {
            while (recording.hasMoreEvents()) {
                RecordedEvent e = recording.readEvent();
                if (!EVENT.equals(e.getEventType().getName())) {
                    continue;
                }
                long pool = e.getLong("samplePoolSize");
                long ok = e.getLong("numSuccessfulSamples");
                long start = e.getStartTime().getEpochSecond() * 1_000_000_000L + e.getStartTime().getNano();
                long durationMs = e.hasField("duration") ? e.getLong("duration") : 0;
                ends.add(new long[] {start + durationMs * 1_000_000L});
                factors.add(ok > 0 && pool > ok ? (double) pool / ok : 1.0);
            }
        }
        Integer[] order = new Integer[ends.size()];
        for (int i = 0; i < order.length; i++) {
            order[i] = i;
        }
        Arrays.sort(order, (a, b) -> Long.compare(ends.get(a)[0], ends.get(b)[0]));
        long[] from = new long[order.length];
        double[] factor = new double[order.length];
        for (int i = 0; i < order.length; i++) {
            from[i] = ends.get(order[i])[0];
            factor[i] = factors.get(order[i]);
        }
        return new WallEpochs(from, factor);
    }

    /** The number of threads a wall sample taken at {@code nanos} stands for (1 when unknown). */
    double factorAt(long nanos) {
        int i = Arrays.binarySearch(from, nanos);
        if (i < 0) {
            i = -i - 2; // the last epoch ending before nanos
        }
        return i < 0 ? 1.0 : factor[i];
    }
}
