package com.datadoghq.profiler.wall;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.ProfilerExtension;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Start, dump and stop while 200 threads keep starting, registering, parking briefly and exiting:
 * the sampler signals threads that may be gone or not yet registered, and slots of exited threads
 * are reused. Every recording must stay readable, the JVM alive, and the churning threads sampled.
 */
@ExtendWith(ProfilerExtension.class)
class WallChurnTest {
    private static final int CHURNERS = 200;

    @TempDir
    Path dir;

    private final JavaProfiler profiler;

    WallChurnTest(JavaProfiler profiler) {
        this.profiler = profiler;
    }

    private static List<Thread> churn(JavaProfiler profiler, AtomicBoolean stop, AtomicLong started, AtomicLong failures) {
        List<Thread> loops = new ArrayList<>();
        for (int i = 0; i < CHURNERS; i++) {
            final int id = i;
            Thread loop = new Thread(() -> {
                int round = 0;
                while (!stop.get()) {
                    Thread t = new Thread(() -> {
                        profiler.addThread();
                        WallWork.park(2 + id % 5);
                        if (id % 2 == 0) {
                            profiler.removeThread();
                        }
                    }, "wall-churn-" + id + "-" + round++);
                    t.start();
                    started.incrementAndGet();
                    try {
                        t.join();
                    } catch (InterruptedException e) {
                        failures.incrementAndGet();
                        return;
                    }
                }
            }, "wall-churn-loop-" + id);
            loop.setDaemon(true);
            loop.start();
            loops.add(loop);
        }
        return loops;
    }

    private void cycles(String options) throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong started = new AtomicLong();
        AtomicLong failures = new AtomicLong();
        List<Thread> loops = churn(profiler, stop, started, failures);
        long churnSamples = 0;
        try {
            for (int cycle = 0; cycle < 3; cycle++) {
                Path file = dir.resolve("churn-" + cycle + ".jfr");
                TestEnv.start(profiler, "start," + options + ",file=" + file);
                List<Path> files = new ArrayList<>();
                for (int d = 0; d < 3; d++) {
                    Thread.sleep(150);
                    Path dump = dir.resolve("churn-" + cycle + "-dump-" + d + ".jfr");
                    profiler.dump(dump);
                    files.add(dump);
                }
                Thread.sleep(150);
                profiler.stop();
                files.add(file);
                for (Path f : files) {
                    List<RecordedEvent> samples = JfrReader.events(f, WallClockTest.METHOD_SAMPLE);
                    churnSamples += samples.stream().filter(e -> {
                        String n = JfrReader.threadName(e);
                        return n != null && n.startsWith("wall-churn-") && !n.startsWith("wall-churn-loop");
                    }).count();
                }
            }
        } finally {
            stop.set(true);
            for (Thread t : loops) {
                t.join(10_000);
            }
        }
        assertEquals(0, failures.get());
        assertTrue(started.get() > CHURNERS, started.get() + " threads started");
        assertTrue(churnSamples >= 20, churnSamples + " samples of churning threads (" + started.get() + " started)");
    }

    @Test
    void registeredThreadsChurningThroughStartDumpStop() throws Exception {
        cycles("wall=1ms,filter=0");
    }

    @Test
    void everyThreadChurningWithCpuAndCollapsing() throws Exception {
        cycles("cpu=1ms,wall=~1ms,filter=");
    }
}
