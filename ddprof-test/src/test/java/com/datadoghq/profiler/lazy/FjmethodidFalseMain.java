package com.datadoghq.profiler.lazy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Map;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.IsolatingLoader;

/**
 * A child JVM's main for {@code FjmethodidFalseTest}. Arg: the output directory. Three sessions,
 * one after the other, each running {@link FalseModeSpin} on its own thread while nothing else
 * runs Java code:
 * <ol>
 *   <li>{@code app}: {@code cstack=vm,fjmethodid=false}, the application loader's FalseModeSpin
 *   (thread {@code app-worker});</li>
 *   <li>{@code custom}: {@code cstack=vm,fjmethodid=false}, a copy of FalseModeSpin defined by an
 *   {@link IsolatingLoader} after the start (thread {@code custom-worker});</li>
 *   <li>{@code agct}: {@code cstack=dwarf,fjmethodid=false}, the application loader's
 *   FalseModeSpin again (thread {@code agct-worker}).</li>
 * </ol>
 * Each session writes {@code <name>.jfr}, its start reply to {@code <name>.reply}, and prints
 * its counters (read before the stop) as {@code counter <name> <counter>=<value>}.
 */
public final class FjmethodidFalseMain {
    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        JavaProfiler profiler = JavaProfiler.getInstance();

        session(profiler, dir, "app", "cstack=vm,fjmethodid=false", new FalseModeSpin(), "app-worker");
        // Defined after the start: its class is prepared in the false mode.
        session(profiler, dir, "custom", "cstack=vm,fjmethodid=false", null, "custom-worker");
        session(profiler, dir, "agct", "cstack=dwarf,fjmethodid=false", new FalseModeSpin(), "agct-worker");
        System.out.println("workload done");
    }

    private static void session(JavaProfiler profiler, Path dir, String name, String options, Runnable work,
                                String thread) throws Exception {
        String reply = profiler.execute("start,cpu=1ms," + options + ",file=" + dir.resolve(name + ".jfr"));
        Files.write(dir.resolve(name + ".reply"), reply.getBytes(StandardCharsets.UTF_8));
        Runnable r = work != null ? work : IsolatingLoader.newInstance(FalseModeSpin.class, Runnable.class);
        System.out.println(name + " runs " + r.getClass().getName() + " of " + r.getClass().getClassLoader());
        Thread t = new Thread(r, thread);
        t.start();
        t.join();
        for (Map.Entry<String, Long> e : profiler.getDebugCounters().entrySet()) {
            System.out.println("counter " + name + " " + e.getKey() + "=" + e.getValue());
        }
        profiler.stop();
    }
}
