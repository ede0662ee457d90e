package com.datadoghq.profiler.bench;

import com.datadoghq.profiler.ContextSetter;
import com.datadoghq.profiler.JavaProfiler;

import java.io.IOException;
import java.util.Arrays;
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
 * The context writes of java-profiler's older API ({@code setContext(spanId, rootSpanId)},
 * {@code setContextValue(offset, encoding)}, {@code clearContext()}), which both ddprof and
 * upstream's {@code com.datadoghq:ddprof} jar have. It only calls what both have, so
 * {@code scripts/bench-context.sh} runs this class twice: once with our jar on the class path,
 * once with upstream's jar instead (a separate JMH invocation, so a separate JVM fork with the
 * other library). {@link ContextBenchmark} has ddprof's current API and the empty JNI call (not
 * here: upstream has no public empty native, and its {@code getSamples()} is an instance method
 * where ours is static, so no one call site links against both).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xms256m", "-Xmx256m"})
public class LegacyContextBenchmark {
    private JavaProfiler profiler;
    private ContextSetter setter;
    private int offset;
    private int encoding;
    /** A second value's encoding, for the writes that change the slot every call. */
    private int encoding2;
    private long span;
    private final int[] tags = new int[2];

    @Setup(Level.Trial)
    public void setUp() throws IOException {
        profiler = JavaProfiler.getInstance();
        setter = new ContextSetter(profiler, Arrays.asList("operation", "resource"));
        offset = setter.offsetOf("operation");
        encoding = setter.encode(ContextBenchmark.OPERATION);
        encoding2 = setter.encode(ContextBenchmark.RESOURCE);
        if (offset != 0 || encoding <= 0 || encoding2 <= 0 || encoding2 == encoding) {
            throw new IllegalStateException("offset " + offset + ", encoding " + encoding);
        }
        // The thread's first write allocates (ddprof) or maps (upstream) its storage; do it here,
        // and check that a write lands: a write that silently does nothing would measure nothing.
        profiler.setContext(2, 1);
        profiler.setContextValue(offset, encoding);
        int[] tags = setter.snapshotTags();
        if (tags.length < 1 || tags[0] != encoding) {
            throw new IllegalStateException("setContextValue did not write: " + Arrays.toString(tags));
        }
        profiler.setContextValue(offset, 0);
        profiler.clearContext();
    }

    @Benchmark
    public void setContext() {
        long s = ++span;
        profiler.setContext(s, s >>> 1);
    }

    /** The root changes every call too (a new request on every activation). */
    @Benchmark
    public void setContextNewRoot() {
        long s = ++span;
        profiler.setContext(s, s);
    }

    @Benchmark
    public void setContextValue() {
        profiler.setContextValue(offset, encoding);
    }

    /** A different value every call (two alternating): the slot is rewritten each time. */
    @Benchmark
    public void setContextValueChanging() {
        profiler.setContextValue(offset, (++span & 1) == 0 ? encoding : encoding2);
    }

    /** What a tracer's {@code newScope()} copies ({@code ContextSetter.snapshotTags}). */
    @Benchmark
    public int[] snapshotTags() {
        setter.snapshotTags(tags);
        return tags;
    }

    @Benchmark
    public void clearContext() {
        profiler.clearContext();
    }
}
