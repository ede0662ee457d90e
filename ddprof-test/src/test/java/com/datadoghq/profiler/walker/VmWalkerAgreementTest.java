package com.datadoghq.profiler.walker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.stream.Collectors;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.ProfilerExtension;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedMethod;
import jdk.jfr.consumer.RecordedStackTrace;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The VMStructs stack walker ({@code cstack=vm}) names the same methods, in the same order, as
 * AsyncGetCallTrace on the same signals ({@code walkcompare}), for a workload with deep
 * recursion, a megamorphic call site and inlined helpers; and its frames carry line numbers
 * and bytecode indices.
 */
@ExtendWith(ProfilerExtension.class)
class VmWalkerAgreementTest {
    private static final String WORKER = "vm-walker-worker-";
    private static final int THREADS = 2;
    /** The workload runs this long at least, and longer (up to MAX_MILLIS) until enough samples were compared. */
    private static final long WORK_MILLIS = 4000;
    private static final long MAX_MILLIS = 15000;
    private static final double MIN_AGREEMENT = 0.97;
    private static final long MIN_COMPARED = 200;

    @TempDir
    Path dir;

    private final JavaProfiler profiler;

    VmWalkerAgreementTest(JavaProfiler profiler) {
        this.profiler = profiler;
    }

    @Test
    void vmWalkerAgreesWithAsyncGetCallTrace() throws Exception {
        Path file = dir.resolve("walkcompare.jfr");
        Map<String, Long> counters;
        List<MixedJavaWorkload> burners = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        TestEnv.start(profiler, "start,cpu=1ms,cstack=vm,walkcompare,file=" + file);
        try {
            long start = System.nanoTime();
            for (int i = 0; i < THREADS; i++) {
                MixedJavaWorkload w = new MixedJavaWorkload();
                burners.add(w);
                Thread t = new Thread(w, WORKER + i);
                threads.add(t);
                t.start();
            }
            // CPU timers fire at most once per kernel tick of CPU time (HZ): a busy machine gives
            // fewer samples, so run on until enough were compared.
            while (true) {
                Thread.sleep(250);
                long elapsed = (System.nanoTime() - start) / 1_000_000;
                Map<String, Long> now = profiler.getDebugCounters();
                long compared = now.getOrDefault("walk_compare_samples", 0L) - now.getOrDefault("walk_compare_agct_failed", 0L);
                if (elapsed >= MAX_MILLIS || (elapsed >= WORK_MILLIS && compared >= 3 * MIN_COMPARED)) {
                    break;
                }
            }
            counters = new TreeMap<>(profiler.getDebugCounters());
        } finally {
            burners.forEach(MixedJavaWorkload::stop);
            for (Thread t : threads) {
                t.join();
            }
            TestEnv.stopQuietly(profiler);
        }
        String shown = "counters:\n  " + walkCounters(counters);

        List<RecordedEvent> events = JfrReader.readAll(file);
        Long activeRecording = JfrReader.eventTypeIds(file).get("jdk.ActiveRecording");
        assertNotNull(activeRecording, "jdk.ActiveRecording is not declared in the metadata");
        Optional<RecordedEvent> walker = JfrReader.ofType(events, JfrReader.ACTIVE_SETTING).stream()
                .filter(e -> "stackwalker".equals(e.getString("name")) && e.getLong("id") == activeRecording)
                .findFirst();
        assertTrue(walker.isPresent(), "no stackwalker setting of jdk.ActiveRecording in the recording");
        assertEquals("vm", walker.get().getString("value"), "the walker that ran under cstack=vm");

        long samples = counter(counters, "walk_compare_samples");
        long agctFailed = counter(counters, "walk_compare_agct_failed");
        long sameMethods = counter(counters, "walk_compare_same_methods");
        long compared = samples - agctFailed;
        assertTrue(compared >= MIN_COMPARED,
                "expected >= " + MIN_COMPARED + " samples walked by both walkers, got " + compared + "; " + shown);
        double agreement = (double) sameMethods / compared;
        assertTrue(agreement >= MIN_AGREEMENT,
                String.format("walk_compare_same_methods / compared = %d / %d = %.4f < %.2f; %s",
                        sameMethods, compared, agreement, MIN_AGREEMENT, shown));
        System.out.printf("agreement %.4f (%d of %d compared); %s%n", agreement, sameMethods, compared, shown);

        // The recording's copy of the counters says the same as getDebugCounters() did.
        Map<String, Long> recorded = JfrReader.ofType(events, JfrReader.PROFILER_COUNTER).stream()
                .collect(Collectors.toMap(e -> e.getString("name"), e -> e.getLong("count"), (a, b) -> b));
        assertNotNull(recorded.get("walk_compare_samples"), "walk_compare_samples missing from the recording");
        assertTrue(recorded.get("walk_compare_samples") >= samples,
                "recorded walk_compare_samples " + recorded.get("walk_compare_samples") + " < " + samples + " read while running");

        assertFramesLocated(JfrReader.ofType(events, JfrReader.EXECUTION_SAMPLE), shown);
    }

    /** What one recorded stack says about the workload's frames. */
    private static final class StackFacts {
        int workloadFrames;
        int descends;
        final Map<String, Integer> types = new TreeMap<>();
        final Map<String, Integer> recursiveCallSites = new TreeMap<>();
        final List<String> unlocated = new ArrayList<>();
        String badType;
    }

