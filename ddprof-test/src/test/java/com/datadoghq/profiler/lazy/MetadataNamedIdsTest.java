package com.datadoghq.profiler.lazy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.TestEnv;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Frames sampled with a jmethodID (the default mode, where every method gets one when its class
 * loads) are named from the method's own metadata rather than by three JVMTI calls per method,
 * where the reads can be vouched for (docs/dump.md, "jmethodID frames"). With
 * {@code DDPROF_TEST_NAMING_CHECK=1} the profiler also asks JVMTI for every such method and counts
 * each answer that differs in name, descriptor, modifiers or line table. Over {@link LazyMain}'s
 * workload in the default mode (a custom loader, a hidden class, a lambda, a class unloaded
 * before the dump and fresh copies loaded where its metadata was, the JDK's own code) none may,
 * whether the dump read the metadata itself or took what the library watcher read ahead of it
 * ({@code methods/ahead_ids.rs}: a second of spinning per worker gives it several polls), the
 * holder's name with it on JDK 17-24 (compared with GetClassSignature's and the entry-point check's).
 */
class MetadataNamedIdsTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(90);

    @TempDir
    Path dir;

    @Test
    void namesReadFromMetadataAreWhatJvmtiSays() throws Exception {
        ChildJvm.Result r = new ChildJvm()
                .classpath(TestEnv.libJar())
                .jvmArgs("-Xmx256m")
                .env("DDPROF_TEST_NAMING_CHECK", "1")
                .main(LazyMain.class, dir.toString(), "cstack=vm")
                .timeout(TIMEOUT)
                .run(dir);
        assertFalse(r.timedOut, "child JVM hung:\n" + r.describe());
        assertEquals(0, r.exitCode, "child JVM failed:\n" + r.describe());
        assertTrue(r.stdout.contains("workload done"), r.describe());
        Map<String, Long> c = r.values("counter ");
        long fromMetadata = c.getOrDefault("jmethodid_names_from_metadata", -1L);
        long takenAhead = c.getOrDefault("jmethodid_names_taken_ahead", -1L);
        long classesAhead = c.getOrDefault("jmethodid_class_names_taken_ahead", -1L);
        if (TestEnv.jdk() >= 25) {
            // JDK 25 numbers its jmethodIDs instead of handing out the slot holding the method:
            // JVMTI names every one.
            assertEquals(0, fromMetadata, "named from metadata on JDK 25: " + c);
            assertEquals(0, takenAhead, "read ahead on JDK 25: " + c);
        } else {
            assertTrue(fromMetadata >= 50, "jmethodID frames named from metadata: " + fromMetadata + "\n" + c);
            assertTrue(takenAhead >= 10, "jmethodID frames named from metadata read ahead: " + takenAhead + "\n" + c);
        }
        if (TestEnv.jdk() >= 17 && TestEnv.jdk() < 25) {
            // The holder's name read ahead too (JDK 17-24): those methods ask JVMTI nothing.
            assertTrue(classesAhead >= 10, "class names read ahead: " + classesAhead + "\n" + c);
        } else {
            // JDK 11's VM-anonymous classes get their mirror's hash in the signature; 25: no IDs ahead.
            assertEquals(0, classesAhead, "class names read ahead on JDK " + TestEnv.jdk() + ": " + c);
        }
        assertEquals(0, c.getOrDefault("jmethodid_metadata_mismatches", -1L),
                "names read from metadata that JVMTI gives otherwise:\n" + r.describe());
    }
}
