package com.datadoghq.profiler;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Properties;
import java.util.Set;

/**
 * The command line of {@code java -jar ddprof-tools.jar <command>} and, for the commands that need
 * no tools, of {@code java -jar ddprof.jar <command>}:
 *
 * <pre>
 *   demo [seconds] [jfr-path]   profile a bundled CPU-bound workload, then print its report
 *   report FILE.jfr [--event K] per event kind: unwalked-stack share, then top methods
 *   report FILE.jfr --memory    the profiler's native memory by category, and its share of RSS
 *   convert --to FORMAT ... FILE.jfr [out]   collapsed stacks, pprof, OTLP or an HTML flame graph
 *   attach PID COMMAND          load the profiler into a running JVM and run COMMAND there
 *   version                     the library version
 *   help                        every command (COMMAND --help: that command's own)
 *   PROFILER-COMMAND            e.g. start,cpu=10ms,file=out.jfr: runs it in this JVM and prints the reply
 * </pre>
 *
 * <p>Like upstream's {@code Main}, anything that is a profiler command rather than one of the tools
 * above (it has a {@code =} or a {@code ,}, or is a bare action such as {@code status}) goes to
 * {@link JavaProfiler#execute}. A session it starts is stopped before exiting, which completes its
 * {@code file=} recording.
 *
 * <p>{@code demo}, {@code report}, {@code convert} and {@code attach} live in the tools jar
 * (com.datadoghq:ddprof-tools, package {@code com.datadoghq.profiler.tools}, Java 11), whose
 * manifest names this class as its main class and the library jar as its class path; they are
 * reached reflectively, so {@code Main} itself is compiled for Java 8 and loads everywhere. Run
 * from the library jar alone, a tool command exits 2 with one line naming the tools jar.
 *
 * <p>Exit codes: 0 success, 1 the command failed, 2 bad usage (an invalid profiler command too).
 */
public final class Main {
    static final int OK = 0;
    static final int FAILED = 1;
    static final int USAGE = 2;
    /** {@link JavaProfiler#getStatus()}'s line while profiling (ten spaces). */
    private static final String RUNNING_LINE = "Running          : true";

    /** The profiler's actions that make a command on their own; {@code version} is the tool's. */
    private static final Set<String> ACTIONS =
            new HashSet<>(Arrays.asList("start", "resume", "stop", "check", "status", "list"));

    /** The tool commands, as the help and the unknown-command error list them. */
    static final String COMMANDS = "demo, report, convert, attach, version, help";
    /** The tools jar's name, as the messages give it. */
    static final String TOOLS_JAR = "ddprof-tools-" + version() + ".jar";

