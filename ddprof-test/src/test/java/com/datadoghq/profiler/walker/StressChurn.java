package com.datadoghq.profiler.walker;

import java.util.concurrent.Callable;

/**
 * One round of a deoptimisation storm, meant to be defined afresh by a {@link ChurnLoader} for
 * every round (so each round starts with cold, never-deoptimised code) and unloaded afterwards.
 * A round runs one hot loop through phases that each break what the JIT assumed in the one before:
 * <ol>
 *   <li>monomorphic receiver {@link OpA}, one {@link Shape} subclass, no null: C1 then C2
 *   compile it with an inlined call guarded by a class check, a class-hierarchy (CHA)
 *   dependency on {@link Shape} and implicit null checks;</li>
 *   <li>receiver {@link OpB}, then {@link OpC}: the class checks fail (uncommon traps, deopt);</li>
 *   <li>a second Shape subclass, {@link Circle}, is loaded: the CHA dependency breaks;</li>
 *   <li>null holders: implicit null checks fault (SIGSEGV that HotSpot must get) and throw
 *   NullPointerException, which the loop catches and counts.</li>
 * </ol>
 * {@link #call()} returns {caught NPEs, expected NPEs, a checksum}.
 */
public final class StressChurn implements Callable<long[]> {
    /** How long each phase runs; the first one is longer to let C2 compile the loop. */
    static final long WARM_NANOS = 60_000_000L;
    static final long PHASE_NANOS = 15_000_000L;
    static final int HOLDERS = 256;
    /** Every NULL_EVERY-th holder is null in the last phase. */
    static final int NULL_EVERY = 32;

    interface Op {
        long apply(long x);
    }

    static final class OpA implements Op {
        @Override
        public long apply(long x) {
            return x * 31 + 7;
        }
    }

    static final class OpB implements Op {
        @Override
        public long apply(long x) {
            return (x ^ 0x5DEECE66DL) + 11;
        }
    }

    static final class OpC implements Op {
        @Override
        public long apply(long x) {
            return (x >>> 3) + (x << 2);
        }
    }

    abstract static class Shape {
        abstract long area(long x);
    }

    static final class Square extends Shape {
        @Override
        long area(long x) {
            return (x & 1023) * (x & 1023);
        }
    }

    /** Loaded only in the third phase, when it is first instantiated. */
    static final class Circle extends Shape {
        @Override
        long area(long x) {
            return (x & 1023) * 3;
        }
    }

    static final class Holder {
        long value;

        Holder(long value) {
            this.value = value;
        }
    }

    @Override
    public long[] call() {
        Holder[] holders = new Holder[HOLDERS];
        for (int i = 0; i < holders.length; i++) {
            holders[i] = new Holder(i);
        }
        long[] npe = new long[2];
        long acc = 0;
        Shape square = new Square();
        acc += spin(new OpA(), holders, square, WARM_NANOS, npe);
        acc += spin(new OpB(), holders, square, PHASE_NANOS, npe);
        acc += spin(new OpC(), holders, square, PHASE_NANOS, npe);
        acc += spin(new OpA(), holders, newCircle(), PHASE_NANOS, npe);
        for (int i = 0; i < holders.length; i += NULL_EVERY) {
            holders[i] = null;
        }
        acc += spin(new OpB(), holders, square, PHASE_NANOS, npe);
        return new long[] {npe[0], npe[1], acc};
    }

    /**
     * Loads Circle now, not when this class is verified (a {@code new Circle()} passed as a
     * Shape would make the verifier load it up front).
     */
    private static Shape newCircle() {
        try {
            return (Shape) Class.forName(StressChurn.class.getName() + "$Circle", true, StressChurn.class.getClassLoader())
                    .getDeclaredConstructor().newInstance();
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Full sweeps over {@code holders} until {@code nanos} have passed; counts NPEs in npe[0], expected ones in npe[1]. */
    static long spin(Op op, Holder[] holders, Shape shape, long nanos, long[] npe) {
        long deadline = System.nanoTime() + nanos;
        long acc = 0;
        long caught = 0;
        long sweeps = 0;
        do {
            for (int i = 0; i < holders.length; i++) {
                try {
                    acc += step(op, holders[i], shape, acc);
                } catch (NullPointerException e) {
                    caught++;
                }
            }
            sweeps++;
        } while (System.nanoTime() < deadline);
        int nulls = 0;
        for (Holder h : holders) {
            if (h == null) {
                nulls++;
            }
        }
        npe[0] += caught;
        npe[1] += sweeps * nulls;
        return acc;
    }

    static long step(Op op, Holder h, Shape shape, long x) {
        return op.apply(x) + shape.area(x) + h.value;
    }
}
