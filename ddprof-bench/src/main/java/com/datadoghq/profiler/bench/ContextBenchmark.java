package com.datadoghq.profiler.bench;

import com.datadoghq.profiler.JavaProfiler;

import java.io.IOException;
import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The cost of a context write with upstream's current API (issue 11, "Cost"), beside an empty JNI
 * call and a pure-Java baseline, in the same JVM and run. Run it with
 * {@code bash scripts/bench-context.sh} (docs/benchmarks.md, "Context writes").
 *
 * <p>The profiler is loaded, not started: a write costs the same either way (it does not look at
 * the profiler's state), and a running sampler would only add noise. Values are the same two
 * strings every time, so after the first write they come from {@code ContextValueCache}, as a
 * tracer's operation and resource names mostly do; the span id changes on every call.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xms256m", "-Xmx256m"})
public class ContextBenchmark {
    static final String OPERATION = "servlet.request";
    static final String RESOURCE = "GET /api/users/{id}";

    private JavaProfiler profiler;
    private long span;

    // The pure-Java baseline's target: the same ids a write carries, as plain fields.
    private long root;
    private long spanField;
    private long traceHi;
    private long traceLo;
    private int slot0;
    private String value0;

    @Setup(Level.Trial)
    public void setUp() throws IOException {
        profiler = JavaProfiler.getInstance();
        // The thread's first write allocates its record; do it outside the measurement, and check
        // that the writes land (a benchmark of a write that does nothing would mean nothing).
        profiler.setTraceContext(1, 2, 3, 4, 0, OPERATION, 1, RESOURCE);
        if (!profiler.setContextValue(0, OPERATION)) {
            throw new IllegalStateException("setContextValue did not write");
        }
        profiler.clearTraceContext();
    }

    /** A static native that takes no argument and returns a constant: the price of JNI itself. */
    @Benchmark
    public boolean emptyJni() {
        return JavaProfiler.testTlsPrimingAvailable();
    }

    /** The same data as {@link #setTraceContext()} stored into plain Java fields. */
    @Benchmark
    public void javaBaseline() {
        long s = ++span;
        root = s >>> 1;
        spanField = s;
        traceHi = 0x1234L;
        traceLo = s;
        slot0 = 0;
        value0 = OPERATION;
    }

    /** Span activation with two attributes (operation and resource, both cached). */
    @Benchmark
    public void setTraceContext() {
        long s = ++span;
        profiler.setTraceContext(s >>> 1, s, 0x1234L, s, 0, OPERATION, 1, RESOURCE);
    }

    /** Span activation with no attribute (slots -1): ids, the slots reset, the root's hex entry. */
    @Benchmark
    public void setTraceContextIdsOnly() {
        long s = ++span;
        profiler.setTraceContext(s >>> 1, s, 0x1234L, s, -1, null, -1, null);
    }

    /** Span activation with two attributes, the root changing every call (a new request each time). */
    @Benchmark
    public void setTraceContextNewRoot() {
        long s = ++span;
        profiler.setTraceContext(s, s, 0x1234L, s, 0, OPERATION, 1, RESOURCE);
    }

    /** One attribute (a cached value). */
    @Benchmark
    public boolean setContextValue() {
        return profiler.setContextValue(0, OPERATION);
    }

    /** One attribute, a different value every call (two alternating): the slot is rewritten each time. */
    @Benchmark
    public boolean setContextValueChanging() {
        return profiler.setContextValue(0, (++span & 1) == 0 ? OPERATION : RESOURCE);
    }

    /** Span deactivation. */
    @Benchmark
    public void clearTraceContext() {
        profiler.clearTraceContext();
    }

    static final int[] APP_SLOTS = {2, 3};
    static final String[] APP_VALUES = {"tenant-42", "checkout"};

    /** Span activation, then two application attributes re-applied one call each (tracers today). */
    @Benchmark
    public void reapplyOneByOne() {
        long s = ++span;
        profiler.setTraceContext(s >>> 1, s, 0x1234L, s, 0, OPERATION, 1, RESOURCE);
        profiler.setContextValue(APP_SLOTS[0], APP_VALUES[0]);
        profiler.setContextValue(APP_SLOTS[1], APP_VALUES[1]);
    }

    /** The same with ddprof's batched {@code setContextValues}. */
    @Benchmark
    public int reapplyBatched() {
        long s = ++span;
        profiler.setTraceContext(s >>> 1, s, 0x1234L, s, 0, OPERATION, 1, RESOURCE);
        return profiler.setContextValues(APP_SLOTS, APP_VALUES, 2);
    }
}
