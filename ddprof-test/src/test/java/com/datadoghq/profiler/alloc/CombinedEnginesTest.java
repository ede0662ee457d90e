package com.datadoghq.profiler.alloc;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.ProfilerExtension;
import com.datadoghq.profiler.testing.Spinner;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * CPU, wall clock and allocation sampling in one session, as tracers run them: one thread that
 * burns CPU, allocates and parks gets each kind of event, each on the right code, and the status
 * names all three engines.
 */
@ExtendWith(ProfilerExtension.class)
class CombinedEnginesTest {
    @TempDir
    Path dir;

    @Test
    void cpuWallAndAllocationsTogether(JavaProfiler profiler) throws Exception {
        Path file = dir.resolve("combined.jfr");
        String reply = TestEnv.start(profiler, "start,cpu=10ms,wall=5ms,filter=,memory=262144:a,file=" + file);
        assertTrue(reply.contains("Profiling started"), reply);
        String status = profiler.getStatus();
        assertTrue(status.contains("WallClock Engine : WallClock") && status.contains("Allocations      : JVMTI"), status);
        Thread worker = new Thread(() -> {
            Spinner.firstPeriod(400);
            Allocators.intsCaller(96L << 20);
            long end = System.nanoTime() + 400_000_000L;
            while (System.nanoTime() < end) {
                LockSupport.parkNanos(end - System.nanoTime());
            }
        }, "combined-worker");
        worker.start();
        worker.join();
        profiler.stop();

        List<RecordedEvent> cpu = JfrReader.onThread(JfrReader.executionSamples(file), "combined-worker");
        List<RecordedEvent> wall = JfrReader.onThread(JfrReader.events(file, "datadog.MethodSample"), "combined-worker");
        List<RecordedEvent> alloc = JfrReader.onThread(JfrReader.events(file, AllocationProfilingTest.OBJECT_SAMPLE),
                "combined-worker");
        assertTrue(cpu.stream().filter(e -> JfrReader.contains(e, Spinner.class, "firstPeriod")).count() >= 5,
                "CPU samples in the spin: " + JfrReader.describe(cpu, 5));
        assertTrue(alloc.stream().filter(e -> JfrReader.contains(e, Allocators.class, "allocInts")).count() >= 10,
                "allocation samples in allocInts: " + JfrReader.describe(alloc, 5));
        // Parked 400 ms at wall=5ms, one of few threads of a test JVM: ~80 ticks, a busy host may starve
        // the sampler of most of them.
        long parked = wall.stream().filter(e -> JfrReader.frames(e).stream().anyMatch(f -> f.getMethod() != null
                && f.getMethod().getName().equals("parkNanos"))).count();
        assertTrue(parked >= 3, "wall samples while parked: " + parked + JfrReader.describe(wall, 5));
    }
}
