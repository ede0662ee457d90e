package com.datadoghq.profiler.testing;

import java.io.File;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Runs a workload class from the test classes in a fresh JVM of the JDK under test
 * ({@code ddprof.test.java}), with whatever {@code -agentpath} / {@code -javaagent} options
 * the test gives, and captures its output. The system property {@code ddprof.test.childJvmArgs}
 * (space-separated) is put before every child's own JVM arguments.
 */
public final class ChildJvm {
    private final List<String> jvmArgs = new ArrayList<>();
    private final List<String> classpath = new ArrayList<>();
    private String mainClass;
    private final List<String> args = new ArrayList<>();
    private Duration timeout = Duration.ofSeconds(60);
    private final Map<String, String> env = new LinkedHashMap<>();
    private final List<String> launcher = new ArrayList<>();

    public ChildJvm() {
        classpath.add(testClasses().toString());
    }

    public ChildJvm jvmArgs(String... a) {
        jvmArgs.addAll(Arrays.asList(a));
        return this;
    }

    public ChildJvm classpath(Path entry) {
        classpath.add(entry.toString());
        return this;
    }

    public ChildJvm main(Class<?> main, String... a) {
        this.mainClass = main.getName();
        args.addAll(Arrays.asList(a));
        return this;
    }

    /** A command the JVM runs under (e.g. {@code perf record -o FILE --}), in front of {@code java}. */
    public ChildJvm launcher(String... command) {
        launcher.addAll(Arrays.asList(command));
        return this;
    }

    /** Sets a variable of the child's environment (e.g. {@code LD_PRELOAD}). */
    public ChildJvm env(String name, String value) {
        env.put(name, value);
        return this;
    }

    public ChildJvm timeout(Duration t) {
        this.timeout = t;
        return this;
    }

    public Result run(Path workDir) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(launcher);
        cmd.add(TestEnv.javaExecutable());
        // -Dddprof.test.childJvmArgs="-XX:+UseZGC ..." runs every child JVM with these first
        // (by hand, e.g. to run the lazy tests under another collector).
        String extra = System.getProperty("ddprof.test.childJvmArgs", "").trim();
        if (!extra.isEmpty()) {
            cmd.addAll(Arrays.asList(extra.split("\\s+")));
        }
        cmd.addAll(jvmArgs);
        // Without a main class the JVM arguments say what to run (e.g. -jar JAR ARGS).
        if (mainClass != null) {
            cmd.add("-cp");
            cmd.add(String.join(File.pathSeparator, classpath));
            cmd.add(mainClass);
            cmd.addAll(args);
        }

        Path out = Files.createTempFile(workDir, "child", ".out");
        Path err = Files.createTempFile(workDir, "child", ".err");
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.environment().putAll(env);
        Process p = pb
                .directory(workDir.toFile())
                .redirectOutput(out.toFile())
                .redirectError(err.toFile())
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                .start();
        boolean exited = p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
        if (!exited) {
            p.destroyForcibly();
            p.waitFor(10, TimeUnit.SECONDS);
        }
        List<String> shown = new ArrayList<>();
        env.forEach((k, v) -> shown.add(k + "=" + v));
        shown.addAll(cmd);
        return new Result(shown, exited ? p.exitValue() : -1, !exited,
                new String(Files.readAllBytes(out), StandardCharsets.UTF_8),
                new String(Files.readAllBytes(err), StandardCharsets.UTF_8));
    }

    /** The directory holding the compiled test classes (and so the workloads). */
    public static Path testClasses() {
        try {
            return Paths.get(ChildJvm.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    public static final class Result {
        public final List<String> command;
        public final int exitCode;
        public final boolean timedOut;
        public final String stdout;
        public final String stderr;

        public Result(List<String> command, int exitCode, boolean timedOut, String stdout, String stderr) {
            this.command = command;
            this.exitCode = exitCode;
            this.timedOut = timedOut;
            this.stdout = stdout;
            this.stderr = stderr;
        }

        /**
         * The {@code name=value} lines of stdout that begin with {@code prefix} (e.g. counters a child
         * printed as {@code "after " + name + "=" + value}), by name.
         */
        public Map<String, Long> values(String prefix) {
            Map<String, Long> m = new LinkedHashMap<>();
            for (String line : stdout.split("\n")) {
                if (line.startsWith(prefix)) {
                    String[] kv = line.substring(prefix.length()).split("=", 2);
                    m.put(kv[0], Long.parseLong(kv[1].trim()));
                }
            }
            return m;
        }

        /** For assertion messages. */
        public String describe() {
            return "command: " + String.join(" ", command)
                    + "\nexit code: " + exitCode + (timedOut ? " (timed out, killed)" : "")
                    + "\n--- stdout ---\n" + tail(stdout) + "\n--- stderr ---\n" + tail(stderr);
        }

        private static String tail(String s) {
            return s.length() <= 4000 ? s : "..." + s.substring(s.length() - 4000);
        }
    }
}
