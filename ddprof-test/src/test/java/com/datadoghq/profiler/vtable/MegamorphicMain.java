package com.datadoghq.profiler.vtable;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

import com.datadoghq.profiler.testing.CpuBudget;

/**
 * A child JVM's main whose thread "vtable-worker" spends its CPU in two megamorphic call sites:
 * {@link #callArea} calls an abstract class's method on three subclasses (a vtable call, dispatched
 * by HotSpot's vtable stubs once the site has seen more than two receiver classes) and
 * {@link #callColour} an interface method on three other classes (an itable call). The two sites
 * see disjoint classes, so a receiver frame under one site naming a class of the other is wrong.
 * The callees are trivial, so a good share of the samples lands in the stubs themselves. Args:
 * milliseconds of the worker's CPU time, then optionally {@code inflate}: every receiver object's
 * monitor is inflated first and again every 100 ms by another thread (wait on it), so that the header
 * the profiler reads is an inflated lock's. Prints the CPU time the worker got.
 */
public final class MegamorphicMain {
    public static volatile long sink;

    public abstract static class Shape {
        abstract int area();
    }

    public static final class Circle extends Shape {
        @Override
        int area() {
            return 3;
        }
    }

    public static final class Square extends Shape {
        @Override
        int area() {
            return 4;
        }
    }

    public static final class Triangle extends Shape {
        @Override
        int area() {
            return 5;
        }
    }

    public interface Colour {
        int rgb();
    }

    public static final class Red implements Colour {
        @Override
        public int rgb() {
            return 0xff0000;
        }
    }

    public static final class Green implements Colour {
        @Override
        public int rgb() {
            return 0xff00;
        }
    }

    public static final class Blue implements Colour {
        @Override
        public int rgb() {
            return 0xff;
        }
    }

    /** The vtable call site: only ever sees Circle, Square and Triangle. */
    static int callArea(Shape s) {
        return s.area();
    }

    /** The itable call site: only ever sees Red, Green and Blue. */
    static int callColour(Colour c) {
        return c.rgb();
    }

    public static void main(String[] args) throws Exception {
        long millis = args.length > 0 ? Long.parseLong(args[0]) : 3000;
        inflate = args.length > 1 && "inflate".equals(args[1]);
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long[] cpuNanos = new long[1];
        Thread worker = new Thread(() -> {
            long start = mx.getCurrentThreadCpuTime();
            spin(millis);
            cpuNanos[0] = mx.getCurrentThreadCpuTime() - start;
        }, "vtable-worker");
        worker.start();
        worker.join();
        System.out.println("worker cpu ms: " + cpuNanos[0] / 1_000_000);
        System.out.println("workload done: megamorphic");
    }

    static boolean inflate;

    /** Keeps the objects' monitors inflated: a wait inflates, and the monitor is deflated only later. */
    static void inflateMonitors(Object[] objects) {
        for (Object o : objects) {
            synchronized (o) {
                try {
                    o.wait(0, 1);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    static void spin(long millis) {
        Shape[] shapes = new Shape[3 * 64];
        Colour[] colours = new Colour[3 * 64];
        for (int i = 0; i < shapes.length; i++) {
            // Interleaved, so that every stretch of the loop sees all three classes.
            shapes[i] = i % 3 == 0 ? new Circle() : i % 3 == 1 ? new Square() : new Triangle();
            colours[i] = i % 3 == 0 ? new Red() : i % 3 == 1 ? new Green() : new Blue();
        }
        Thread inflater = null;
        if (inflate) {
            Object[] all = new Object[shapes.length + colours.length];
            System.arraycopy(shapes, 0, all, 0, shapes.length);
            System.arraycopy(colours, 0, all, shapes.length, colours.length);
            inflateMonitors(all);
            inflater = new Thread(() -> {
                while (!Thread.currentThread().isInterrupted()) {
                    inflateMonitors(all);
                    try {
                        Thread.sleep(100);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }, "inflater");
            inflater.setDaemon(true);
            inflater.start();
        }
        CpuBudget budget = CpuBudget.of(millis);
        long total = 0;
        while (budget.left()) {
            for (int r = 0; r < 1000; r++) {
                for (int i = 0; i < shapes.length; i++) {
                    total += callArea(shapes[i]);
                    total += callColour(colours[i]);
                }
            }
        }
        sink = total;
        if (inflater != null) {
            inflater.interrupt();
        }
    }
}
