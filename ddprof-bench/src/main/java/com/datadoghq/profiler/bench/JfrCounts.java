package com.datadoghq.profiler.bench;

import java.nio.file.Path;
import java.time.Instant;

import org.openjdk.jmc.common.item.IItem;
import org.openjdk.jmc.common.item.IItemCollection;
import org.openjdk.jmc.common.item.IItemIterable;
import org.openjdk.jmc.common.item.IMemberAccessor;
import org.openjdk.jmc.common.unit.IQuantity;
import org.openjdk.jmc.common.unit.UnitLookup;
import org.openjdk.jmc.flightrecorder.JfrAttributes;
import org.openjdk.jmc.flightrecorder.JfrLoaderToolkit;

/**
 * Event counts of a recording, read with JMC's parser, which reads ours and upstream's alike
 * (jdk.jfr.consumer rejects upstream 1.22.0's recordings: a constant pool it writes empty). A class
 * of its own so that only the children that count load JMC.
 */
final class JfrCounts {
    private JfrCounts() {
    }

    /** The events of {@code type} in {@code jfr} that start in [from, to]. */
    static long inWindow(Path jfr, String type, Instant from, Instant to) throws Exception {
        long fromNs = from.getEpochSecond() * 1_000_000_000L + from.getNano();
        long toNs = to.getEpochSecond() * 1_000_000_000L + to.getNano();
        IItemCollection events = JfrLoaderToolkit.loadEvents(jfr.toFile());
        long n = 0;
        for (IItemIterable items : events) {
            if (!items.getType().getIdentifier().equals(type)) {
                continue;
            }
            IMemberAccessor<IQuantity, IItem> start = JfrAttributes.START_TIME.getAccessor(items.getType());
            for (IItem item : items) {
                long t = start.getMember(item).clampedLongValueIn(UnitLookup.EPOCH_NS);
                if (t >= fromNs && t <= toNs) {
                    n++;
                }
            }
        }
        return n;
    }
}
