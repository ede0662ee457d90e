package com.datadoghq.profiler;

import java.lang.instrument.Instrumentation;

/**
 * {@code -javaagent:ddprof.jar=<command>} entry point (and the dynamic-attach one).
 *
 * <p>Loads the native library and runs {@code <command>} (for example
 * {@code start,cpu=10ms,file=profile.jfr}) with {@link JavaProfiler#execute(String)}. Without a
 * command it only loads the library. A failure is reported on stderr and never thrown: the
 * application must start whether or not the profiler does.
 *
 * <p>No shutdown hook is needed: the native core completes the recording when the JVM dies
 * (JVMTI VMDeath). With {@code otlp=} the exporter adds one, for its final export
 * (docs/exporter.md).
 */
public final class Agent {
    private Agent() {
    }

    public static void premain(String args, Instrumentation instrumentation) {
        start(args);
    }

    public static void premain(String args) {
        start(args);
    }

    public static void agentmain(String args, Instrumentation instrumentation) {
        agentmain(args);
    }

    public static void agentmain(String args) {
        if (args != null && args.startsWith(ATTACH_PREFIX)) {
            attached(args.substring(ATTACH_PREFIX.length()));
        } else {
            start(args);
        }
    }

    /**
     * What {@code java -jar ddprof-tools.jar attach} passes: {@code ATTACH_PREFIX + id + ":" +
     * command}. The outcome goes to the system property {@code RESULT_PROPERTY + id}, which the
     * attacher reads back through the attach connection: {@code ok:REPLY}, {@code usage:MESSAGE}
     * (the command was refused) or {@code error:MESSAGE}.
     */
    static final String ATTACH_PREFIX = "@ddprof-attach:";
    static final String RESULT_PROPERTY = "ddprof.attach.result.";

    private static void attached(String idAndCommand) {
        int colon = idAndCommand.indexOf(':');
        String id = colon < 0 ? "" : idAndCommand.substring(0, colon);
        String command = colon < 0 ? idAndCommand : idAndCommand.substring(colon + 1);
        String result;
        try {
            result = "ok:" + runAttached(JavaProfiler.getInstance(), command.trim());
        } catch (IllegalArgumentException e) {
            result = "usage:" + e.getMessage();
        } catch (Throwable t) {
            result = "error:" + (t instanceof IllegalStateException ? t.getMessage() : t.toString());
        }
        System.setProperty(RESULT_PROPERTY + id, result);
    }

    /**
     * {@code stop}, {@code dump,file=PATH} (JavaProfiler.dump: the recording so far, to PATH) or
     * any profiler command ({@code start,...}, {@code status}, {@code resume}, ...); returns the
     * reply.
     */
    static String runAttached(JavaProfiler profiler, String command) throws java.io.IOException {
        String action = command.split(",", 2)[0].trim().toLowerCase(java.util.Locale.ROOT);
        boolean running = profiler.getStatus().contains("Running          : true");
        if (action.equals("stop")) {
            if (!running) {
                throw new IllegalStateException("Profiler is not active");
            }
            profiler.stop();
            return "Profiling stopped";
        }
        if (action.equals("dump")) {
            String file = null;
            for (String option : command.split(",")) {
                if (option.startsWith("file=")) {
                    file = option.substring("file=".length());
                }
            }
            if (file == null || file.isEmpty()) {
                throw new IllegalArgumentException("dump needs file=PATH");
            }
            if (!running) {
                throw new IllegalStateException("Profiler is not active");
            }
            java.nio.file.Path path = java.nio.file.Paths.get(file).toAbsolutePath();
            profiler.dump(path);
            return "Dumped the recording so far to " + path;
        }
        String reply = profiler.execute(command);
        return reply.endsWith("\n") ? reply.substring(0, reply.length() - 1) : reply;
    }

    private static void start(String args) {
        try {
            JavaProfiler profiler = JavaProfiler.getInstance();
            if (args != null && !args.trim().isEmpty()) {
                profiler.execute(args.trim());
            }
        } catch (Throwable t) {
            System.err.println("[ddprof] could not start the profiler with '" + args + "': " + t);
        }
    }
}
