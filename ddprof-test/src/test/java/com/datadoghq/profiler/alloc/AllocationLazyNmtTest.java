package com.datadoghq.profiler.alloc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code memory=256k:a,fjmethodid=lazy} leaves HotSpot's native memory for jmethodIDs flat, as
 * NMT sees it ({@link LazyNmtMain}, in a fresh JVM with {@code -XX:NativeMemoryTracking=summary}).
 * 8,000 generated methods each allocate until most of them are sampled, then the recording is
 * dumped (its frames named); then, in the same JVM, JVMTI makes the jmethodIDs of those methods,
 * as {@code GetStackTrace} does for every frame it samples. HotSpot keeps a class's jmethodIDs in
 * a per-class cache allocated in NMT's Class category ({@code InstanceKlass::_methods_jmethod_ids},
 * one word per method) and the Method* slots they point to in blocks of the Internal category
 * ({@code JNIMethodBlockNode}), so making them costs at least 8 bytes of Class malloc per
 * method; the sampled workload and its dump must cost less than a tenth of that. What else moves
 * the Class category meanwhile is the GC's cache of interpreted frames' oop maps, about 1-2 KB.
 */
class AllocationLazyNmtTest {
    private static final int CLASSES = 10;
    private static final int METHODS = 800;

    @TempDir
    Path dir;

    @Test
    void lazyAllocationSamplingMakesNoJmethodIdMemory() throws Exception {
        ChildJvm.Result r = new ChildJvm()
                .classpath(TestEnv.libJar())
                .jvmArgs("-Xmx256m", "-XX:NativeMemoryTracking=summary")
                // The number of samples follows the bytes allocated, not the host's speed.
                .env("DDPROF_TEST_DISABLE_RATE_LIMIT", "1")
                .main(LazyNmtMain.class, dir.toString(), Integer.toString(CLASSES), Integer.toString(METHODS),
                        Long.toString(512 << 10))
                .timeout(Duration.ofSeconds(120))
                .run(dir);
        assertFalse(r.timedOut, "child JVM hung:\n" + r.describe());
        assertEquals(0, r.exitCode, "child JVM failed:\n" + r.describe());
        assertTrue(r.stdout.contains("workload done") && r.stdout.contains("reply Profiling started")
                && !r.stdout.contains("WARNING"), r.describe());
        Map<String, Long> counters = new HashMap<>();
        Map<String, Long> malloc = new HashMap<>();
        long ids = -1;
        for (String line : r.stdout.split("\n")) {
            String[] f = line.trim().split(" ");
            if (f[0].equals("counter")) {
                String[] kv = f[1].split("=", 2);
                counters.put(kv[0], Long.parseLong(kv[1]));
            } else if (f[0].equals("nmt") && f.length == 5) {
                malloc.put(f[1] + " " + f[2], Long.parseLong(f[3].substring("malloc=".length())));
            } else if (f[0].equals("ids")) {
                ids = Long.parseLong(f[1]);
            }
        }
        int methods = CLASSES * METHODS;
        // <init> and accept beside the a<i>: every method of the classes got its ID.
        assertEquals(methods + 2L * CLASSES, ids, "jmethodIDs the control made");

        // Most of the methods were sampled, and the dump named them.
        Set<String> sampled = new HashSet<>();
        for (RecordedEvent e : JfrReader.events(dir.resolve("dump.jfr"), AllocationProfilingTest.OBJECT_SAMPLE)) {
            for (RecordedFrame fr : JfrReader.frames(e)) {
                String type = fr.getMethod().getType().getName();
                String name = fr.getMethod().getName();
                if (type.startsWith("gen.Alloc") && name.matches("a\\d+")) {
                    sampled.add(type + "." + name);
                }
            }
        }
        assertTrue(sampled.size() * 2 >= methods, sampled.size() + " of " + methods + " methods sampled and named");
        // Sampled raw, named from metadata: no ID made, no fallback.
        assertEquals(0L, counters.get("method_resolve_lazy_jmethodids_created"), counters.toString());
        assertEquals(0L, counters.get("fjmethodid_lazy_fallback"), counters.toString());
        assertTrue(counters.get("alloc_samples") >= methods, "samples: " + counters.get("alloc_samples"));

        long lazy = malloc.get("dumped Class") - malloc.get("base Class");
        long control = malloc.get("control Class") - malloc.get("dumped Class");
        String figures = "NMT Class malloc: lazy sampling and dump " + lazy + " B, making the IDs of " + methods
                + " methods " + control + " B (Internal: lazy "
                + (malloc.get("dumped Internal") - malloc.get("base Internal")) + " B, control "
                + (malloc.get("control Internal") - malloc.get("dumped Internal")) + " B)";
        System.out.println(figures);
        // The control can fail: one cache word per method at least.
        assertTrue(control >= methods * 8L, figures);
        assertTrue(lazy * 10 < control, figures);
    }
}
