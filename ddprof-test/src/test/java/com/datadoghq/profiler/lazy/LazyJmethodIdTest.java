package com.datadoghq.profiler.lazy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Predicate;
import java.util.stream.Collectors;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.CpuBudget;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedMethod;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code fjmethodid=lazy} in a fresh JVM ({@link LazyMain}): frames of classes that had no
 * jmethodID when sampled (custom loader, hidden, lambda) are named right at dump time; frames of a
 * class unloaded before the dump are {@code <unloaded>} (as in every mode), never another class's;
 * calibration finds the
 * trace-ID offset; the lazy counters move.
 */
class LazyJmethodIdTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(90);

    @TempDir
    static Path dir;

    private static ChildJvm.Result result;
    private static Map<String, Long> counters;

    @BeforeAll
    static void runWorkload() throws Exception {
        result = new ChildJvm()
                .classpath(TestEnv.libJar())
                .jvmArgs("-Xmx256m")
                .main(LazyMain.class, dir.toString())
                .timeout(TIMEOUT)
                .run(dir);
        assertFalse(result.timedOut, "child JVM hung:\n" + result.describe());
        assertEquals(0, result.exitCode, "child JVM failed:\n" + result.describe());
        assertTrue(result.stdout.contains("workload done"), result.describe());
        counters = new HashMap<>();
        for (String line : result.stdout.split("\n")) {
            if (line.startsWith("counter ")) {
                String[] kv = line.substring(8).split("=", 2);
                counters.put(kv[0], Long.parseLong(kv[1].trim()));
            }
        }
    }

    private static long counter(String name) {
        Long v = counters.get(name);
        assertTrue(v != null, "no counter " + name + " in " + new TreeSet<>(counters.keySet()));
        return v;
    }

    @Test
    void lazyModeRunsWithACalibratedTraceIdOffset() {
        assertFalse(result.stdout.contains("WARNING"), "start warned:\n" + result.describe());
        assertTrue(counter("klass_trace_id_offset") > 0, "klass_trace_id_offset " + counters);
        assertEquals(0, counter("fjmethodid_lazy_fallback"), "lazy fell back:\n" + result.describe());
        assertTrue(counter("klass_registry_entries") > 100, "registry entries " + counters);
        assertEquals(0, counter("klass_registry_add_failed"), "registry add failures " + counters);
        assertEquals(0, counter("classes_preloaded"), "lazy preloads no class at start");
        assertTrue(counter("walkvm_frames_raw") > 0, "no raw frames were sampled: " + counters);
        assertTrue(counter("method_resolve_lazy_metadata") > 0,
                "no frame was named from metadata: " + counters);
        assertEquals(0, counter("method_resolve_lazy_jmethodids_created"), "lazy made jmethodIDs: " + counters);
    }

    @Test
    void framesOfCustomLoaderHiddenAndLambdaClassesAreNamed() throws Exception {
        List<RecordedEvent> samples = JfrReader.executionSamples(dir.resolve("names.jfr"));
        assertNamed(samples, "custom-worker", f -> f.getType().getName().equals(LazySpin.class.getName()),
                "spinLoop", "applyAsLong");
        assertNamed(samples, "hidden-worker", f -> f.getType().getName().startsWith(LazyHiddenSpin.class.getName()),
                "spinLoop", "applyAsLong");
        assertNamed(samples, "lambda-worker", f -> f.getType().getName().equals(LazyMain.class.getName()),
                "spinHere");
        // The lambda's own class frame sits above its body.
        List<RecordedEvent> lambda = JfrReader.onThread(samples, "lambda-worker");
        assertTrue(lambda.stream().anyMatch(e -> JfrReader.frames(e).stream().anyMatch(f -> f.getMethod() != null
                        && f.getMethod().getType().getName().contains("$$Lambda") && "run".equals(f.getMethod().getName()))),
                "no frame of the lambda class:" + JfrReader.describe(lambda, 5));
    }

    private static void assertNamed(List<RecordedEvent> all, String thread, Predicate<RecordedMethod> owner,
                                    String... methods) {
        List<RecordedEvent> samples = JfrReader.onThread(all, thread);
        // What follows are shares of these samples; a loaded host gives fewer (weightier) ones.
        assertTrue(samples.size() >= 10, thread + ": " + samples.size() + " samples\n" + result.describe());
        for (String m : methods) {
            long n = samples.stream()
                    .filter(e -> JfrReader.frames(e).stream()
                            .anyMatch(f -> f.getMethod() != null && m.equals(f.getMethod().getName())
                                    && owner.test(f.getMethod()) && (f.getLineNumber() > 0 || !f.isJavaFrame())))
                    .count();
            assertTrue(n >= samples.size() / 2, thread + ": only " + n + " of " + samples.size()
                    + " samples name " + m + " with a line:" + JfrReader.describe(samples, 8));
        }
        long unknown = samples.stream().filter(e -> JfrReader.frames(e).stream().anyMatch(JfrReader::isUnnamed))
                .count();
        assertTrue(unknown * 10 <= samples.size(), thread + ": " + unknown + " of " + samples.size()
                + " samples have unknown frames:" + JfrReader.describe(samples, 8));
    }


    @Test
    void framesOfAnUnloadedClassAreUnloadedNeverAnotherClasss() throws Exception {
        assertTrue(result.stdout.contains("unloaded=true"), "the class did not unload:\n" + result.describe());
        List<RecordedEvent> all = JfrReader.executionSamples(dir.resolve("unload.jfr"));
        List<RecordedEvent> samples = JfrReader.onThread(all, "unload-worker");
        // The checks below are shares of these samples; on a loaded host CPU timers fire less
        // often (their weights carry the rest), so the floor is low.
        assertTrue(samples.size() >= 10, "unload-worker: " + samples.size() + " samples\n" + result.describe());
        Set<String> foreign = new TreeSet<>();
        int unknownFrames = 0;
        int unloadedFrames = 0;
        for (RecordedEvent e : samples) {
            for (RecordedFrame f : JfrReader.frames(e)) {
                if (JfrReader.isUnnamed(f)) {
                    unknownFrames++;
                    if (f.getMethod() != null && "<unloaded>".equals(f.getMethod().getName())) {
                        unloadedFrames++;
                    }
                    continue;
                }
                String owner = f.getMethod().getType().getName();
                if (owner.isEmpty()) {
                    continue; // a C function the thread ran (native frames are named by symbol)
                }
                // What unload-worker ran besides the unloaded class: its Runnable in LazyMain, Thread
                // and its exit path (ThreadGroup), and the CPU-time budget the spin loop reads (CpuBudget).
                boolean expected = owner.equals(LazyMain.class.getName()) || owner.startsWith(LazyMain.class.getName() + "$$Lambda")
                        || owner.equals("java.lang.Thread") || owner.equals("java.lang.ThreadGroup")
                        || owner.startsWith("java.lang.System")
                        || owner.startsWith("jdk.internal.misc.") || owner.equals(CpuBudget.class.getName())
                        || owner.startsWith("sun.management.") || owner.startsWith("java.lang.management.");
                if (!expected) {
                    foreign.add(owner + "." + f.getMethod().getName());
                }
            }
        }
        assertTrue(foreign.isEmpty(), "unload-worker's frames named after classes it never ran: " + foreign
                + JfrReader.describe(samples, 8));
        assertFalse(foreign.stream().anyMatch(s -> s.startsWith(LazyReload.class.getName())), foreign.toString());
        assertTrue(unknownFrames >= samples.size(), "the unloaded class's frames should be unknown, " + unknownFrames
                + " unknown frames in " + samples.size() + " samples:" + JfrReader.describe(samples, 8));
        // One name for a frame whose class is gone, whatever the mode: `<unloaded>` (a frame
        // that could not be walked is `unknown`).
        assertTrue(unloadedFrames * 2 >= samples.size(), "the unloaded class's frames should be named <unloaded>: "
                + unloadedFrames + " such frames in " + samples.size() + " samples:" + JfrReader.describe(samples, 8));
        assertTrue(counter("method_resolve_lazy_unloaded") + counter("method_resolve_lazy_stale") > 0,
                "no frame was refused as unloaded or stale: " + counters);
        // The classes that came after it are named.
        List<RecordedEvent> reload = JfrReader.onThread(all, "reload-worker");
        List<String> reloadOwners = reload.stream().flatMap(e -> JfrReader.frames(e).stream())
                .filter(f -> !JfrReader.isUnnamed(f)).map(f -> f.getMethod().getType().getName()).distinct()
                .collect(Collectors.toCollection(ArrayList::new));
        assertTrue(reloadOwners.contains(LazyReload.class.getName()), "reload-worker frames: " + reloadOwners);
    }
}
