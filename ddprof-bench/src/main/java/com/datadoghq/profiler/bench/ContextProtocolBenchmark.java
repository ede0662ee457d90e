package com.datadoghq.profiler.bench;

import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The price of each way of publishing a thread's span ids through a direct {@link ByteBuffer},
 * with no profiler loaded: what a context write costs on a JDK where the record can only be
 * reached through the buffer (JDK 24+, where {@code sun.misc.Unsafe} warns). Each benchmark
 * stores a new span and a new root every call, through a per-thread buffer found by a
 * {@link ThreadLocal}, as both libraries' writers do:
 * <ul>
 *   <li>{@link #threeStores}: span, root and their xor, as upstream java-profiler 1.22.0 writes them
 *       on Java 11+ (its reader drops a context whose xor does not match);</li>
 *   <li>{@link #validRoundTrip}: ours ({@code DirectContextWriter}'s new root): the OTel record's
 *       {@code valid} byte cleared, a store-store fence, the ids, a fence, {@code valid} set, each id
 *       stored only if it changed (the writer's mirrors);</li>
 *   <li>{@link #validRoundTripNoFences}: the same without the fences, to price them (not a correct
 *       writer: nothing then orders the stores for a reader on another CPU);</li>
 *   <li>{@link #checkWord}: the ids and a mixed check word instead of the round trip, what an
 *       in-process-only protocol like upstream's would cost us.</li>
 * </ul>
 * and, for a changing attribute value, one 4-byte store (upstream's {@code setContextValue}) against
 * the dictionary epoch read through its own buffer and one 8-byte store (ours: every encoding is
 * tagged with the epoch). Results: docs/benchmarks.md, "Context writes", "What the record's protocol
 * costs on JDK 24+". Run by {@code scripts/bench-context.sh --protocol}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xms256m", "-Xmx256m"})
public class ContextProtocolBenchmark {
    /** Offsets as in our record: span id, root span id (sidecar), valid byte, a slot's word. */
    private static final int SPAN = 16;
    private static final int VALID = 24;
    private static final int ROOT = 640;
    private static final int CHECK = 648;
    private static final int SLOT = 656;

    /** One thread's record and the writer's mirrors of it. */
    static final class Record {
        final ByteBuffer buf = ByteBuffer.allocateDirect(1024).order(ByteOrder.nativeOrder());
        long span;
        long root;
        boolean valid;
    }

    private static final ThreadLocal<Record> RECORD = ThreadLocal.withInitial(Record::new);
    /** The dictionary epoch's word, as ours reads it on JDK 24+ (a static final direct buffer). */
    private static final ByteBuffer EPOCH = ByteBuffer.allocateDirect(8).order(ByteOrder.nativeOrder());

    private long next;

    /** The ids that changed, as the writer's mirrors say (span big-endian, as in the record). */
    private static void storeIds(Record r, long span, long root) {
        if (span != r.span) {
            r.buf.putLong(SPAN, Long.reverseBytes(span));
            r.span = span;
        }
        if (root != r.root) {
            r.buf.putLong(ROOT, root);
            r.root = root;
        }
    }

    @Benchmark
    public void threeStores() {
        Record r = RECORD.get();
        long span = ++next;
        long root = span;
        r.buf.putLong(SPAN, span);
        r.buf.putLong(ROOT, root);
        r.buf.putLong(CHECK, span ^ root);
    }

    @Benchmark
    public void validRoundTrip() {
        roundTrip(true);
    }

    @Benchmark
    public void validRoundTripNoFences() {
        roundTrip(false);
    }

    /** A new span and root inside the {@code valid} round trip; {@code fences} is constant per caller. */
    private void roundTrip(boolean fences) {
        Record r = RECORD.get();
        long span = ++next;
        if (r.valid) {
            r.buf.put(VALID, (byte) 0);
            r.valid = false;
            if (fences) {
                VarHandle.storeStoreFence();
            }
        }
        storeIds(r, span, span);
        if (fences) {
            VarHandle.storeStoreFence();
        }
        r.buf.put(VALID, (byte) 1);
        r.valid = true;
    }

    @Benchmark
    public void checkWord() {
        Record r = RECORD.get();
        long span = ++next;
        long root = span;
        storeIds(r, span, root);
        r.buf.putLong(CHECK, span * 0x9E37_79B9_7F4A_7C15L ^ root);
    }

    @Benchmark
    public void valueOneStore() {
        Record r = RECORD.get();
        r.buf.putInt(SLOT, (int) (++next & 1) + 1);
    }

    @Benchmark
    public void valueEpochAndStore() {
        Record r = RECORD.get();
        int epoch = EPOCH.getInt(0);
        r.buf.putLong(SLOT, (long) epoch << 32 | ((++next & 1) + 1));
    }
}
