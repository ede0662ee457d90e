package com.datadoghq.profiler;

import java.lang.instrument.Instrumentation;

/**
 * {@code -javaagent:ddprof-lib.jar=<command>} entry point (and the dynamic-attach one).
 *
 * <p>Loads the native library and runs {@code <command>} (for example
 * {@code start,cpu=10ms,file=profile.jfr}) with {@link JavaProfiler#execute(String)}. Without a
 * command it only loads the library. A failure is reported on stderr and never thrown: the
 * application must start whether or not the profiler does.
 *
 * <p>No shutdown hook is needed: the native core completes the recording when the JVM dies
 * (JVMTI VMDeath).
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
        start(args);
    }

    public static void agentmain(String args) {
        start(args);
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
