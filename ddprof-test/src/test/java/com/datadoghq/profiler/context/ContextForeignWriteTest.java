package com.datadoghq.profiler.context;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.internal.Diagnostics;
import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.ProfilerExtension;
import com.datadoghq.profiler.testing.TestEnv;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * A platform thread's in-place writer mirrors what it stored so that it can skip stores that
 * change nothing; but the JNI writer can write the same OS thread's record too: a virtual thread
 * mounted on a carrier writes the carrier's record, and the carrier may write its own context
 * in place around running it (a tracer's task instrumentation). After such a write the carrier's
 * next write must store what it means, not what it last stored. The JNI write here is the
 * writer's own native call, made on the platform thread itself: the same call, into the same
 * record, that a mounted virtual thread makes; and, on JDK 21+, a real virtual thread on the
 * scheduler's only carrier between two of the carrier's own writes.
 */
@ExtendWith(ProfilerExtension.class)
class ContextForeignWriteTest {

    @Test
    void aWriteAfterAJniWriteStoresItsWholeContext(JavaProfiler p) throws Throwable {
        // The attributes are read back from the record's entries, which the in-place writer
        // stores once a reader can exist: turn them on as a publication of the process context
        // does (the tracer's default; another test of this JVM may have published already).
        Method readers = Class.forName("com.datadoghq.profiler.ContextWriter").getDeclaredMethod("otelReadersExist");
        readers.setAccessible(true);
        readers.invoke(null);
        List<String> failures = new ArrayList<>();
        onFreshThread(() -> {
            assertEquals("direct", Diagnostics.contextWriterKind());
            // The carrier activates span 11 under root 10, with an attribute.
            p.setTraceContext(10, 11, 0, 12, 0, "carrier", -1, null);
            jniSetTrace(20, 21, 0, 22, 0, "virtual");
            check(p, failures, "the JNI write landed", 20, 21, "virtual");
            // The carrier restores the same span: every field is the carrier's again.
            p.setTraceContext(10, 11, 0, 12, 0, "carrier", -1, null);
            check(p, failures, "same span again", 10, 11, "carrier");
            traceIs(p, failures, "same span again", 12);
        });
        onFreshThread(() -> {
            // The legacy setContext: span and root only, the attribute kept.
            p.setContext(31, 30);
            jniSetTrace(40, 41, 0, 42, 1, "virtual");
            p.setContext(31, 30);
            check(p, failures, "legacy same span again", 30, 31, null);
            traceIs(p, failures, "legacy same span again", 0);
        });
        onFreshThread(() -> {
            // Cleared, then a JNI write, then cleared again: nothing published.
            p.clearTraceContext();
            jniSetTrace(50, 51, 0, 52, 0, "virtual");
            p.clearTraceContext();
            if ((boolean) hook(p, "testIsContextValid") || (long) hook(p, "testGetSpanId") != 0) {
                failures.add("clear again: the JNI write's context still published");
            }
        });
        onFreshThread(() -> {
            // One attribute set again after a JNI write that replaced it and added another.
            p.setContextValue(0, "carrier");
            jniSetTrace(60, 61, 0, 62, 1, "virtual");
            p.setContextValue(0, "carrier");
            Object a0 = hook(p, "testReadContextAttribute", 0);
            Object a1 = hook(p, "testReadContextAttribute", 1);
            long span = (long) hook(p, "testGetSpanId");
            if (!"carrier".equals(a0) || a1 != null || span != 0) {
                failures.add("value again: attr0 " + a0 + " attr1 " + a1 + " span " + span
                        + ", expected carrier, null, 0");
            }
        });
        assertTrue(failures.isEmpty(), String.join("; ", failures));
    }

    @Test
    void aCarrierRestoringItsSpanAfterAVirtualThreadStoresIt(@TempDir Path dir) throws Exception {
        assumeTrue(TestEnv.jdk() >= 21, "virtual threads need JDK 21");
        ChildJvm.Result r = new ChildJvm().classpath(TestEnv.libJar()).timeout(Duration.ofSeconds(90))
                .jvmArgs("--add-opens", "java.base/java.lang=ALL-UNNAMED",
                        "-Djdk.virtualThreadScheduler.parallelism=1", "-Djdk.virtualThreadScheduler.maxPoolSize=1")
                .main(CarrierContextMain.class).run(dir);
        assertEquals(0, r.exitCode, r.describe());
        Map<String, String> seen = new HashMap<>();
        for (String line : r.stdout.split("\n")) {
            int eq = line.indexOf('=');
            if (eq > 0) {
                seen.put(line.substring(0, eq), line.substring(eq + 1));
            }
        }
        // The scenario happened: the carrier writes in place, the virtual thread through JNI into
        // the carrier's record.
        assertEquals("direct", seen.get("carrier"), r.describe());
        assertEquals("true", seen.get("sameCarrier"), r.describe());
        assertTrue(String.valueOf(seen.get("virtual")).startsWith("jni "), r.describe());
        assertEquals("21", seen.get("afterVirtual"), r.describe());
        // The carrier's span and root are in the record again.
        assertEquals("11/10", seen.get("restored"), r.describe());
    }

    private static void check(JavaProfiler p, List<String> failures, String what, long root, long span,
                              String attr0) throws Throwable {
        long gotSpan = (long) hook(p, "testGetSpanId");
        long gotRoot = (long) hook(p, "testGetRootSpanId");
        Object gotAttr = hook(p, "testReadContextAttribute", 0);
        boolean valid = (boolean) hook(p, "testIsContextValid");
        if (gotSpan != span || gotRoot != root || !java.util.Objects.equals(attr0, gotAttr) || !valid) {
            failures.add(what + ": record holds span " + gotSpan + " root " + gotRoot + " attr0 " + gotAttr
                    + " valid " + valid + ", expected span " + span + " root " + root + " attr0 " + attr0);
        }
    }

    private static void traceIs(JavaProfiler p, List<String> failures, String what, long traceLo)
            throws Throwable {
        String want = String.format("%032x", traceLo);
        Object got = hook(p, "testReadTraceId");
        if (!want.equals(got)) {
            failures.add(what + ": trace id " + got + ", expected " + want);
        }
    }

    /** The JNI writer's span activation, as a virtual thread's write reaches the OS thread's record. */
    private static void jniSetTrace(long root, long span, long traceHi, long traceLo, int slot, String value)
            throws Throwable {
        Method m = JavaProfiler.class.getDeclaredMethod("setTraceContext0", long.class, long.class, long.class,
                long.class, int.class, int.class, byte[].class, int.class, int.class, int.class, byte[].class,
                int.class);
        m.setAccessible(true);
        byte[] utf8 = value.getBytes(StandardCharsets.UTF_8);
        Method register = JavaProfiler.class.getDeclaredMethod("registerConstant", String.class);
        register.setAccessible(true);
        int encoding = (int) register.invoke(JavaProfiler.getInstance(), value);
        assertFalse(encoding <= 0, "registered " + value);
        // As the JNI writer does before its native call (the virtual thread's case below goes
        // through it).
        java.lang.reflect.Field jniWrote = Class.forName("com.datadoghq.profiler.ContextWriter")
                .getDeclaredField("jniWrote");
        jniWrote.setAccessible(true);
        jniWrote.setBoolean(null, true);
        m.invoke(null, root, span, traceHi, traceLo, slot, encoding, utf8, utf8.length, -1, 0, null, 0);
    }

    private static Object hook(JavaProfiler p, String name, Object... args) throws Throwable {
        Class<?>[] types = new Class<?>[args.length];
        for (int i = 0; i < args.length; i++) {
            types[i] = int.class;
        }
        Method m = JavaProfiler.class.getDeclaredMethod(name, types);
        m.setAccessible(true);
        return m.invoke(p, args);
    }

    interface Body {
        void run() throws Throwable;
    }

    /** A new platform thread: its writer starts from nothing. */
    private static void onFreshThread(Body body) throws Throwable {
        Throwable[] thrown = new Throwable[1];
        Thread t = new Thread(() -> {
            try {
                body.run();
            } catch (Throwable e) {
                thrown[0] = e;
            }
        });
        t.start();
        t.join();
        if (thrown[0] != null) {
            throw thrown[0];
        }
    }
}
