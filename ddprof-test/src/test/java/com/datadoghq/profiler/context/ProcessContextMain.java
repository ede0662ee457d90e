package com.datadoghq.profiler.context;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

import com.datadoghq.profiler.OTelContext;

/**
 * Publishes a process context the way dd-java-agent 1.56 does (the tracer's constructor, the
 * library from the jar, the six-argument {@code setProcessContext}), prints {@code ready} and
 * what it reads back, then waits for a line on stdin so the test can read it from outside.
 */
public final class ProcessContextMain {
    public static void main(String[] args) throws Exception {
        OTelContext ctx = new OTelContext(null, args[0], t -> System.out.println("error=" + t));
        ctx.setProcessContext("child-env", "child-host", "child-runtime", "child-svc", "9.9", "1.56.0");
        OTelContext.ProcessContext read = ctx.readProcessContext();
        System.out.println("service=" + (read == null ? null : read.serviceName));
        System.out.println("ready");
        System.out.flush();
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
    }
}
