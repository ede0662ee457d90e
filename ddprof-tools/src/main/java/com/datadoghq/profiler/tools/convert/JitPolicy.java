package com.datadoghq.profiler.tools.convert;

import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import javax.management.ObjectName;

/**
 * Keeps HotSpot's optimizing compiler (C2) out of a conversion's own JVM, leaving its methods to the
 * quick one (C1). A conversion is a run of a few seconds over one loop: C2 took about as much CPU
 * compiling it as the conversion itself and never paid that back, on recordings of 9 MB to 570 MB
 * (docs/benchmarks.md, "Conversion", session 24; docs/converters.md, "convert").
 *
 * <p>A JVM's flags cannot change once it runs, and {@code java -jar} passes none, so this adds a
 * compiler directive (JDK 9+: {@code c2: {Exclude: true}} for every method, as {@code jcmd PID
 * Compiler.directives_add FILE} would) through the JVM's own diagnostic-command MBean. A method C2
 * may not compile is compiled by C1 without profiling. Only for the {@code convert} command's own
 * process ({@code Main.main}), never for a caller that runs a conversion inside its JVM; and only
 * when the recordings are large enough for it to pay: starting the MBean server costs about 0.15 s
 * of CPU. Where the MBean or the directive is not there (another JVM), nothing changes.
 */
final class JitPolicy {
    /** Below this, the conversion is too short for the change to pay for the MBean server's start. */
    static final long MIN_BYTES = 8L << 20;
    private static final String DIRECTIVE = "[{ match: \"*.*\", c2: { Exclude: true } }]";

    private JitPolicy() {
    }

    /** Adds the directive when {@code inputs} add up to {@link #MIN_BYTES}; quietly does nothing if it cannot. */
    static void forConversionOf(List<Path> inputs) {
        long bytes = 0;
        try {
            for (Path p : inputs) {
                bytes += Files.size(p);
            }
        } catch (Exception e) {
            return;
        }
        if (bytes < MIN_BYTES) {
            return;
        }
        Path file = null;
        try {
            file = Files.createTempFile("ddprof-convert-jit", ".json");
            Files.write(file, DIRECTIVE.getBytes(StandardCharsets.UTF_8));
            ManagementFactory.getPlatformMBeanServer().invoke(
                    new ObjectName("com.sun.management:type=DiagnosticCommand"), "compilerDirectivesAdd",
                    new Object[] {new String[] {file.toString()}}, new String[] {String[].class.getName()});
        } catch (Exception | LinkageError e) {
            // Not HotSpot, no such command, or no management module: the JVM's default compilation.
        } finally {
            if (file != null) {
                try {
                    Files.deleteIfExists(file);
                } catch (Exception e) {
                    // a temporary file
                }
            }
        }
    }
}