    private Main() {
    }

    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err, true));
    }

    static int run(String[] args, PrintStream out, PrintStream err) {
        return run(args, out, err, false);
    }

    /** {@code ownJvm}: the command is this JVM's whole run ({@link #main}), which a tool may tune. */
    private static int run(String[] args, PrintStream out, PrintStream err, boolean ownJvm) {
        if (args == null || args.length == 0) {
            usage(err);
            return USAGE;
        }
        String command = args[0];
        String[] rest = Arrays.copyOfRange(args, 1, args.length);
        switch (command) {
            case "demo":
                return runTool(command, "com.datadoghq.profiler.tools.Demo", rest, err, false);
            case "report":
                return runTool(command, "com.datadoghq.profiler.tools.Report", rest, err, false);
            case "convert":
                return runTool(command, "com.datadoghq.profiler.tools.convert.Convert", rest, err, ownJvm);
            case "attach":
                return runTool(command, "com.datadoghq.profiler.tools.Attach", rest, err, false);
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
                if (isProfilerCommand(command)) {
                    if (rest.length > 0) {
                        err.println("A profiler command is a single argument (comma-separated, no spaces); got also: "
                                + String.join(" ", rest) + "; run 'help' for usage");
                        return USAGE;
                    }
                    return runProfilerCommand(command, out, err);
                }
                err.println("Unknown command: " + command + " (commands: " + COMMANDS
                        + ", or a profiler command such as start,cpu=10ms,file=out.jfr); run 'help' for usage");
                return USAGE;
        }
    }

    static boolean isProfilerCommand(String command) {
        return command.indexOf('=') >= 0 || command.indexOf(',') >= 0 || ACTIONS.contains(command);
    }

    private static int runProfilerCommand(String command, PrintStream out, PrintStream err) {
        JavaProfiler profiler;
        try {
            profiler = JavaProfiler.getInstance();
        } catch (IOException | LinkageError e) {
            err.println("Cannot load the ddprof native library: " + e);
            return FAILED;
        }
        String reply;
        try {
            reply = profiler.execute(command);
        } catch (IllegalArgumentException e) {
            // The native parser names the option and the value it refused.
            err.println("Invalid profiler command '" + command + "': " + e.getMessage());
            return USAGE;
        } catch (IllegalStateException | IOException e) {
            err.println("Profiler command '" + command + "' failed: " + e.getMessage());
            return FAILED;
        }
        if (!reply.isEmpty()) {
            out.print(reply.endsWith("\n") ? reply : reply + "\n");
        }
        // This JVM runs nothing else and exits next; stopping here rather than in the exit hook
        // completes the recording while a failure can still be reported and change the exit code.
        if (profiler.getStatus().contains(RUNNING_LINE)) {
            try {
                profiler.stop();
            } catch (IllegalStateException e) {
                err.println("Stopping the profiler failed: " + e.getMessage());
                return FAILED;
            }
        }
        return OK;
    }

    /**
     * The top-level help: every command. The event kinds and formats are listed here by hand,
     * because this class is Java 8 and cannot load the tools' Java 11 classes that define them;
     * CliUsageTest checks the lists against them.
     */
    static void usage(PrintStream s) {
        s.println("Usage: java -jar ddprof-tools.jar <command>");
        s.println();
        s.println("Commands (COMMAND --help prints a command's own help):");
        s.println("  demo [seconds] [jfr-path]   profile a bundled CPU-bound workload (default 5 s),");
        s.println("                              then print its report and the recording's path");
        s.println("  report FILE.jfr [--event cpu|wall|alloc|live|malloc|socket]");
        s.println("                              per event kind: the share of samples whose stack could");
        s.println("                              not be walked, then the top methods by self and total");
        s.println("  report FILE.jfr --memory    the profiler's native memory (last chunk's counters):");
        s.println("                              per category live, peak, avg, overhead, resident;");
        s.println("                              malloc arenas; lower/upper bounds of its RSS share");
        s.println("  convert --to collapsed|pprof|otlp|html|heatmap [--event cpu|wall|alloc|live|malloc|socket]");
        s.println("          [--threads] [--simple] [--lines] [--from T] [--to T] FILE.jfr [out]");
        s.println("                              convert a recording (convert --help for details)");
        s.println("  attach PID COMMAND          load the profiler into the running JVM PID and run COMMAND");
        s.println("                              there: start,cpu=10ms,file=out.jfr | stop | status |");
        s.println("                              dump,file=snapshot.jfr (exit code 0 only if it succeeded)");
        s.println("  version                     print the library version");
        s.println("  help                        print this help (also -h, --help)");
        s.println("  PROFILER-COMMAND            run a profiler command in this JVM and print its reply,");
        s.println("                              e.g. start,cpu=10ms,file=out.jfr (stopped again before");
        s.println("                              exiting, which completes the recording), status, check");
        s.println();
        s.println("demo, report, convert and attach are in the tools jar (" + TOOLS_JAR + ", with");
        s.println("ddprof-" + version() + ".jar beside it) and need Java 11 or newer; the library jar");
        s.println("(java -jar ddprof.jar) runs version, help and profiler commands.");
        s.println("Exit codes: 0 success (help included), 1 the command failed, 2 bad usage or an invalid");
        s.println("profiler command (one line on stderr says what is wrong).");
    }

    /** The version from the jar's {@code ddprof-version.properties}, or "unknown". */
    public static String version() {
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

    /** With {@code ownJvm}, the tool's {@code runOwnJvm} where it has one (its {@code run} otherwise). */
    private static int runTool(String command, String className, String[] args, PrintStream err, boolean ownJvm) {
        Method run;
        try {
            Class<?> tool = Class.forName(className);
            run = null;
            if (ownJvm) {
                try {
                    run = tool.getMethod("runOwnJvm", String[].class);
                } catch (NoSuchMethodException e) {
                    // a tool that does not tune its JVM
                }
            }
            if (run == null) {
                run = tool.getMethod("run", String[].class);
            }
        } catch (ClassNotFoundException e) {
            // The library jar alone: the tools are a separate artifact.
            err.println("'" + command + "' is in the tools jar, not the library: java -jar " + TOOLS_JAR + " "
                    + command + " (com.datadoghq:ddprof-tools; ddprof-" + version() + ".jar beside it)");
            return USAGE;
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
