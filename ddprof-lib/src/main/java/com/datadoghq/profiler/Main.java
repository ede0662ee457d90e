package com.datadoghq.profiler;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.Properties;

/**
 * {@code java -jar ddprof-lib.jar <command>}: small tools shipped with the library.
 *
 * <pre>
 *   demo [seconds] [jfr-path]   profile a bundled CPU-bound workload, then print its report
 *   report FILE.jfr             top methods and unwalked-stack share of a recording
 *   report FILE.jfr --memory    the profiler's native memory by category, and its share of RSS
 *   version                     the library version
 * </pre>
 *
 * This class is compiled for Java 8; {@code demo} and {@code report} live in
 * {@code com.datadoghq.profiler.tools} (Java 11, they read JFR with {@code jdk.jfr}) and are
 * reached reflectively, so {@code Main} itself loads everywhere.
 *
 * <p>Exit codes: 0 success, 1 the command failed, 2 bad usage.
 */
public final class Main {
    static final int OK = 0;
    static final int FAILED = 1;
    static final int USAGE = 2;

    private Main() {
    }

    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    static int run(String[] args, PrintStream out, PrintStream err) {
        if (args == null || args.length == 0) {
            usage(err);
            return USAGE;
        }
        String command = args[0];
        String[] rest = Arrays.copyOfRange(args, 1, args.length);
        switch (command) {
            case "demo":
                if (rest.length > 2) {
                    usage(err);
                    return USAGE;
                }
                return runTool("com.datadoghq.profiler.tools.Demo", rest, err);
            case "report":
                if (rest.length < 1 || rest.length > 2) {
                    usage(err);
                    return USAGE;
                }
                return runTool("com.datadoghq.profiler.tools.Report", rest, err);
            case "version":
            case "--version":
                out.println(version());
                return OK;
            case "help":
            case "-h":
            case "--help":
                usage(out);
                return OK;
            default:
                err.println("Unknown command: " + command);
                usage(err);
                return USAGE;
        }
    }

    static void usage(PrintStream s) {
        s.println("Usage: java -jar ddprof-lib.jar <command>");
        s.println();
        s.println("Commands:");
        s.println("  demo [seconds] [jfr-path]   profile a bundled CPU-bound workload (default 5 s),");
        s.println("                              then print its report and the recording's path");
        s.println("  report FILE.jfr             top methods by self samples, and the share of");
        s.println("                              samples whose stack could not be walked");
        s.println("  report FILE.jfr --memory    the profiler's native memory (last chunk's counters):");
        s.println("                              per category live, peak, avg, overhead, resident;");
        s.println("                              malloc arenas; lower/upper bounds of its RSS share");
        s.println("  version                     print the library version");
        s.println();
        s.println("demo and report need Java 11 or newer.");
    }

    /** The version from the jar's {@code ddprof-version.properties}, or "unknown". */
    static String version() {
        try (InputStream in = Main.class.getResourceAsStream("ddprof-version.properties")) {
            if (in != null) {
                Properties properties = new Properties();
                properties.load(in);
                return properties.getProperty("version", "unknown");
            }
        } catch (IOException e) {
            // fall through
        }
        return "unknown";
    }

    private static int runTool(String className, String[] args, PrintStream err) {
        Method run;
        try {
            run = Class.forName(className).getMethod("run", String[].class);
        } catch (UnsupportedClassVersionError e) {
            err.println("This command needs Java 11 or newer (running " + System.getProperty("java.version") + ").");
            return FAILED;
        } catch (ReflectiveOperationException | LinkageError e) {
            err.println("Cannot load " + className + ": " + e);
            return FAILED;
        }
        try {
            Object code = run.invoke(null, (Object) args);
            return code instanceof Integer ? (Integer) code : OK;
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            err.println("Error: " + cause);
            return FAILED;
        } catch (IllegalAccessException e) {
            err.println("Cannot run " + className + ": " + e);
            return FAILED;
        }
    }
}
