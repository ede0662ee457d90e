package com.datadoghq.profiler.wall;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.reflect.Method;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.CpuBurner;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.ProfilerExtension;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * JDK 21+: a wall sample of a carrier thread running a virtual thread shows the virtual thread's
 * frames and, below them, the carrier's (the continuation entry, the ForkJoinPool worker).
 * Virtual threads are made through reflection: the suite compiles for Java 11.
 */
@ExtendWith(ProfilerExtension.class)
class VirtualThreadWallTest {
    @TempDir
    Path dir;

    static Thread startVirtual(String name, Runnable body) throws Exception {
        Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
        Class<?> builderType = Class.forName("java.lang.Thread$Builder");
        builder = builderType.getMethod("name", String.class).invoke(builder, name);
        Method start = builderType.getMethod("start", Runnable.class);
        return (Thread) start.invoke(builder, body);
    }

    /** Runs on the CPU for 800 ms of wall time (a thread CPU clock is not defined for virtual threads). */
    static void spinInVirtualThread() {
        long end = System.nanoTime() + 800_000_000L;
        double acc = 0;
        while (System.nanoTime() < end) {
            acc += CpuBurner.chainA(acc);
        }
        CpuBurner.sink = acc;
    }

    @Test
    void aMountedVirtualThreadShowsItsFramesAndTheCarriers(JavaProfiler profiler) throws Exception {
        assumeTrue(TestEnv.jdk() >= 21, "virtual threads need JDK 21");
        Path file = dir.resolve("virtual.jfr");
        TestEnv.start(profiler, "start,wall=1ms,filter=,file=" + file);
        Thread vt = startVirtual("wall-virtual", VirtualThreadWallTest::spinInVirtualThread);
        vt.join();
        profiler.stop();

        List<RecordedEvent> mine = WallClockTest.methodSamples(file).stream()
                .filter(e -> JfrReader.contains(e, VirtualThreadWallTest.class, "spinInVirtualThread"))
                .collect(Collectors.toList());
        assertTrue(mine.size() >= 10, mine.size() + " wall samples in the virtual thread");
        long withCarrier = mine.stream().filter(e -> {
            List<RecordedFrame> frames = JfrReader.frames(e);
            return frames.stream().anyMatch(f -> f.getMethod() != null && f.getMethod().getType() != null
                    && f.getMethod().getType().getName().equals("java.util.concurrent.ForkJoinWorkerThread")
                    && f.getMethod().getName().equals("run"));
        }).count();
        assertTrue(withCarrier >= 0.9 * mine.size(), withCarrier + " of " + mine.size()
                + " samples reach the carrier's ForkJoinWorkerThread.run:" + JfrReader.describe(mine, 3));
    }
}
