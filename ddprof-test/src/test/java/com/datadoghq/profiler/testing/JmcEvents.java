package com.datadoghq.profiler.testing;

import java.io.File;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.openjdk.jmc.common.IMCFrame;
import org.openjdk.jmc.common.IMCStackTrace;
import org.openjdk.jmc.common.IMCThread;
import org.openjdk.jmc.common.item.IAccessorKey;
import org.openjdk.jmc.common.item.IItem;
import org.openjdk.jmc.common.item.IItemCollection;
import org.openjdk.jmc.common.item.IItemIterable;
import org.openjdk.jmc.common.item.IMemberAccessor;
import org.openjdk.jmc.common.item.IType;
import org.openjdk.jmc.common.unit.IQuantity;
import org.openjdk.jmc.common.unit.UnitLookup;
import org.openjdk.jmc.flightrecorder.JfrLoaderToolkit;

/**
 * The events of one type, field by field, as JDK Mission Control's metadata-driven parser reads
 * them (as the Datadog backend does: by field name, whatever their order).
 */
public final class JmcEvents {
    /** One event: its fields by name, the thread's name and the stack as {@code Class.method}, leaf first. */
    public static final class Event {
        public final Map<String, Object> fields = new HashMap<>();
        public String thread;
        public List<String> stack = Collections.emptyList();

        public long getLong(String name) {
            return ((Number) fields.get(name)).longValue();
        }

        public String getString(String name) {
            Object v = fields.get(name);
            return v == null ? null : v.toString();
        }

        @Override
        public String toString() {
            return thread + " " + fields + " " + stack;
        }
    }

    private JmcEvents() {}

    /** Numbers in their base unit (nanoseconds for times and spans, bytes, plain counts). */
    public static List<Event> read(File file, String typeId) throws Exception {
        IItemCollection events = JfrLoaderToolkit.loadEvents(file);
        List<Event> out = new ArrayList<>();
        for (IItemIterable items : events) {
            IType<IItem> type = items.getType();
            if (!type.getIdentifier().equals(typeId)) {
                continue;
            }
            Map<String, IMemberAccessor<?, IItem>> accessors = new HashMap<>();
            for (IAccessorKey<?> key : type.getAccessorKeys().keySet()) {
                accessors.put(key.getIdentifier(), type.getAccessor(key));
            }
            for (IItem item : items) {
                Event e = new Event();
                for (Map.Entry<String, IMemberAccessor<?, IItem>> a : accessors.entrySet()) {
                    Object v = a.getValue().getMember(item);
                    if (v instanceof IQuantity) {
                        IQuantity q = (IQuantity) v;
                        if (q.getUnit().getContentType() == UnitLookup.TIMESPAN) {
                            v = q.clampedLongValueIn(UnitLookup.NANOSECOND);
                        } else if (q.getUnit().getContentType() == UnitLookup.TIMESTAMP) {
                            v = q.clampedLongValueIn(UnitLookup.EPOCH_NS);
                        } else {
                            v = q.doubleValue();
                        }
                    } else if (v instanceof IMCThread) {
                        e.thread = ((IMCThread) v).getThreadName();
                    } else if (v instanceof IMCStackTrace) {
                        List<String> frames = new ArrayList<>();
                        for (IMCFrame f : ((IMCStackTrace) v).getFrames()) {
                            frames.add(f.getMethod() == null ? "?"
                                    : f.getMethod().getType().getFullName() + "." + f.getMethod().getMethodName());
                        }
                        e.stack = frames;
                    }
                    e.fields.put(a.getKey(), v);
                }
                out.add(e);
            }
        }
        return out;
    }
}
