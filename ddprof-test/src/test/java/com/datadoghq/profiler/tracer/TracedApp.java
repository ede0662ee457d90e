package com.datadoghq.profiler.tracer;

import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;

import com.datadoghq.profiler.context.ProcessContextReader;
import datadog.trace.api.CorrelationIdentifier;
import datadog.trace.api.Trace;

/**
 * The traced application of {@link RealTracerTest}, run under dd-java-agent.
 *
 * <p>Arguments: {@code WORKDIR THREADS CPU_MILLIS_PER_THREAD}. It waits (at most 60 s) for the file
 * {@code WORKDIR/go}, then runs THREADS worker threads named {@code itest-worker-N}; each makes
 * requests until it has spent CPU_MILLIS_PER_THREAD of its own CPU time in them. A request is a
 * {@code @Trace} root span ({@link #request}) around a {@code @Trace} child span ({@link #compute})
 * that spins for about 20 ms of CPU. For every request it prints
 * {@code SPAN <thread> <rootSpanId> <childSpanId>} (the ids {@link CorrelationIdentifier} reports,
 * unsigned decimal, 0 when there is no span), then {@code CPU <thread> <millis spent in compute>}
 * per thread, {@code PROCCTX key=value...} (the OTel process context as an outside reader finds it)
 * and {@code DONE} (also written as {@code WORKDIR/done}). Then it idles until
 * {@code WORKDIR/stop} appears (at most 120 s), so that the tracer uploads the recording that
 * holds the work, and exits 0. Error lines start with {@code ERROR}.
 */
public final class TracedApp {
    static final String WORKER_PREFIX = "itest-worker-";
    private static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();
    private static final long REQUEST_CPU_NANOS = 20_000_000L;
    private static volatile long sink;

    private TracedApp() {}

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        int threads = Integer.parseInt(args[1]);
        long cpuMillis = Long.parseLong(args[2]);
        PrintStream out = System.out;

        waitFor(dir.resolve("go"), 60_000);
        out.println("START");
        List<Worker> workers = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            Worker w = new Worker(WORKER_PREFIX + i, cpuMillis * 1_000_000L);
            workers.add(w);
            w.start();
        }
        for (Worker w : workers) {
            w.join();
        }
        synchronized (System.out) {
            for (Worker w : workers) {
                for (String line : w.lines) {
                    out.println(line);
                }
                out.println("CPU " + w.getName() + " " + w.cpuNanos / 1_000_000L);
                if (w.failure != null) {
                    out.println("ERROR " + w.getName() + " " + w.failure);
                }
            }
            out.println(processContext());
            out.println("DONE");
            out.flush();
        }
        Files.write(dir.resolve("done"), new byte[0]);
        waitFor(dir.resolve("stop"), 120_000);
        out.println("EXIT");
        out.flush();
        System.exit(0);
    }

    /** {@code PROCCTX k=v ...}: the OTel process context as an outside reader finds it now. */
    private static String processContext() {
        try {
            ProcessContextReader.Published p =
                    ProcessContextReader.readThroughProcMem("self", ProcessContextReader.onlyMapping("self").start);
            StringBuilder sb = new StringBuilder("PROCCTX");
            p.resource.forEach((k, v) -> sb.append(' ').append(k).append('=').append(v));
            return sb.toString();
        } catch (IOException | RuntimeException e) {
            return "PROCCTX none: " + e;
        }
    }

    private static void waitFor(Path file, long maxMillis) throws InterruptedException {
        long end = System.nanoTime() + maxMillis * 1_000_000L;
        while (!Files.exists(file) && System.nanoTime() < end) {
            Thread.sleep(50);
        }
    }

    static final class Worker extends Thread {
        final long budgetNanos;
        final List<String> lines = new ArrayList<>();
        long cpuNanos;
        Throwable failure;

        Worker(String name, long budgetNanos) {
            super(name);
            this.budgetNanos = budgetNanos;
        }

        @Override
        public void run() {
            try {
                while (cpuNanos < budgetNanos) {
                    request(this);
                }
            } catch (Throwable t) {
                failure = t;
            }
        }
    }

    @Trace(operationName = "itest.request", resourceName = "itest-request")
    static void request(Worker w) {
        String root = CorrelationIdentifier.getSpanId();
        String child = compute(w);
        w.lines.add("SPAN " + w.getName() + " " + root + " " + child);
    }

    @Trace(operationName = "itest.compute", resourceName = "itest-compute")
    static String compute(Worker w) {
        String span = CorrelationIdentifier.getSpanId();
        long start = MX.getCurrentThreadCpuTime();
        long now = start;
        long x = sink;
        while (now - start < REQUEST_CPU_NANOS) {
            x = spin(x);
            now = MX.getCurrentThreadCpuTime();
        }
        sink = x;
        w.cpuNanos += now - start;
        return span;
    }

    private static long spin(long x) {
        for (int i = 0; i < 20_000; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            x ^= x >>> 29;
        }
        return x;
    }
}
