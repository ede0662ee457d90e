package com.datadoghq.profiler.lifecycle;

import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongConsumer;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.IsolatingLoader;

/**
 * A child JVM's main for {@link CheckedJniTest}, run with {@code -Xcheck:jni}. Args: the output
 * directory and the {@code fjmethodid} mode. Starts at {@code cpu=1ms}, runs
 * {@link ManyClassesSpin#accept} of {@value #CLASSES} copies of that class (each in its own
 * loader) for {@value #MILLIS} ms of CPU each, dumps {@code dump.jfr}, stops.
 */
public final class CheckedJniMain {
    static final int CLASSES = 400;
    static final int MILLIS = 8;

    private CheckedJniMain() {
    }

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        List<LongConsumer> copies = new ArrayList<>();
        for (int i = 0; i < CLASSES; i++) {
            copies.add(IsolatingLoader.newInstance(ManyClassesSpin.class, LongConsumer.class));
        }
        JavaProfiler profiler = JavaProfiler.getInstance();
        System.out.print(profiler.execute("start,cpu=1ms,fjmethodid=" + args[1] + ",file=" + dir.resolve("main.jfr")));
        for (LongConsumer c : copies) {
            c.accept(MILLIS);
        }
        profiler.dump(dir.resolve("dump.jfr"));
        profiler.stop();
        System.out.println("workload done");
    }
}
