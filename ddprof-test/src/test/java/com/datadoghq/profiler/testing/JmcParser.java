package com.datadoghq.profiler.testing;

import java.io.File;
import java.util.HashMap;
import java.util.Map;

import org.openjdk.jmc.common.IMCFrame;
import org.openjdk.jmc.common.IMCStackTrace;
import org.openjdk.jmc.common.item.IItem;
import org.openjdk.jmc.common.item.IItemCollection;
import org.openjdk.jmc.common.item.IItemIterable;
import org.openjdk.jmc.common.item.IMemberAccessor;
import org.openjdk.jmc.flightrecorder.JfrAttributes;
import org.openjdk.jmc.flightrecorder.JfrLoaderToolkit;

/**
 * Reads a recording with JDK Mission Control's parser. Kept apart from the tests so that a JMC
 * build that needs a newer Java fails with {@link UnsupportedClassVersionError} at the call,
 * which the caller turns into a skipped assumption.
 */
public final class JmcParser {
    /** What JMC saw: events per type, and how many stacks of a type hold a given method name. */
    public static final class Summary {
        public final Map<String, Long> countsByType = new HashMap<>();
        public long stacksWithMethod;
    }

    private JmcParser() {}

    public static Summary read(File file, String stackEventType, String methodName) throws Exception {
        IItemCollection events = JfrLoaderToolkit.loadEvents(file);
        Summary s = new Summary();
        for (IItemIterable items : events) {
            String type = items.getType().getIdentifier();
            s.countsByType.merge(type, items.getItemCount(), Long::sum);
            if (!type.equals(stackEventType)) {
                continue;
            }
            IMemberAccessor<IMCStackTrace, IItem> stack = JfrAttributes.EVENT_STACKTRACE.getAccessor(items.getType());
            if (stack == null) {
                continue;
            }
            for (IItem item : items) {
                IMCStackTrace st = stack.getMember(item);
                if (st == null) {
                    continue;
                }
                for (IMCFrame f : st.getFrames()) {
                    if (f.getMethod() != null && methodName.equals(f.getMethod().getMethodName())) {
                        s.stacksWithMethod++;
                        break;
                    }
                }
            }
        }
        return s;
    }
}
