package com.datadoghq.profiler.context;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.internal.Diagnostics;
import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.ProfilerExtension;
import com.datadoghq.profiler.testing.TestEnv;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Context writes on a platform thread are stored in place from Java (no JNI call); the JNI
 * writer stays for virtual threads and as {@code -Dddprof.contextWriter=jni}. Both must leave
 * the thread's context exactly alike: the same seeded sequence of several thousand calls of the
 * whole API, run once with each, gives the same transcript of the record (as an outside reader
 * sees it), the local root span id and the tag encodings after every call. The in-place writer
 * leaves the record's attribute entries out until an OTel reader can exist (docs/context.md, "Who
 * reads it"), the JNI writer never does: compared whole with the entries on
 * ({@code -Dddprof.otelThreadRecord=always}), and without them on everything but the entries.
 */
@ExtendWith(ProfilerExtension.class)
class ContextWriterEquivalenceTest {
    private static final int CALLS = 20000;

    @Test
    void directAndJniWritersLeaveTheSameContext(@TempDir Path dir) throws Exception {
        List<String> jni = run(dir, "jni", "-Dddprof.otelThreadRecord=always");
        assertEquals("writer=jni", jni.get(0));
        // The in-place writer both ways it reaches the record (NativeWords): the JDK's default
        // (Unsafe on 11-23, the buffer from 24) and the buffer forced.
        List<String> direct = run(dir, "direct", "-Dddprof.otelThreadRecord=always");
        List<String> buffer = run(dir, "direct", "-Dddprof.otelThreadRecord=always", "-Dddprof.contextAccess=buffer");
        for (List<String> d : Arrays.asList(direct, buffer)) {
            assertEquals("writer=direct", d.get(0));
            assertEquals(CALLS + 1, d.size());
            assertEquals(jni.size(), d.size());
            for (int i = 1; i < d.size(); i++) {
                assertEquals(jni.get(i), d.get(i), "first difference, after call " + (i - 1));
            }
        }
        long published = direct.stream().filter(l -> l.contains("valid=1")).count();
        long longValues = direct.stream().filter(l -> l.contains("setContextValue false")).count();
        assertTrue(published > CALLS / 4 && longValues > 10, "the script exercises publication and refusals: "
                + published + " published, " + longValues + " refused");
    }

    /**
     * By default (no process context published) the in-place writer stores no attribute entry,
     * and everything else exactly as the JNI writer, which still stores them.
     */
    @Test
    void withoutEntriesTheWritersDifferOnlyInTheEntries(@TempDir Path dir) throws Exception {
        List<String> direct = run(dir, "direct");
        List<String> jni = run(dir, "jni");
        assertEquals(jni.size(), direct.size());
        long jniEntries = 0;
        for (int i = 1; i < direct.size(); i++) {
            String d = direct.get(i);
            assertTrue(!d.contains(" attrs=") || d.contains(" attrs={} "), "an entry in place, after call " + (i - 1) + ": " + d);
            jniEntries += jni.get(i).contains(" attrs={} ") ? 0 : 1;
            assertEquals(withoutEntries(jni.get(i)), withoutEntries(d), "first difference, after call " + (i - 1));
        }
        assertTrue(jniEntries > CALLS / 4, "the JNI writer's records have entries: " + jniEntries);
    }

    private static String withoutEntries(String line) {
        return line.replaceFirst(" attrs=\\{.*?\\} root=", " root=");
    }

    private static List<String> run(Path dir, String writer, String... jvmArgs) throws Exception {
        ChildJvm child = new ChildJvm().classpath(TestEnv.libJar()).timeout(Duration.ofSeconds(120));
        child.jvmArgs(jvmArgs);
        if (writer.equals("jni")) {
            child.jvmArgs("-Dddprof.contextWriter=jni");
        }
        ChildJvm.Result r = child.main(ContextScriptMain.class, dir.toString(), Integer.toString(CALLS)).run(dir);
        assertEquals(0, r.exitCode, r.describe());
        return Arrays.asList(r.stdout.split("\n"));
    }

    @Test
    void platformThreadsWriteInPlace(JavaProfiler profiler) throws Exception {
        assertEquals("direct", Diagnostics.contextWriterKind());
        // Unsafe only where the JDK is silent about it: JDK 24+ warns at its first memory access.
        assertEquals(Runtime.version().feature() < 24 ? "unsafe" : "buffer", Diagnostics.contextWriterAccess());
        AtomicReference<String> other = new AtomicReference<>();
        Thread t = new Thread(() -> other.set(Diagnostics.contextWriterKind()));
        t.start();
        t.join();
        assertEquals("direct", other.get());
    }
}
