package com.datadoghq.profiler.context;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.TimeUnit;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.internal.Diagnostics;

/**
 * A carrier that writes its own context in place around a virtual thread's JNI write, as a
 * tracer's instrumentation of the scheduler's tasks does (JDK 21+, run with a one-thread virtual
 * thread scheduler and {@code java.lang} opened). On the scheduler's only carrier: a task activates
 * span 11 under root 10, starts a virtual thread that activates span 21 under root 20 (JNI writer,
 * into this carrier's record) and then queues a second task, which the carrier runs once the
 * virtual thread has left it: that task activates span 11 under root 10 again. Prints {@code key=value} lines for
 * {@link ContextForeignWriteTest}.
 */
public final class CarrierContextMain {
    public static void main(String[] args) throws Exception {
        JavaProfiler p = JavaProfiler.getInstance();
        Method spanHook = JavaProfiler.class.getDeclaredMethod("testGetSpanId");
        spanHook.setAccessible(true);
        Method rootHook = JavaProfiler.class.getDeclaredMethod("testGetRootSpanId");
        rootHook.setAccessible(true);
        Field f = Class.forName("java.lang.VirtualThread").getDeclaredField("DEFAULT_SCHEDULER");
        f.setAccessible(true);
        ForkJoinPool scheduler = (ForkJoinPool) f.get(null);
        Method startVirtual = Thread.class.getMethod("startVirtualThread", Runnable.class);
        CompletableFuture<String> out = new CompletableFuture<>();
        CompletableFuture<String> virtual = new CompletableFuture<>();
        scheduler.execute(() -> {
            try {
                Thread carrier = Thread.currentThread();
                String kind = Diagnostics.contextWriterKind();
                // Runs on the carrier once the virtual thread has left it (the only carrier).
                Runnable again = () -> {
                    try {
                        String sameCarrier = String.valueOf(Thread.currentThread() == carrier);
                        long seenSpan = (long) spanHook.invoke(p);
                        p.setTraceContext(10, 11, 0, 12, 0, "carrier", -1, null);
                        out.complete("carrier=" + kind + "\nsameCarrier=" + sameCarrier
                                + "\nafterVirtual=" + seenSpan + "\nrestored=" + spanHook.invoke(p) + "/"
                                + rootHook.invoke(p));
                    } catch (Throwable e) {
                        out.complete("error=" + e);
                    }
                };
                p.setTraceContext(10, 11, 0, 12, 0, "carrier", -1, null);
                startVirtual.invoke(null, (Runnable) () -> {
                    p.setTraceContext(20, 21, 0, 22, 0, "virtual", -1, null);
                    virtual.complete(Diagnostics.contextWriterKind() + " " + Thread.currentThread());
                    scheduler.execute(again);
                });
            } catch (Throwable e) {
                out.complete("error=" + e);
            }
        });
        System.out.println(out.get(60, TimeUnit.SECONDS));
        System.out.println("virtual=" + virtual.get(60, TimeUnit.SECONDS));
    }
}
