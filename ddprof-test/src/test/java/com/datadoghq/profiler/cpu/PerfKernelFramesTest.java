package com.datadoghq.profiler.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.FileInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.CpuBudget;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.ProfilerExtension;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kernel frames of {@code event=cpu} samples: where the kernel permits kernel callchains (root or
 * CAP_PERFMON, or perf_event_paranoid at most 1) and shows kallsyms addresses, a thread that
 * spends its CPU in read(2) of /dev/zero gets samples whose first frames are typed Kernel and
 * named after the kernel's read path, followed by the Java frames of the read; {@code alluser}
 * keeps them out. Where the kernel does not permit them the profiler must say so ({@code status})
 * and the tests are skipped with the reason; where it does, a session without them is a failure.
 */
@ExtendWith(ProfilerExtension.class)
class PerfKernelFramesTest {
    private static final String KERNEL_ON = "Kernel Frames    : true";
    private static final String KERNEL_OFF = "Kernel Frames    : false";
    private static final String THREAD = "kernel-reader";

    @TempDir
    Path dir;

    private final JavaProfiler profiler;

    PerfKernelFramesTest(JavaProfiler profiler) {
        this.profiler = profiler;
    }

    /** Whether this process may collect kernel callchains and name them. */
    static boolean kernelPermitted() {
        return (PerfEventsTest.paranoid() <= 1 || isRoot()) && kallsymsShowsAddresses();
    }

    private static boolean isRoot() {
        try {
            for (String line : Files.readAllLines(Paths.get("/proc/self/status"), StandardCharsets.US_ASCII)) {
                if (line.startsWith("Uid:")) {
                    return line.split("\\s+")[2].equals("0"); // effective uid
                }
            }
        } catch (IOException e) {
            return false;
        }
        return false;
    }

    private static boolean kallsymsShowsAddresses() {
        try (java.io.BufferedReader r = Files.newBufferedReader(Paths.get("/proc/kallsyms"))) {
            String first = r.readLine();
            return first != null && Long.parseUnsignedLong(first.split(" ")[0], 16) != 0;
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    /** Reads /dev/zero for {@code cpuMillis} of this thread's CPU: most of it in the kernel. */
    private static void readZero(long cpuMillis) {
        byte[] buf = new byte[64 << 10]; // above the JDK's stack buffer, below malloc's mmap threshold
        CpuBudget budget = CpuBudget.of(cpuMillis);
        try (FileInputStream in = new FileInputStream("/dev/zero")) {
            while (budget.left()) {
                if (in.read(buf) <= 0) {
                    throw new IllegalStateException("/dev/zero gave nothing");
                }
            }
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private List<RecordedEvent> profileReads(String options, Path file) throws Exception {
        TestEnv.start(profiler, "start,event=cpu,interval=1ms" + options + ",file=" + file);
        String status = profiler.getStatus();
        try {
            if (!status.contains("CPU Engine       : PerfEvents")) {
                assumeTrue(PerfEventsTest.paranoid() <= 2, "perf_events not permitted here; skipped:\n" + status);
                fail("event=cpu did not run on perf_events:\n" + status);
            }
            Thread reader = new Thread(() -> readZero(1500), THREAD);
            reader.start();
            reader.join();
        } finally {
            TestEnv.stopQuietly(profiler);
        }
        List<RecordedEvent> mine = JfrReader.onThread(JfrReader.executionSamples(file), THREAD);
        assertTrue(mine.size() >= 300, "too few samples of " + THREAD + ": " + mine.size() + "\n" + status);
        lastStatus = status;
        return mine;
    }

    private String lastStatus = "";

    @Test
    void samplesInReadCarryTheKernelsReadPathAboveTheJavaFrames() throws Exception {
        Path file = dir.resolve("kernel.jfr");
        List<RecordedEvent> samples = profileReads("", file);
        boolean permitted = kernelPermitted();
        if (!lastStatus.contains(KERNEL_ON)) {
            assumeTrue(permitted, "kernel callchains not permitted here (perf_event_paranoid="
                    + PerfEventsTest.paranoid() + ", not root, or kallsyms hidden); skipped:\n" + lastStatus);
            fail("kernel frames are permitted here, yet the session has none:\n" + lastStatus);
        }
        int withKernel = 0;
        int readPath = 0;
        for (RecordedEvent e : samples) {
            List<RecordedFrame> frames = JfrReader.frames(e);
            int k = 0;
            while (k < frames.size() && "Kernel".equals(frames.get(k).getType())) {
                k++;
            }
            if (k == 0) {
                continue;
            }
            withKernel++;
            for (int i = k; i < frames.size(); i++) {
                assertTrue(!"Kernel".equals(frames.get(i).getType()),
                        "a Kernel frame below a user frame: " + JfrReader.describe(e));
            }
            boolean kernelRead = false;
            for (int i = 0; i < k; i++) {
                String name = frames.get(i).getMethod().getName();
                assertEquals("", frames.get(i).getMethod().getType().getName(), "kernel frames have no class");
                assertEquals("(Lk;)L;", frames.get(i).getMethod().getDescriptor(), "the contract's kernel descriptor");
                kernelRead |= name.contains("read");
            }
            boolean javaRead = false;
            for (int i = k; i < frames.size(); i++) {
                RecordedFrame f = frames.get(i);
                javaRead |= f.getMethod().getType().getName().equals(FileInputStream.class.getName());
            }
            if (kernelRead && javaRead) {
                readPath++;
            }
        }
        // Reading zeros is mostly the kernel clearing the buffer: most samples land there.
        assertTrue(withKernel * 4 >= samples.size(), withKernel + " of " + samples.size()
                + " samples of a thread reading /dev/zero have kernel frames");
        assertTrue(readPath * 2 >= withKernel, "only " + readPath + " of " + withKernel
                + " samples with kernel frames show the kernel's read path under FileInputStream; e.g. "
                + JfrReader.describe(samples.get(0)));
    }

    @Test
    void upstreamsCpuIntervalHasNone() throws Exception {
        Path file = dir.resolve("cpu.jfr");
        TestEnv.start(profiler, "start,cpu=1ms,file=" + file);
        String status = profiler.getStatus();
        try {
            Thread reader = new Thread(() -> readZero(300), THREAD);
            reader.start();
            reader.join();
        } finally {
            TestEnv.stopQuietly(profiler);
        }
        assertTrue(!status.contains(KERNEL_ON), status);
        for (RecordedEvent e : JfrReader.executionSamples(file)) {
            for (RecordedFrame f : JfrReader.frames(e)) {
                assertTrue(!"Kernel".equals(f.getType()), "cpu=1ms, yet a Kernel frame: " + JfrReader.describe(e));
            }
        }
    }

    @Test
    void allUserKeepsKernelFramesOut() throws Exception {
        Path file = dir.resolve("alluser.jfr");
        List<RecordedEvent> samples = profileReads(",alluser", file);
        assertTrue(lastStatus.contains(KERNEL_OFF), lastStatus);
        for (RecordedEvent e : samples) {
            for (RecordedFrame f : JfrReader.frames(e)) {
                assertTrue(!"Kernel".equals(f.getType()), "alluser, yet a Kernel frame: " + JfrReader.describe(e));
            }
        }
    }
}
