package com.datadoghq.profiler.cpu;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.FileInputStream;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import java.util.zip.Deflater;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.CpuBudget;
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
 * CPU samples say what the thread was doing, as upstream's do: {@code mode} JAVA in Java code,
 * NATIVE in a JNI method (zlib), SYSCALL when the signal interrupted a system call, and never
 * UNKNOWN on HotSpot. {@code state} is RUNNABLE in every CPU sample, the system call included, as
 * upstream writes it: readers (upstream's ContextCpuTest, backends) parse it with
 * {@code Thread.State.valueOf}.
 */
@ExtendWith(ProfilerExtension.class)
class ModeAndStateTest {
    private static final long CPU_MILLIS = 1200;

    @TempDir
    Path dir;

    private final JavaProfiler profiler;

    ModeAndStateTest(JavaProfiler profiler) {
        this.profiler = profiler;
    }

    @Test
    void samplesCarryTheModeAndStateOfWhatTheThreadWasDoing() throws Exception {
        Path file = dir.resolve("modes.jfr");
        TestEnv.start(profiler, "start,cpu=1ms,file=" + file);
        Thread java = new Thread(() -> CpuBurner.burn(CPU_MILLIS), "mode-java");
        Thread zlib = new Thread(ModeAndStateTest::deflate, "mode-native");
        Thread sys = new Thread(ModeAndStateTest::readDevZero, "mode-syscall");
        try {
            for (Thread t : new Thread[] {java, zlib, sys}) {
                t.start();
            }
            for (Thread t : new Thread[] {java, zlib, sys}) {
                t.join();
            }
        } finally {
            profiler.stop();
        }
        List<RecordedEvent> all = JfrReader.executionSamples(file);

        List<RecordedEvent> inJava = leafIn(JfrReader.onThread(all, "mode-java"),
                f -> JfrReader.isMethod(f, CpuBurner.class, "chainC"));
        assertShare(inJava, "JAVA", "RUNNABLE", 0.9, "mode-java in chainC");

        List<RecordedEvent> inZlib = leafIn(JfrReader.onThread(all, "mode-native"),
                f -> f.getMethod() != null && f.getMethod().getType() != null
                        && f.getMethod().getType().getName().equals(Deflater.class.getName())
                        && f.getType().equals("Native"));
        assertShare(inZlib, "NATIVE", "RUNNABLE", 0.8, "mode-native in a native Deflater method");

        List<RecordedEvent> syscalls = JfrReader.onThread(all, "mode-syscall");
        assertShare(syscalls, "SYSCALL", "RUNNABLE", 0.1, "mode-syscall reading /dev/zero byte by byte");

        for (RecordedEvent e : all) {
            String state = e.getString("state");
            try {
                Thread.State.valueOf(state);
            } catch (IllegalArgumentException | NullPointerException ex) {
                throw new AssertionError("CPU sample state " + state + " is not a Thread.State: "
                        + JfrReader.describe(e), ex);
            }
        }

        List<String> unknown = all.stream().filter(e -> "UNKNOWN".equals(e.getString("mode")))
                .map(JfrReader::describe).limit(5).collect(Collectors.toList());
        assertTrue(unknown.isEmpty(), "samples with mode UNKNOWN on HotSpot: " + unknown);
    }

    private static List<RecordedEvent> leafIn(List<RecordedEvent> samples, Predicate<RecordedFrame> leaf) {
        return samples.stream().filter(e -> {
            List<RecordedFrame> frames = JfrReader.frames(e);
            // The leaf Java frame: native frames of C code, if any, come before it.
            return frames.stream().filter(f -> f.getMethod() != null && f.getMethod().getType() != null
                    && !f.getMethod().getType().getName().isEmpty()).findFirst().filter(leaf).isPresent();
        }).collect(Collectors.toList());
    }

    private static void assertShare(List<RecordedEvent> samples, String mode, String state, double share,
            String what) {
        assertTrue(samples.size() >= 20, what + ": only " + samples.size() + " samples");
        Map<String, Integer> seen = new TreeMap<>();
        long matching = 0;
        for (RecordedEvent e : samples) {
            String m = e.getString("mode");
            String s = e.getString("state");
            seen.merge(m + "/" + s, 1, Integer::sum);
            if (mode.equals(m) && state.equals(s)) {
                matching++;
            }
        }
        assertTrue(matching >= share * samples.size(), what + ": " + matching + " of " + samples.size()
                + " samples are " + mode + "/" + state + " (at least " + Math.round(share * 100) + "% expected); seen "
                + seen);
    }

    private static void deflate() {
        byte[] input = new byte[64 << 10];
        for (int i = 0; i < input.length; i++) {
            input[i] = (byte) ("the quick brown fox ".charAt(i % 20) + (i / 4096));
        }
        byte[] output = new byte[input.length * 2];
        CpuBudget budget = CpuBudget.of(CPU_MILLIS);
        Deflater d = new Deflater(Deflater.BEST_COMPRESSION);
        while (budget.left()) {
            d.reset();
            d.setInput(input);
            d.finish();
            while (!d.finished()) {
                d.deflate(output);
            }
        }
        d.end();
    }

    private static void readDevZero() {
        CpuBudget budget = CpuBudget.of(CPU_MILLIS);
        try (FileInputStream in = new FileInputStream("/dev/zero")) {
            long sum = 0;
            while (budget.left()) {
                for (int i = 0; i < 1000; i++) {
                    sum += in.read();
                }
            }
            if (sum != 0) {
                throw new AssertionError("/dev/zero read non-zero");
            }
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }
}
