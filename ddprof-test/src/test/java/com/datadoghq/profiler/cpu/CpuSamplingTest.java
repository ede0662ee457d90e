package com.datadoghq.profiler.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
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
 * CPU samples of a thread running a known call chain name that chain, leaf first, with the
 * thread's name, line numbers, bytecode indices, Java frame types and the RUNNABLE state.
 */
@ExtendWith(ProfilerExtension.class)
class CpuSamplingTest {
    private static final String WORKER = "cpu-worker";
    private static final long WORK_MILLIS = 2000;

    @TempDir
    Path dir;

    private final JavaProfiler profiler;
    private long samplesAtStart;
    private long samplesAtEnd;

    CpuSamplingTest(JavaProfiler profiler) {
        this.profiler = profiler;
    }

    @Test
    void ctimerSamplesShowTheCallChainLeafFirst() throws Exception {
        Path file = dir.resolve("cpu.jfr");
        String status = profileWorker("start,cpu=10ms,file=" + file);
        assertTrue(status.contains(TestEnv.RUNNING_LINE), "getStatus() while profiling:\n" + status);
        assertTrue(samplesAtEnd > samplesAtStart,
                "getSamples() should grow while profiling: at start " + samplesAtStart + ", at the end " + samplesAtEnd);

        List<RecordedEvent> samples = JfrReader.executionSamples(file);
        assertChainSampled(samples, WORKER, 20);
        assertTrue(samplesAtEnd >= JfrReader.onThread(samples, WORKER).size(),
                "getSamples() (" + samplesAtEnd + ") counts fewer samples than the recording holds for " + WORKER);

        List<RecordedEvent> config = JfrReader.events(file, JfrReader.PROFILER_CONFIG);
        assertFalse(config.isEmpty(), "no " + JfrReader.PROFILER_CONFIG + " event");
        String engine = config.get(config.size() - 1).getString("cpuEngine");
        assertTrue(Set.of("CTimer", "PerfEvents", "ITimer").contains(engine), "cpuEngine for cpu=10ms: " + engine);
    }

    @Test
    void itimerEngineSamplesAndReportsItself() throws Exception {
        Path file = dir.resolve("itimer.jfr");
        String status = profileWorker("start,event=itimer,interval=10ms,file=" + file);
        assertTrue(status.contains("ITimer"), "getStatus() should name the ITimer engine:\n" + status);

        List<RecordedEvent> samples = JfrReader.executionSamples(file);
        assertChainSampled(samples, WORKER, 20);

        List<RecordedEvent> config = JfrReader.events(file, JfrReader.PROFILER_CONFIG);
        assertFalse(config.isEmpty(), "no " + JfrReader.PROFILER_CONFIG + " event");
        assertEquals("ITimer", config.get(config.size() - 1).getString("cpuEngine"));
    }

    /**
     * Runs the chain on "cpu-worker" under {@code command}; returns getStatus() taken while running
     * and notes getSamples() right after the start and at the end of the work.
     */
    private String profileWorker(String command) throws Exception {
        TestEnv.start(profiler, command);
        samplesAtStart = JavaProfiler.getSamples();
        String status;
        CpuBurner burner = new CpuBurner(WORK_MILLIS);
        Thread worker = new Thread(burner, WORKER);
        try {
            worker.start();
            Thread.sleep(200);
            status = profiler.getStatus();
            worker.join(WORK_MILLIS * 10);
            samplesAtEnd = JavaProfiler.getSamples();
        } finally {
            burner.stop();
            worker.join();
            profiler.stop();
        }
        assertFalse(TestEnv.isRunning(profiler), "still running after stop():\n" + profiler.getStatus());
        return status;
    }

    /** Also used by {@link PerfEventsTest}: samples of {@code workerName} running {@link CpuBurner}. */
    static void assertChainSampled(List<RecordedEvent> samples, String workerName, int minSamples) {
        assertFalse(samples.isEmpty(), "no " + JfrReader.EXECUTION_SAMPLE + " events");
        List<RecordedEvent> worker = JfrReader.onThread(samples, workerName);
        Set<String> threads = samples.stream().map(JfrReader::threadName).collect(Collectors.toCollection(TreeSet::new));
        assertTrue(worker.size() >= minSamples,
                "expected >= " + minSamples + " samples on thread '" + workerName + "', got " + worker.size()
                        + " (of " + samples.size() + " in all, threads " + threads + ")");

        int inOrder = 0;
        int chainFrames = 0;
        List<String> unlocated = new ArrayList<>();
        for (RecordedEvent e : worker) {
            int c = JfrReader.indexOf(e, CpuBurner.class, "chainC");
            int b = JfrReader.indexOf(e, CpuBurner.class, "chainB");
            int a = JfrReader.indexOf(e, CpuBurner.class, "chainA");
            if (c >= 0 && c < b && b < a) {
                inOrder++;
                List<RecordedFrame> frames = JfrReader.frames(e);
                for (int i : new int[] {c, b, a}) {
                    RecordedFrame f = frames.get(i);
                    chainFrames++;
                    assertTrue(JfrReader.JAVA_FRAME_TYPES.contains(f.getType()),
                            "a Java frame type expected, got '" + f.getType() + "': frame " + i + " of " + JfrReader.describe(e));
                    // A sample at a method's very entry may carry no bci (AGCT reports -1 there),
                    // so single frames may lack a line; most must have one.
                    if (f.getLineNumber() <= 0 || f.getBytecodeIndex() < 0) {
                        unlocated.add("frame " + i + " of " + JfrReader.describe(e));
                    }
                }
                assertEquals("RUNNABLE", e.getString("state"), "state of a CPU sample");
                assertEquals(Thread.State.RUNNABLE, Thread.State.valueOf(e.getString("state")));
            }
        }
        assertTrue(unlocated.size() * 20 <= chainFrames,
                "frames of chainA/B/C need lineNumber > 0 and bytecodeIndex >= 0; " + unlocated.size() + " of "
                        + chainFrames + " lack them, e.g.\n  " + String.join("\n  ", unlocated.subList(0, Math.min(5, unlocated.size()))));
        assertTrue(inOrder * 2 >= worker.size(),
                "most samples of '" + workerName + "' should hold chainC < chainB < chainA (leaf first); " + inOrder
                        + " of " + worker.size() + " do. First samples:" + JfrReader.describe(worker, 10));
    }
}