    private static StackFacts facts(RecordedEvent e) {
        StackFacts s = new StackFacts();
        List<RecordedFrame> frames = JfrReader.frames(e);
        boolean calleeIsDescend = false;
        for (RecordedFrame f : frames) {
            RecordedMethod m = f.getMethod();
            // A vtable receiver frame names a workload class but is no Java frame (type Native, bci -21).
            boolean workload = m != null && m.getType() != null
                    && m.getType().getName().startsWith(MixedJavaWorkload.class.getName())
                    && !"<vtable_receiver>".equals(m.getName());
            boolean descend = workload && "descend".equals(m.getName())
                    && m.getType().getName().equals(MixedJavaWorkload.class.getName());
            if (workload) {
                s.workloadFrames++;
                String type = f.getType();
                s.types.merge(type, 1, Integer::sum);
                if (!JfrReader.JAVA_FRAME_TYPES.contains(type) && s.badType == null) {
                    s.badType = "frame of " + m.getName() + " has type '" + type + "': " + JfrReader.describe(e);
                }
                if (f.getLineNumber() <= 0 || f.getBytecodeIndex() < 0) {
                    s.unlocated.add(m.getName() + ":" + f.getLineNumber() + "@" + f.getBytecodeIndex() + "[" + type + "]");
                }
            }
            if (descend) {
                s.descends++;
                if (calleeIsDescend) {
                    s.recursiveCallSites.merge("line " + f.getLineNumber() + " bci " + f.getBytecodeIndex(), 1, Integer::sum);
                }
            }
            calleeIsDescend = descend;
        }
        return s;
    }

    /**
     * Most frames of the workload's methods carry a line number and a bytecode index, and the
     * descend frames below another descend frame all stand at the recursive call.
     */
    private static void assertFramesLocated(List<RecordedEvent> samples, String shown) {
        List<RecordedEvent> worker = samples.stream()
                .filter(e -> JfrReader.threadName(e) != null && JfrReader.threadName(e).startsWith(WORKER))
                .collect(Collectors.toList());
        assertTrue(worker.size() >= 100, "samples on " + WORKER + "*: " + worker.size() + " of " + samples.size() + "; " + shown);

        // Samples share stack traces (one constant-pool object each): look at each stack once.
        Map<RecordedStackTrace, StackFacts> byStack = new IdentityHashMap<>();
        int workloadFrames = 0;
        int deep = 0;
        Map<String, Integer> recursiveCallSites = new TreeMap<>();
        Map<String, Integer> types = new TreeMap<>();
        List<String> unlocated = new ArrayList<>();
        for (RecordedEvent e : worker) {
            RecordedStackTrace st = e.getStackTrace();
            StackFacts s = st == null ? facts(e) : byStack.computeIfAbsent(st, k -> facts(e));
            assertNull(s.badType, s.badType);
            workloadFrames += s.workloadFrames;
            s.types.forEach((k, v) -> types.merge(k, v, Integer::sum));
            s.recursiveCallSites.forEach((k, v) -> recursiveCallSites.merge(k, v, Integer::sum));
            if (unlocated.size() < 1000) {
                unlocated.addAll(s.unlocated);
            }
            if (s.descends >= MixedJavaWorkload.DEPTH) {
                deep++;
            }
        }
        assertTrue(workloadFrames > 0, "no frame of " + MixedJavaWorkload.class.getName() + " in" + JfrReader.describe(worker, 3));
        assertTrue(unlocated.size() * 20 <= workloadFrames,
                "workload frames need lineNumber > 0 and bytecodeIndex >= 0; " + unlocated.size() + " of " + workloadFrames
                        + " lack them, e.g. " + unlocated.subList(0, Math.min(10, unlocated.size())));
        // Nearly all time is spent below the full recursion, so most samples hold all of it.
        assertTrue(deep * 2 >= worker.size(),
                "samples holding >= " + MixedJavaWorkload.DEPTH + " descend frames: " + deep + " of " + worker.size()
                        + "; frame types " + types + "; first samples:" + JfrReader.describe(worker, 2));
        int callerFrames = recursiveCallSites.values().stream().mapToInt(Integer::intValue).sum();
        Map.Entry<String, Integer> top = recursiveCallSites.entrySet().stream()
                .max(Map.Entry.comparingByValue()).orElseThrow(() -> new AssertionError("no descend frame calling descend"));
        assertTrue(top.getValue() * 100L >= callerFrames * 99L,
                "descend frames that called descend should all name the recursive call site; got " + recursiveCallSites);
        assertFalse(top.getKey().endsWith(" bci 0") || top.getKey().startsWith("line 0 ") || top.getKey().startsWith("line -"),
                "the recursive call site is not at bci 0 nor without a line: " + top.getKey());
        System.out.println("workload frame types " + types + ", unlocated " + unlocated.size() + " of " + workloadFrames
                + ", full-depth samples " + deep + " of " + worker.size() + " (" + byStack.size() + " distinct stacks)"
                + ", recursive call sites " + recursiveCallSites);
    }

    private static long counter(Map<String, Long> counters, String name) {
        Long v = counters.get(name);
        assertNotNull(v, "no counter " + name + " among " + counters.keySet());
        return v;
    }

    private static String walkCounters(Map<String, Long> counters) {
        return counters.entrySet().stream()
                .filter(e -> e.getKey().startsWith("walk") || e.getKey().startsWith("agct_") || e.getKey().equals("samples"))
                .map(e -> e.getKey() + "=" + e.getValue())
                .collect(Collectors.joining("\n  "));
    }
}
