package com.datadoghq.profiler.tools;

import java.io.File;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.UUID;

import com.datadoghq.profiler.Agent;

import com.sun.tools.attach.AgentInitializationException;
import com.sun.tools.attach.AgentLoadException;
import com.sun.tools.attach.AttachNotSupportedException;
import com.sun.tools.attach.VirtualMachine;

/**
 * {@code attach PID COMMAND}: loads the library's jar (ddprof-VERSION.jar, the one holding
 * {@link Agent}) as a Java agent into the running JVM {@code PID}
 * ({@code jdk.attach}, {@link VirtualMachine#loadAgent(String, String)}) and runs
 * {@code COMMAND} there, passed as one string, unchanged: {@code start,cpu=10ms,file=out.jfr},
 * {@code stop}, {@code status}, {@code dump,file=snapshot.jfr}, or any other profiler command.
 *
 * <p>The agent ({@code com.datadoghq.profiler.Agent#agentmain}) stores the outcome in a system
 * property of the target JVM, read back here over the same attach connection, so the reply and
 * the exit code say what happened there: 0 the command succeeded (its reply is printed), 1 it
 * failed or the JVM could not be attached to, 2 bad usage or a command the profiler refused.
 */
public final class Attach {
    static final String USAGE = String.join("\n",
            "Usage: attach PID COMMAND",
            "  COMMAND: start,cpu=10ms,file=out.jfr (any profiler command) | stop | status |",
            "           dump,file=snapshot.jfr (the recording so far, while profiling continues)");
    // Agent's protocol (Agent.ATTACH_PREFIX, Agent.RESULT_PROPERTY).
    static final String ATTACH_PREFIX = "@ddprof-attach:";
    static final String RESULT_PROPERTY = "ddprof.attach.result.";

    private Attach() {
    }

    private static int usageError(String problem) {
        System.err.println("attach: " + problem + "; run 'attach --help' for usage");
        return 2;
    }

    public static int run(String... args) {
        if (args.length == 1 && (args[0].equals("--help") || args[0].equals("-h"))) {
            System.out.println(USAGE);
            return 0;
        }
        if (args.length == 0) {
            System.err.println(USAGE);
            return 2;
        }
        if (args.length != 2) {
            return usageError(args.length < 2 ? "no command given after the process id"
                    : "unexpected argument '" + args[2] + "' (a profiler command is one argument, no spaces)");
        }
        String pid = args[0];
        String command = args[1];
        if (!pid.matches("\\d+")) {
            return usageError("not a process id: '" + pid + "'");
        }
        Path jar;
        try {
            jar = Paths.get(Agent.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (URISyntaxException | RuntimeException e) {
            System.err.println("Cannot tell where the ddprof jar is: " + e);
            return 1;
        }
        if (!jar.toString().endsWith(".jar") || !new File(jar.toString()).isFile()) {
            System.err.println("attach must load the profiler from the ddprof jar (java -jar ddprof-tools.jar attach ..."
                    + " with ddprof.jar on its class path), not from " + jar);
            return 1;
        }
        String id = UUID.randomUUID().toString();
        VirtualMachine vm;
        try {
            vm = VirtualMachine.attach(pid);
        } catch (AttachNotSupportedException | IOException e) {
            System.err.println("Cannot attach to JVM " + pid + ": " + e.getMessage());
            return 1;
        }
        try {
            try {
                vm.loadAgent(jar.toString(), ATTACH_PREFIX + id + ":" + command);
            } catch (AgentInitializationException e) {
                // agentmain threw: Agent catches everything, so this is a broken agent jar.
                System.err.println("The ddprof agent failed in JVM " + pid + ": " + e.getMessage());
                return 1;
            } catch (AgentLoadException e) {
                System.err.println("JVM " + pid + " could not load " + jar + " as an agent: " + e.getMessage());
                return 1;
            }
            String result = vm.getSystemProperties().getProperty(RESULT_PROPERTY + id);
            if (result == null) {
                System.err.println("The ddprof agent in JVM " + pid + " reported nothing for '" + command + "'");
                return 1;
            }
            int colon = result.indexOf(':');
            String status = result.substring(0, colon);
            String message = result.substring(colon + 1);
            switch (status) {
                case "ok":
                    System.out.println(message.isEmpty() ? "OK" : message);
                    return 0;
                case "usage":
                    System.err.println("JVM " + pid + " refused the profiler command '" + command + "': " + message);
                    return 2;
                default:
                    System.err.println("Profiler command '" + command + "' failed in JVM " + pid + ": " + message);
                    return 1;
            }
        } catch (IOException e) {
            System.err.println("Lost the attach connection to JVM " + pid + ": " + e.getMessage());
            return 1;
        } finally {
            try {
                vm.detach();
            } catch (IOException ignored) {
                // the target may have exited
            }
        }
    }
}
