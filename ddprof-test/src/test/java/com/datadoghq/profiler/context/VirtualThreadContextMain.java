package com.datadoghq.profiler.context;

import java.lang.reflect.Method;
import java.util.concurrent.atomic.AtomicReference;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.internal.Diagnostics;

/**
 * On a JDK with virtual threads (21+): {@code getInstance()} from a virtual thread before the
 * library is loaded, then from the main thread, then context writes from a virtual thread.
 * Prints one {@code key=value} line per observation for {@link VirtualThreadContextTest}.
 */
public final class VirtualThreadContextMain {
    public static void main(String[] args) throws Exception {
        System.out.println("first=" + onVirtualThread(() -> {
            try {
                JavaProfiler.getInstance();
                return "loaded";
            } catch (java.io.IOException e) {
                return "IOException: " + e.getMessage();
            }
        }));
        JavaProfiler p = JavaProfiler.getInstance();
        System.out.println("main=" + Diagnostics.contextWriterKind());
        Method spanHook = JavaProfiler.class.getDeclaredMethod("testGetSpanId");
        spanHook.setAccessible(true);
        System.out.println("virtual=" + onVirtualThread(() -> {
            try {
                String kind = Diagnostics.contextWriterKind();
                p.setTraceContext(5, 77, 0, 77, 0, "v", -1, null);
                long span = (long) spanHook.invoke(p);
                p.clearTraceContext();
                long cleared = (long) spanHook.invoke(p);
                return kind + " span=" + span + " cleared=" + cleared;
            } catch (ReflectiveOperationException e) {
                return e.toString();
            }
        }));
    }

    interface Body {
        String run();
    }

    private static String onVirtualThread(Body body) throws Exception {
        AtomicReference<String> out = new AtomicReference<>();
        Method start = Thread.class.getMethod("startVirtualThread", Runnable.class);
        Thread t = (Thread) start.invoke(null, (Runnable) () -> out.set(body.run()));
        t.join();
        return out.get();
    }
}
