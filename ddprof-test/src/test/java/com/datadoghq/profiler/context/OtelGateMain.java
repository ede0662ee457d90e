package com.datadoghq.profiler.context;

import java.util.Arrays;
import java.util.TreeMap;

import com.datadoghq.profiler.ContextSetter;
import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.OTelContext;

/**
 * Writes a context with both APIs on the main thread, prints the record as an outside reader
 * finds it, then (with argument {@code publish}) publishes the OTel process context and changes
 * only the span, and prints it again. {@link OtelThreadRecordGateTest} runs it.
 */
public final class OtelGateMain {
    public static void main(String[] args) throws Exception {
        JavaProfiler p = JavaProfiler.getInstance();
        ContextSetter setter = new ContextSetter(p, Arrays.asList("op", "res"));
        int getA = setter.encode("GET /a");
        p.setTraceContext(0x77, 8, 0, 9, 1, "res-1", -1, null);
        print("current", setter);
        p.setContext(5, 0x1234);
        p.setContextValue(0, getA);
        print("legacy", setter);
        if (args.length > 0 && args[0].equals("publish")) {
            OTelContext.getInstance().initializeAllContext("e", "h", "i", "s", "v", "t", new String[] {"op", "res"});
        }
        p.setContext(6, 0x1234); // the span alone changes
        print("after", setter);
        System.out.println("getA=" + getA);
    }

    private static void print(String label, ContextSetter setter) {
        OtelRecordView r = OtelRecordView.ofCurrentThread();
        System.out.println(label + " valid=" + r.valid + " span=" + r.spanId + " attrs=" + new TreeMap<>(r.attrs)
                + " tags=" + Arrays.toString(setter.snapshotTags()));
    }
}
