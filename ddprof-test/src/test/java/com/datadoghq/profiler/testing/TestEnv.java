package com.datadoghq.profiler.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;

import com.datadoghq.profiler.JavaProfiler;

/**
 * What the build tells the end-to-end tests, and the one profiler of this JVM.
 *
 * <p>System properties set by ddprof-test's surefire executions:
 * <ul>
 *   <li>{@code ddprof.test.jdk}: the feature release of the JDK running the tests (11, 17, 21, 25)</li>
 *   <li>{@code ddprof.lib.jar}: the built jar (com.datadoghq:ddprof) (carries the native library)</li>
 *   <li>{@code ddprof.tools.jar}: the built tools jar (com.datadoghq:ddprof-tools), the library jar
 *       beside it (its manifest's class path): {@code java -jar} it for demo, report, convert, attach</li>
 *   <li>{@code ddprof.native.lib}: the libjavaProfiler.so that jar carries (stripped; its DWARF is in
 *       the debuginfo jar)</li>
 *   <li>{@code ddprof.test.java}: the java executable of the running JDK, for child JVMs</li>
 * </ul>
 */
public final class TestEnv {
    /** The line integrations wait for in {@link JavaProfiler#getStatus()} (10 spaces). */
    public static final String RUNNING_LINE = "Running          : true";

    private static Path scratch;

    private TestEnv() {}

    /** The feature release of the JDK running this test. */
    public static int jdk() {
        String p = System.getProperty("ddprof.test.jdk");
        return p != null && !p.isEmpty() ? Integer.parseInt(p.trim()) : Runtime.version().feature();
    }

    public static String javaExecutable() {
        String p = System.getProperty("ddprof.test.java");
        if (p != null && !p.isEmpty()) {
            return p;
        }
        return Paths.get(System.getProperty("java.home"), "bin", "java").toString();
    }

    public static Path nativeLib() {
        return requiredFile("ddprof.native.lib");
    }

    public static Path libJar() {
        return requiredFile("ddprof.lib.jar");
    }

    public static Path toolsJar() {
        return requiredFile("ddprof.tools.jar");
    }

    private static Path requiredFile(String property) {
        String p = System.getProperty(property);
        if (p == null || p.isEmpty()) {
            throw new IllegalStateException("system property " + property + " is not set (run the tests through Maven)");
        }
        Path path = Paths.get(p).toAbsolutePath();
        if (!Files.isRegularFile(path)) {
            throw new IllegalStateException(property + " = " + path + " does not exist; build it first (mvn -DskipTests install)");
        }
        return path;
    }

    /** A directory that lives as long as this JVM. */
    public static synchronized Path scratchDir() {
        if (scratch == null) {
            try {
                scratch = Files.createTempDirectory("ddprof-test-");
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            scratch.toFile().deleteOnExit();
        }
        return scratch;
    }

    /**
     * The process-wide profiler. When the build names the native library, a copy of it is
     * loaded (the loader may delete the file it was given, as upstream's does); otherwise the
     * library bundled in the jar on the class path.
     */
    public static synchronized JavaProfiler profiler() {
        try {
            String lib = System.getProperty("ddprof.native.lib");
            if (lib == null || lib.isEmpty()) {
                return JavaProfiler.getInstance();
            }
            Path copy = scratchDir().resolve("libjavaProfiler.so");
            if (!Files.exists(copy)) {
                Files.copy(nativeLib(), copy, StandardCopyOption.REPLACE_EXISTING);
                copy.toFile().deleteOnExit();
            }
            return JavaProfiler.getInstance(copy.toString(), scratchDir().toString());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static boolean isRunning(JavaProfiler profiler) {
        return profiler.getStatus().contains(RUNNING_LINE);
    }

    /** Leaves the profiler stopped, whatever state it is in. */
    public static void stopQuietly(JavaProfiler profiler) {
        if (profiler == null) {
            return;
        }
        try {
            profiler.stop();
        } catch (IllegalStateException notActive) {
            // already idle
        } catch (UncheckedIOException unwritable) {
            // stopped; the recording could not be written (a test of that case)
        }
    }

    /** What {@link #record} runs while the profiler records. */
    public interface Work {
        void run(JavaProfiler profiler) throws Exception;
    }

    /**
     * Records {@code work} into {@code jfr}, the profiler started with {@code options} (stopped first,
     * whatever state it was in) and stopped after, whatever the work throws.
     */
    public static void record(Path jfr, String options, Work work) throws Exception {
        JavaProfiler profiler = profiler();
        stopQuietly(profiler);
        profiler.execute("start," + options + ",file=" + jfr);
        try {
            work.run(profiler);
        } finally {
            profiler.stop();
        }
    }

    /** Starts the profiler with {@code command}, which must be accepted. */
    public static String start(JavaProfiler profiler, String command) {
        try {
            return profiler.execute(command);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Deletes {@code dir} and everything under it (a test class's scratch folder); null: nothing. */
    public static void deleteTree(java.nio.file.Path dir) throws java.io.IOException {
        if (dir == null) {
            return;
        }
        try (java.util.stream.Stream<java.nio.file.Path> files = java.nio.file.Files.walk(dir)) {
            files.sorted(java.util.Collections.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }
}
