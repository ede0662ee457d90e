package com.datadoghq.profiler.tracer;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.JmcParser;
import com.datadoghq.profiler.testing.TestEnv;
import datadog.trace.api.Trace;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Named;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The released Datadog tracers ({@code com.datadoghq:dd-java-agent}, versions in ddprof-test's pom:
 * 1.56.0, which calls java-profiler 1.34's API, and 1.68.1, the newest, which also sends
 * {@code nativemem}, {@code natsock} and {@code fjmethodid=false} here) with our library in place of
 * its own java-profiler, tracing a small app ({@link TracedApp}) and
 * uploading to a fake agent on 127.0.0.1 ({@link FakeIntake}). See docs/compatibility.md, "Tested
 * with the real tracer", for what it checks and how to run it alone.
 *
 * <p>System properties (set by the pom): {@code ddprof.itest.agent.jars} (the tracers, comma-separated,
 * copied from Maven Central into target/tracer/), {@code ddprof.itest.dir} (runs are kept in
 * {@code <dir>/jdkNN-VERSION-patched} or {@code -unpatched}: agent.log, the app's output, the uploads),
 * {@code ddprof.itest.unpatched=true} (run the tracer as released, with its own java-profiler: the
 * baseline that shows the checks can pass) and {@code ddprof.itest.jdks} (the JDK feature releases
 * to run on, default all of the matrix).
 */
class RealTracerTest {
    /** Worker threads of the app, and the CPU each spends in spans. */
    private static final int THREADS = 2;
    private static final long CPU_MILLIS_PER_THREAD = 2000;
    /** The tracer's CPU sampling interval (profiling.ddprof.cpu.interval.ms). */
    private static final int CPU_INTERVAL_MS = 10;
    /** profiling.upload.period, seconds. */
    private static final int UPLOAD_PERIOD_S = 2;
    /** Uploads that must arrive after the work is done, so that one covers all of it. */
    private static final int UPLOADS_AFTER_WORK = 2;

    /** Options the newest tracer adds to its start command with the opt-ins of {@link #agentSettings}. */
    private static final List<String> NEWEST_OPTIONS = Arrays.asList(",nativemem=", ",natsock", ",fjmethodid=false");

    /** Agent log lines that mean the tracer hit something of ours that is missing or broken. */
    private static final List<String> BAD_LOG_PATTERNS = Arrays.asList(
            "UnsatisfiedLinkError",
            "NoSuchMethodError",
            "NoSuchFieldError",
            "NoClassDefFoundError",
            "AbstractMethodError",
            "IncompatibleClassChangeError",
            "ClassNotFoundException: com.datadoghq.profiler",
            "profiling context labeling not available",
            "Throwable thrown while starting profiling agent",
            "Failed to set context",
            "Failed to clear context",
            "Unable to set OnError flag",
            "Unable to set OnOutOfMemoryError flag",
            "Failed to initialize",
            "Failed to start profiling",
            "Failed to record",
            "Failed to register process context");

    /** The tracers of {@code ddprof.itest.agent.jars}, each named by its version. */
    static Stream<Named<Path>> agents() {
        String jars = System.getProperty("ddprof.itest.agent.jars", "");
        List<Named<Path>> agents = new ArrayList<>();
        for (String jar : jars.split(",")) {
            if (!jar.trim().isEmpty()) {
                Path p = requiredFile("ddprof.itest.agent.jars", jar.trim());
                agents.add(Named.of(agentVersion(p), p));
            }
        }
        if (agents.isEmpty()) {
            throw new IllegalStateException("system property ddprof.itest.agent.jars is empty"
                    + " (run through Maven: ddprof-test's pom copies the tracers before the tests)");
        }
        return agents.stream();
    }

    /** "1.68.1" of dd-java-agent-1.68.1.jar. */
    static String agentVersion(Path jar) {
        String n = jar.getFileName().toString();
        return n.replaceFirst("^dd-java-agent-", "").replaceFirst("\\.jar$", "");
    }

    /** Whether the tracer has the profiler options of 1.68 (nativemem, natsock, fjmethodid=false). */
    static boolean hasNewestOptions(String version) {
        String[] v = version.split("[.-]");
        try {
            int major = Integer.parseInt(v[0]);
            int minor = v.length > 1 ? Integer.parseInt(v[1]) : 0;
            return major > 1 || (major == 1 && minor >= 68);
        } catch (NumberFormatException e) {
            return false;
        }
    }

    @ParameterizedTest(name = "dd-java-agent {0}")
    @MethodSource("agents")
    void tracerRunsWithOurProfiler(Path agentJar) throws Exception {
        int jdk = TestEnv.jdk();
        String jdks = System.getProperty("ddprof.itest.jdks", "11,17,21,25");
        Assumptions.assumeTrue(Arrays.asList(jdks.split(",")).contains(String.valueOf(jdk)),
                "ddprof.itest.jdks=" + jdks + " leaves out JDK " + jdk);
        boolean unpatched = Boolean.getBoolean("ddprof.itest.unpatched");
        String version = agentVersion(agentJar);
        boolean newest = hasNewestOptions(version);
        Path dir = Paths.get(System.getProperty("ddprof.itest.dir", "target/real-tracer")).toAbsolutePath()
                .resolve("jdk" + jdk + "-" + version + (unpatched ? "-unpatched" : "-patched"));
        deleteTree(dir);
        Files.createDirectories(dir.resolve("tmp"));

        Checks checks = new Checks(dir);
        long t0 = System.nanoTime();

        // 1. The agent under test.
        Path runAgent = agentJar;
        if (!unpatched) {
            runAgent = dir.resolve("dd-java-agent-patched.jar");
            // ddprof.itest.keep=ContextSetter,... leaves those tracer classes in: only for trying
            // the harness on a mixed jar.
            Set<String> keep = new HashSet<>();
            for (String k : System.getProperty("ddprof.itest.keep", "").split(",")) {
                if (!k.trim().isEmpty()) {
                    keep.add(k.trim());
                }
            }
            TracerAgentJar.Patch patch = TracerAgentJar.patch(agentJar, TestEnv.libJar(), runAgent, keep);
            checks.note("agent: " + agentJar.getFileName() + " patched with " + TestEnv.libJar().getFileName() + " in "
                    + (System.nanoTime() - t0) / 1_000_000 + " ms: " + patch.describe());
            List<String> index = TracerAgentJar.verifyIndex(runAgent, patch);
            checks.check(index.isEmpty(), "the agent's index finds our classes and library", String.join("\n    ", index));
        } else {
            checks.note("agent: " + agentJar.getFileName() + " UNPATCHED (its own java-profiler: the baseline)");
        }

        try (FakeIntake intake = new FakeIntake(dir.resolve("uploads"))) {
            // 2. The traced app under the agent.
            Path log = dir.resolve("agent.log");
            ChildJvm child = new ChildJvm()
                    .classpath(jarOf(Trace.class))
                    .jvmArgs("-javaagent:" + runAgent, "-Xmx256m")
                    .jvmArgs(agentSettings(intake, log, dir, newest).toArray(new String[0]))
                    .main(TracedApp.class, dir.toString(), String.valueOf(THREADS), String.valueOf(CPU_MILLIS_PER_THREAD))
                    .timeout(Duration.ofSeconds(150));
            ExecutorService runner = Executors.newSingleThreadExecutor(r -> {
                Thread t = new Thread(r, "real-tracer-child");
                t.setDaemon(true);
                return t;
            });
            ChildJvm.Result result;
            long stopNanos;
            try {
                Future<ChildJvm.Result> running = runner.submit(() -> child.run(dir));
                // Work starts once the tracer has wired the profiler into its context integration
                // (it does so in premain; the wait is a bound, not a pace).
                waitUntil(() -> running.isDone() || logHas(log, "Initializing profiler context integration"), 60);
                long goNanos = System.nanoTime();
                Files.write(dir.resolve("go"), new byte[0]);
                waitUntil(() -> running.isDone() || Files.exists(dir.resolve("done")), 120);
                long doneNanos = System.nanoTime();
                waitUntil(() -> running.isDone()
                        || intake.uploadNanos().stream().filter(n -> n > doneNanos).count() >= UPLOADS_AFTER_WORK,
                        UPLOADS_AFTER_WORK * UPLOAD_PERIOD_S + 25);
                stopNanos = System.nanoTime();
                checks.note(String.format("timeline: agent ready (go) %d ms, work done %d ms, stop %d ms after the start",
                        (goNanos - t0) / 1_000_000, (doneNanos - t0) / 1_000_000, (stopNanos - t0) / 1_000_000));
                Files.write(dir.resolve("stop"), new byte[0]);
                result = running.get(160, TimeUnit.SECONDS);
            } finally {
                runner.shutdownNow();
            }
            Files.write(dir.resolve("app.stdout"), result.stdout.getBytes(StandardCharsets.UTF_8));
            Files.write(dir.resolve("app.stderr"), result.stderr.getBytes(StandardCharsets.UTF_8));
            checks.note("child JVM: exit " + result.exitCode + (result.timedOut ? " (timed out)" : "") + ", "
                    + (System.nanoTime() - t0) / 1_000_000 + " ms since the test started");

            verify(checks, result, log, intake, stopNanos, newest, unpatched);
        }
        checks.note("test took " + (System.nanoTime() - t0) / 1_000_000 + " ms");
        // The patched agent (33 MB) is kept only for a failed run.
        if (checks.allPassed() && !runAgent.equals(agentJar)) {
            Files.delete(runAgent);
        }
        checks.finish();
    }

    private static List<String> agentSettings(FakeIntake intake, Path log, Path dir, boolean newest) {
        List<String> settings = new ArrayList<>(Arrays.asList(
                "-Ddd.trace.agent.url=" + intake.url(),
                "-Ddd.agent.host=127.0.0.1",
                "-Ddd.trace.agent.port=" + intake.port(),
                "-Ddd.service=itest",
                "-Ddd.env=itest",
                "-Ddd.version=1",
                "-Ddd.profiling.enabled=true",
                "-Ddd.profiling.ddprof.enabled=true",
                "-Ddd.profiling.ddprof.cpu.enabled=true",
                "-Ddd.profiling.ddprof.cpu.interval.ms=" + CPU_INTERVAL_MS,
                // Wall clock as the tracer sets it up by default (wall=~50m,filter=0, addThread and
                // removeThread on span activation); allocation and live heap are not sampled yet.
                "-Ddd.profiling.ddprof.wall.enabled=true",
                // The OTel process context (OTelContext natives): off by default in 1.56.
                "-Ddd.profiling.experimental.process_context.enabled=true",
                "-Ddd.profiling.ddprof.alloc.enabled=false",
                "-Ddd.profiling.ddprof.liveheap.enabled=false",
                "-Ddd.profiling.upload.period=" + UPLOAD_PERIOD_S,
                "-Ddd.profiling.start-delay=0",
                "-Ddd.profiling.start-force-first=true",
                "-Ddd.profiling.debug.upload.compression=off",
                "-Ddd.profiling.upload.compression=off",
                "-Ddd.profiling.tempdir=" + dir.resolve("tmp"),
                "-Ddd.trace.debug=false",
                "-Ddd.trace.startup.logs=true",
                "-Ddd.instrumentation.telemetry.enabled=false",
                "-Ddd.remote_config.enabled=false",
                "-Ddd.jmxfetch.enabled=false",
                "-Ddd.trace.health.metrics.enabled=false",
                "-Ddd.dynamic.instrumentation.enabled=false",
                "-Ddd.symbol.database.upload.enabled=false",
                "-Ddd.data.streams.enabled=false",
                "-Ddd.trace.stats.computation.enabled=false",
                // Only the @Trace integration: instrumenting for the others is most of the start-up.
                "-Ddd.integrations.enabled=false",
                "-Ddd.integration.trace.enabled=true",
                // Exception profiling (datadog.ExceptionSample in the tracer's own JFR chunk), which
                // must not show exceptions of ours.
                "-Ddd.integration.throwables.enabled=true",
                "-Ddatadog.slf4j.simpleLogger.logFile=" + log,
                // Debug only where the profiler integration logs what went wrong.
                "-Ddatadog.slf4j.simpleLogger.log.datadog.trace.bootstrap.Agent=debug",
                "-Ddatadog.slf4j.simpleLogger.log.com.datadog.profiling=debug",
                "-Ddatadog.slf4j.simpleLogger.log.datadog.libs.ddprof=debug",
                "-Ddatadog.slf4j.simpleLogger.log.datadog.crashtracking=debug",
                // Where an error thrown inside instrumentation advice (the @Trace span start) is logged.
                "-Ddatadog.slf4j.simpleLogger.log.datadog.trace.bootstrap.ExceptionLogger=debug",
                "-Ddatadog.slf4j.simpleLogger.log.datadog.trace.agent.core.StatusLogger=info"));
        if (newest) {
            // The tracer's opt-in profiler options of 1.68: nativemem=524288, natsock, fjmethodid=false.
            settings.add("-Ddd.profiling.experimental.ddprof.nativemem.enabled=true");
            settings.add("-Ddd.profiling.experimental.ddprof.nativesocket.enabled=true");
            settings.add("-Ddd.profiling.experimental.ddprof.jmethodid_optim.enabled=true");
        }
        return settings;
    }

    private static void verify(Checks checks, ChildJvm.Result result, Path log, FakeIntake intake, long stopNanos,
            boolean newest, boolean unpatched) throws IOException {
        List<String> logLines = Files.exists(log) ? Files.readAllLines(log, StandardCharsets.UTF_8) : new ArrayList<>();
        List<String> out = Arrays.asList(result.stdout.split("\n"));

        // The app ran to its end, on its own.
        checks.check(!result.timedOut && result.exitCode == 0, "the traced app exits 0 on its own",
                "exit code " + result.exitCode + (result.timedOut ? ", timed out" : "") + "\n" + tail(result.stderr, 3000));
        List<String> appErrors = new ArrayList<>();
        out.stream().filter(l -> l.startsWith("ERROR")).forEach(appErrors::add);
        Arrays.stream(result.stderr.split("\n")).filter(l -> l.contains("Exception in thread") || l.contains("Error:"))
                .forEach(appErrors::add);
        checks.check(appErrors.isEmpty(), "no error reaches the app's threads", first(appErrors, 5));
        List<String> crashes;
        try (Stream<Path> files = Files.list(log.getParent())) {
            crashes = files.map(f -> f.getFileName().toString()).filter(n -> n.startsWith("hs_err")).collect(Collectors.toList());
        }
        checks.check(crashes.isEmpty(), "the JVM does not crash (no hs_err file)", String.join(", ", crashes));

        // The log has no error of the profiler integration (first: it names what is missing),
        // and profiling started with ddprof.
        for (String pattern : BAD_LOG_PATTERNS) {
            List<String> hits = grep(logLines, pattern);
            hits.addAll(grep(Arrays.asList(result.stderr.split("\n")), pattern));
            checks.check(hits.isEmpty(), "agent log and stderr free of '" + pattern + "'",
                    hits.isEmpty() ? "" : hits.size() + " lines, the first: " + first(hits, 1) + firstStackFrom(logLines, pattern));
        }

        String commandLine = firstLine(logLines, "Datadog profiler command line:");
        checks.check(commandLine != null, "the tracer starts ddprof (agent log: 'Datadog profiler command line:')",
                "no such line; the tracer's lines about it:\n    " + first(ddprofLines(logLines), 8));
        String started = firstLine(logLines, "DatadogProfiler.execute(start");
        checks.check(started != null && started.contains("= Profiling started"),
                "ddprof accepts the tracer's start command", started == null ? "no DatadogProfiler.execute(start...) line" : started);
        if (newest) {
            List<String> missing = new ArrayList<>();
            for (String option : NEWEST_OPTIONS) {
                if (commandLine == null || !commandLine.contains(option)) {
                    missing.add(option);
                }
            }
            checks.check(missing.isEmpty(), "the tracer sends its 1.68 options " + NEWEST_OPTIONS,
                    "missing " + missing + " in: " + commandLine);
        }
        checks.check(logHas(logLines, "Profiling has started"), "the profiling agent starts (agent log: 'Profiling has started')",
                first(ddprofLines(logLines), 8));
        // The tracer published the OTel process context through our OTelContext.
        String procCtx = out.stream().filter(l -> l.startsWith("PROCCTX")).findFirst().orElse("no PROCCTX line");
        checks.check(procCtx.contains("service.name=itest") && procCtx.contains("deployment.environment.name=itest"),
                "the tracer publishes the OTel process context (an outside reader finds it)", procCtx);
        // The app's spans exist and reached the intake.
        Map<Long, Long> rootOfChild = new HashMap<>();
        Map<String, Long> cpuByThread = new LinkedHashMap<>();
        Set<Long> roots = new HashSet<>();
        int requests = 0;
        int zeroIds = 0;
        for (String l : out) {
            String[] f = l.trim().split(" ");
            if (f[0].equals("SPAN") && f.length == 4) {
                requests++;
                long root = parseId(f[2]);
                long span = parseId(f[3]);
                if (root == 0 || span == 0) {
                    zeroIds++;
                    continue;
                }
                roots.add(root);
                rootOfChild.put(span, root);
            } else if (f[0].equals("CPU") && f.length == 3) {
                cpuByThread.put(f[1], Long.parseLong(f[2]));
            }
        }
        long cpuMillis = cpuByThread.values().stream().mapToLong(Long::longValue).sum();
        checks.note("app: " + requests + " requests, " + cpuMillis + " ms CPU in spans " + cpuByThread);
        checks.check(requests > 0 && zeroIds == 0, "the app sees a span id in every request (CorrelationIdentifier)",
                zeroIds + " of " + requests + " requests saw span id 0 (no span)");
        Set<Long> appSpans = new HashSet<>(rootOfChild.keySet());
        appSpans.addAll(roots);
        Set<Long> received = new HashSet<>(intake.spanIds());
        long arrived = appSpans.stream().filter(received::contains).count();
        checks.note("intake: " + intake.tracePayloads() + " trace payloads, " + intake.traceCountHeader() + " traces, "
                + received.size() + " spans; requests " + intake.requests());
        checks.check(!appSpans.isEmpty() && arrived >= 0.9 * appSpans.size(), "the app's spans reach the intake (>= 90%)",
                arrived + " of the app's " + appSpans.size() + " spans arrived");
        checks.check(intake.problems().isEmpty(), "the intake understood every request", first(intake.problems(), 5));

        // Uploads: each periodic one has a readable ddprof chunk.
        List<Path> uploads = intake.uploads();
        List<Long> arrivals = intake.uploadNanos();
        List<RecordedEvent> samples = new ArrayList<>();
        List<RecordedEvent> wallSamples = new ArrayList<>();
        List<RecordedEvent> endpoints = new ArrayList<>();
        List<RecordedEvent> exceptions = new ArrayList<>();
        List<RecordedEvent> configs = new ArrayList<>();
        List<String> fjmethodid = new ArrayList<>();
        long nativeMem = 0;
        long natsock = 0;
        List<String> missingChunk = new ArrayList<>();
        int periodic = 0;
        for (int u = 0; u < uploads.size(); u++) {
            boolean beforeStop = arrivals.get(u) < stopNanos;
            periodic += beforeStop ? 1 : 0;
            UploadContent c = read(uploads.get(u));
            samples.addAll(c.executionSamples);
            wallSamples.addAll(c.methodSamples);
            endpoints.addAll(c.endpoints);
            exceptions.addAll(c.exceptionSamples);
            configs.addAll(c.configs);
            fjmethodid.addAll(c.fjmethodid);
            nativeMem += c.nativeMem;
            natsock += c.natsock;
            checks.note("upload " + uploads.get(u).getFileName() + (beforeStop ? "" : " (at shutdown)") + ": " + c.describe());
            // An upload at shutdown may carry an empty ddprof chunk that the JDK's parser
            // rejects (upstream's does: an empty Package pool); it is not counted.
            if (beforeStop && c.ddprofChunks == 0) {
                missingChunk.add(uploads.get(u).getFileName() + ": " + c.describe());
            }
        }
        int minUploads = UPLOADS_AFTER_WORK;
        checks.check(periodic >= minUploads, "at least " + minUploads + " profile uploads arrive while the app runs",
                periodic + " arrived (" + uploads.size() + " in all)");
        checks.check(periodic > 0 && missingChunk.isEmpty(),
                "every periodic upload holds a ddprof chunk (datadog.DatadogProfilerConfig; JDK's or JMC's parser)",
                periodic == 0 ? "no upload" : String.join("\n    ", missingChunk));

        if (newest) {
            // What those options turn on, as the ddprof chunks say it: modeMask bits 16 (NATIVEMEM)
            // and 64 (NATIVESOCKET) in every DatadogProfilerConfig, malloc samples, and (ours) the
            // fjmethodid setting in force. Socket events depend on the tracer's own I/O: counted only.
            List<Long> masks = configs.stream().map(e -> e.getLong("modeMask")).distinct().collect(Collectors.toList());
            checks.check(!masks.isEmpty() && masks.stream().allMatch(m -> (m & (16 | 64)) == (16 | 64)),
                    "every DatadogProfilerConfig has nativemem and natsock on (modeMask bits 16, 64)", "modeMasks " + masks);
            checks.note("native memory: " + nativeMem + " datadog.NativeMemoryAllocation, sockets: " + natsock
                    + " datadog.NativeSocketEvent in the ddprof chunks");
            checks.check(nativeMem > 0, "ddprof chunks hold datadog.NativeMemoryAllocation events", nativeMem + "");
            if (!unpatched) {
                checks.check(!fjmethodid.isEmpty() && fjmethodid.stream().allMatch("false"::equals),
                        "the fjmethodid setting in force is false (jdk.ActiveSetting)", "values " + fjmethodid);
            }
        }

        // The tracer's exception profile (its own JFR chunk) shows no exception of ours: a
        // class-lookup miss of our classes while its class loader asks its parent first, or a
        // reflective lookup of a method the JDK lacks.
        Set<String> ourClasses = ourClasses();
        List<String> ours = exceptions.stream().filter(e -> isOurs(e, ourClasses)).map(e -> describeException(e, ourClasses))
                .collect(Collectors.toList());
        checks.note("exception profile: " + exceptions.size() + " datadog.ExceptionSample in the tracer's chunks");
        if (unpatched) {
            // The tracer's own java-profiler has classes of the same names; 1.52.1 loads one on the
            // first span's thread (ContextValueCache$Entry): reported, not a check of ours.
            checks.note("of those, naming or created below a class named as one of ours: " + ours.size()
                    + (ours.isEmpty() ? "" : "\n    " + first(ours, 10)));
        } else {
            checks.check(ours.isEmpty(), "the application's exception profile holds no exception of ours",
                    ours.size() + " of " + exceptions.size() + ":\n    " + first(ours, 10));
        }

        // Samples carry the spans the app created.
        List<RecordedEvent> inSpans = samples.stream()
                .filter(e -> {
                    String t = JfrReader.threadName(e);
                    return t != null && t.startsWith(TracedApp.WORKER_PREFIX) && JfrReader.contains(e, TracedApp.class, "compute");
                })
                .collect(Collectors.toList());
        long expected = cpuMillis / CPU_INTERVAL_MS;
        long minSamples = Math.max(20, expected / 5);
        // In weight: on a busy host timer expirations pile up and arrive as one heavier sample.
        long inSpansWeight = inSpans.stream().mapToLong(e -> e.getLong("weight")).sum();
        checks.note("samples: " + samples.size() + " datadog.ExecutionSample, " + inSpans.size()
                + " on the workers in TracedApp.compute, weight " + inSpansWeight + " (" + expected + " if every "
                + CPU_INTERVAL_MS + " ms of their CPU were sampled)");
        checks.check(inSpans.size() >= 20 && inSpansWeight >= minSamples,
                "CPU samples of the workers in TracedApp.compute: >= 20, of weight >= " + minSamples
                        + " (1/5 of their CPU time / interval)",
                inSpans.size() + " samples of weight " + inSpansWeight);
        long withAppSpan = inSpans.stream().filter(e -> rootOfChild.containsKey(e.getLong("spanId"))).count();
        long withSpan = inSpans.stream().filter(e -> e.getLong("spanId") != 0).count();
        checks.check(!inSpans.isEmpty() && withAppSpan >= 0.8 * inSpans.size(),
                "samples in TracedApp.compute carry the span the app was in (spanId, >= 80%)",
                withAppSpan + " of " + inSpans.size() + " carry a spanId of the app's (" + withSpan + " a non-zero one); "
                        + "first spanIds " + inSpans.stream().limit(5).map(e -> Long.toUnsignedString(e.getLong("spanId")))
                        .collect(Collectors.toList()));
        long rightRoot = inSpans.stream().filter(e -> {
            Long root = rootOfChild.get(e.getLong("spanId"));
            return root != null && root == e.getLong("localRootSpanId");
        }).count();
        checks.check(withAppSpan > 0 && rightRoot >= 0.99 * withAppSpan,
                "those samples carry their span's local root (localRootSpanId)",
                rightRoot + " of " + withAppSpan + " match");
        long rightOperation = inSpans.stream().filter(e -> rootOfChild.containsKey(e.getLong("spanId"))
                && "itest.compute".equals(attribute(e, "_dd.trace.operation"))).count();
        checks.check(withAppSpan > 0 && rightOperation >= 0.99 * withAppSpan,
                "those samples carry the span's operation (attribute _dd.trace.operation = itest.compute)",
                rightOperation + " of " + withAppSpan + (inSpans.isEmpty() ? "" : "; fields of a sample: "
                        + inSpans.get(0).getFields().stream().map(v -> v.getName()).collect(Collectors.toList())));

        // Wall samples: the tracer registers a worker while a span is active, so the workers' wall
        // samples fall in the app's spans. At 50 ms their ~2 s of CPU in spans give ~40 per worker.
        List<RecordedEvent> wallWorkers = wallSamples.stream().filter(e -> {
            String t = JfrReader.threadName(e);
            return t != null && t.startsWith(TracedApp.WORKER_PREFIX);
        }).collect(Collectors.toList());
        long wallInApp = wallWorkers.stream().filter(e -> appSpans.contains(e.getLong("spanId"))).count();
        checks.note("wall: " + wallSamples.size() + " datadog.MethodSample, " + wallWorkers.size() + " on the workers, "
                + wallInApp + " of those in the app's spans");
        checks.check(wallWorkers.size() >= 10 && wallInApp >= 0.8 * wallWorkers.size(),
                "wall samples of the workers (>= 10) carry the app's spans (>= 80%)",
                wallInApp + " of " + wallWorkers.size());

        // Endpoints: the tracer records each root span's resource.
        List<RecordedEvent> appEndpoints = endpoints.stream()
                .filter(e -> roots.contains(e.getLong("localRootSpanId"))).collect(Collectors.toList());
        long rightEndpoint = appEndpoints.stream().filter(e -> "itest-request".equals(e.getString("endpoint"))
                && "itest.request".equals(e.getString("operation"))).count();
        checks.check(!roots.isEmpty() && appEndpoints.size() >= 0.5 * roots.size() && rightEndpoint == appEndpoints.size(),
                "ddprof's datadog.Endpoint events name the app's root spans (>= 50%, endpoint itest-request, operation itest.request)",
                appEndpoints.size() + " of " + roots.size() + " roots have one (" + rightEndpoint + " right); "
                        + endpoints.size() + " Endpoint events in all");
    }

    /** The classes of our jar (com.datadoghq:ddprof), by name: what "ours" means below. */
    static Set<String> ourClasses() throws IOException {
        Set<String> names = new HashSet<>();
        try (java.util.zip.ZipFile jar = new java.util.zip.ZipFile(TestEnv.libJar().toFile())) {
            jar.stream().map(java.util.zip.ZipEntry::getName)
                    .filter(n -> n.startsWith("com/datadoghq/profiler/") && n.endsWith(".class"))
                    .forEach(n -> names.add(n.substring(0, n.length() - ".class".length()).replace('/', '.')));
        }
        return names;
    }

    /** An exception sample whose message names a class of ours or that was created below one of our frames. */
    static boolean isOurs(RecordedEvent e, Set<String> ours) {
        return ourWord(e, ours) != null || ourFrame(e, ours) != null;
    }

    private static String ourWord(RecordedEvent e, Set<String> ours) {
        String message = e.hasField("message") ? e.getString("message") : null;
        if (message == null) {
            return null;
        }
        for (String word : message.split("[^A-Za-z0-9_.$]+")) {
            if (ours.contains(word)) {
                return word;
            }
        }
        return null;
    }

    private static String ourFrame(RecordedEvent e, Set<String> ours) {
        return e.getStackTrace() == null ? null : e.getStackTrace().getFrames().stream()
                .filter(f -> f.getMethod() != null && ours.contains(f.getMethod().getType().getName()))
                .findFirst().map(f -> f.getMethod().getType().getName() + "." + f.getMethod().getName()).orElse(null);
    }

    private static String describeException(RecordedEvent e, Set<String> ours) {
        String type = e.hasField("type") ? e.getString("type") : "?";
        String message = e.hasField("message") ? e.getString("message") : null;
        String frame = ourFrame(e, ours);
        return type + ": " + message + (frame == null ? "" : " at " + frame);
    }

    /** The events of one upload, chunk by chunk (a chunk the JDK parser rejects is counted, not read). */
    static final class UploadContent {
        int chunks;
        int ddprofChunks;
        /** Events of those names in chunks that are not ddprof's. */
        int otherEndpoints;
        int otherSamples;
        /** ExecutionSample events of ddprof chunks that only JMC's parser reads (not in the checks). */
        long jmcOnlySamples;
        final List<String> unreadable = new ArrayList<>();
        final List<RecordedEvent> executionSamples = new ArrayList<>();
        final List<RecordedEvent> methodSamples = new ArrayList<>();
        final List<RecordedEvent> endpoints = new ArrayList<>();
        /** The tracer's exception profile: datadog.ExceptionSample of chunks that are not ddprof's. */
        final List<RecordedEvent> exceptionSamples = new ArrayList<>();
        /** Of ddprof chunks: their DatadogProfilerConfig, fjmethodid settings, malloc and socket events. */
        final List<RecordedEvent> configs = new ArrayList<>();
        final List<String> fjmethodid = new ArrayList<>();
        long nativeMem;
        long natsock;

        String describe() {
            return chunks + " chunks, " + ddprofChunks + " of ddprof with " + executionSamples.size() + " ExecutionSample, "
                    + endpoints.size() + " Endpoint; " + otherSamples + " ExecutionSample, " + otherEndpoints
                    + " Endpoint in the others" + (unreadable.isEmpty() ? "" : "; " + unreadable);
        }
    }

    static UploadContent read(Path upload) throws IOException {
        UploadContent c = new UploadContent();
        byte[] all = Files.readAllBytes(upload);
        int pos = 0;
        while (pos + 16 <= all.length) {
            long size = 0;
            for (int i = 8; i < 16; i++) {
                size = (size << 8) | (all[pos + i] & 0xff);
            }
            if (all[pos] != 'F' || all[pos + 1] != 'L' || all[pos + 2] != 'R' || size <= 16 || pos + size > all.length) {
                c.unreadable.add("no chunk header at byte " + pos);
                break;
            }
            c.chunks++;
            Path chunk = upload.resolveSibling(upload.getFileName() + ".chunk" + c.chunks);
            Files.write(chunk, Arrays.copyOfRange(all, pos, pos + (int) size));
            int version = ((all[pos + 4] & 0xff) << 8 | (all[pos + 5] & 0xff));
            try (RecordingFile rf = new RecordingFile(chunk)) {
                // Only a ddprof chunk counts: the tracer's own JFR events (in the JDK's chunk)
                // include a datadog.Endpoint of the same name.
                boolean ddprof = false;
                List<RecordedEvent> samples = new ArrayList<>();
                List<RecordedEvent> wall = new ArrayList<>();
                List<RecordedEvent> endpoints = new ArrayList<>();
                List<RecordedEvent> exceptionSamples = new ArrayList<>();
                List<RecordedEvent> configs = new ArrayList<>();
                List<String> fjmethodid = new ArrayList<>();
                long nativeMem = 0;
                long natsock = 0;
                while (rf.hasMoreEvents()) {
                    RecordedEvent e = rf.readEvent();
                    String type = e.getEventType().getName();
                    if (type.equals(JfrReader.PROFILER_CONFIG)) {
                        ddprof = true;
                        configs.add(e);
                    } else if (type.equals("datadog.NativeMemoryAllocation")) {
                        nativeMem++;
                    } else if (type.equals("datadog.NativeSocketEvent")) {
                        natsock++;
                    } else if (type.equals("jdk.ActiveSetting") && "fjmethodid".equals(e.getString("name"))) {
                        fjmethodid.add(e.getString("value"));
                    } else if (type.equals(JfrReader.EXECUTION_SAMPLE)) {
                        samples.add(e);
                    } else if (type.equals("datadog.Endpoint")) {
                        endpoints.add(e);
                    } else if (type.equals("datadog.MethodSample")) {
                        wall.add(e);
                    } else if (type.equals("datadog.ExceptionSample")) {
                        exceptionSamples.add(e);
                    }
                }
                if (ddprof) {
                    c.ddprofChunks++;
                    c.executionSamples.addAll(samples);
                    c.methodSamples.addAll(wall);
                    c.endpoints.addAll(endpoints);
                    c.configs.addAll(configs);
                    c.fjmethodid.addAll(fjmethodid);
                    c.nativeMem += nativeMem;
                    c.natsock += natsock;
                } else {
                    c.otherEndpoints += endpoints.size();
                    c.otherSamples += samples.size();
                    c.exceptionSamples.addAll(exceptionSamples);
                }
            } catch (IOException | RuntimeException | InternalError e) {
                // The JDK's parser refuses a chunk that declares an empty constant pool, which
                // upstream's profiler writes now and then; JMC's parser reads those.
                String why = "chunk " + c.chunks + " (version " + version + ".x, " + size + " bytes) JDK parser: " + e;
                try {
                    JmcParser.Summary jmc = JmcParser.read(chunk.toFile(), JfrReader.EXECUTION_SAMPLE, "compute");
                    if (jmc.countsByType.getOrDefault(JfrReader.PROFILER_CONFIG, 0L) > 0) {
                        c.ddprofChunks++;
                        c.jmcOnlySamples += jmc.countsByType.getOrDefault(JfrReader.EXECUTION_SAMPLE, 0L);
                        why += "; JMC reads it: a ddprof chunk with "
                                + jmc.countsByType.getOrDefault(JfrReader.EXECUTION_SAMPLE, 0L) + " ExecutionSample (not counted)";
                    } else {
                        why += "; JMC reads it: not a ddprof chunk";
                    }
                } catch (Exception | LinkageError jmcFailed) {
                    why += "; JMC parser: " + jmcFailed;
                }
                c.unreadable.add(why);
            } finally {
                Files.delete(chunk);
            }
            pos += (int) size;
        }
        return c;
    }

    private static Object attribute(RecordedEvent e, String name) {
        // A name with dots is a field of its own here, not a path.
        return e.getFields().stream().anyMatch(v -> v.getName().equals(name)) ? e.getValue(name) : null;
    }

    /** Collects every check, so that one run reports all of them; fails at the end if any failed. */
    static final class Checks {
        private final Path dir;
        private final List<String> report = new ArrayList<>();
        private final List<String> failed = new ArrayList<>();

        Checks(Path dir) {
            this.dir = dir;
        }

        void note(String s) {
            report.add("  " + s);
        }

        void check(boolean ok, String what, String detail) {
            if (ok) {
                report.add("  ok    " + what + (detail.isEmpty() || detail.length() > 200 || detail.contains("\n") ? "" : " (" + detail + ")"));
            } else {
                report.add("  FAIL  " + what + ": " + detail);
                failed.add(what + ": " + detail);
            }
        }

        boolean allPassed() {
            return failed.isEmpty();
        }

        void finish() throws IOException {
            String text = "RealTracerTest in " + dir + "\n" + String.join("\n", report) + "\n";
            Files.write(dir.resolve("report.txt"), text.getBytes(StandardCharsets.UTF_8));
            System.out.println(text);
            if (!failed.isEmpty()) {
                fail(failed.size() + " checks of the real tracer with our library failed (report and files in " + dir + "):\n  - "
                        + String.join("\n  - ", failed) + "\n\nFull report:\n" + text);
            }
        }
    }

    // --- helpers ---------------------------------------------------------------------------

    interface Condition {
        boolean met() throws Exception;
    }

    private static void waitUntil(Condition c, int maxSeconds) throws Exception {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(maxSeconds);
        while (!c.met() && System.nanoTime() < end) {
            Thread.sleep(100);
        }
    }

    private static boolean logHas(Path log, String text) throws IOException {
        if (!Files.exists(log)) {
            return false;
        }
        try (Stream<String> lines = Files.lines(log, StandardCharsets.UTF_8)) {
            return lines.anyMatch(l -> l.contains(text));
        } catch (java.io.UncheckedIOException e) {
            return false; // a line half written
        }
    }

    private static boolean logHas(List<String> lines, String text) {
        return lines.stream().anyMatch(l -> l.contains(text));
    }

    private static String firstLine(List<String> lines, String text) {
        return lines.stream().filter(l -> l.contains(text)).findFirst().orElse(null);
    }

    private static List<String> ddprofLines(List<String> lines) {
        return lines.stream().filter(l -> !l.contains("crashtracking") && (l.contains("ddprof") || l.contains("DatadogProfiler")
                || l.contains("Profiling has") || l.contains("labeling") || l.contains("Throwable"))).collect(Collectors.toList());
    }

    private static List<String> grep(List<String> lines, String text) {
        return lines.stream().filter(l -> l.contains(text)).collect(Collectors.toCollection(ArrayList::new));
    }

    /** For a pattern that names a Throwable: the stack lines after its first occurrence. */
    private static String firstStackFrom(List<String> lines, String pattern) {
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).contains(pattern)) {
                List<String> st = new ArrayList<>();
                for (int j = i + 1; j < lines.size() && j <= i + 8 && lines.get(j).startsWith("\t"); j++) {
                    st.add(lines.get(j).trim());
                }
                return st.isEmpty() ? "" : "\n      " + String.join("\n      ", st);
            }
        }
        return "";
    }

    private static String first(List<String> lines, int n) {
        return lines.stream().limit(n).map(l -> l.length() > 600 ? l.substring(0, 600) + "..." : l)
                .collect(Collectors.joining("\n    "));
    }

    private static String tail(String s, int n) {
        return s.length() <= n ? s : "..." + s.substring(s.length() - n);
    }

    private static long parseId(String s) {
        try {
            return Long.parseUnsignedLong(s);
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    private static Path jarOf(Class<?> c) throws URISyntaxException {
        return Paths.get(c.getProtectionDomain().getCodeSource().getLocation().toURI());
    }

    private static Path requiredFile(String property, String p) {
        if (p == null || p.isEmpty() || !Files.isRegularFile(Paths.get(p))) {
            throw new IllegalStateException("system property " + property + " = " + p
                    + " is not a file (run through Maven: ddprof-test's pom copies it before the tests)");
        }
        return Paths.get(p);
    }

    private static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).collect(Collectors.toList())) {
                Files.delete(p);
            }
        }
    }
}
