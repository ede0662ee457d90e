package com.datadoghq.profiler.lazy;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.function.IntSupplier;
import java.util.function.Supplier;

/**
 * Methods of every shape for {@code LazyJvmtiEquivalenceTest}: overloads, varargs, a static
 * initializer, constructors, bridges (a generic interface implemented with a narrower type, a
 * covariant override), synthetic lambda bodies, a native and abstract methods without line
 * tables, one-line and many-line methods, enums and nested classes.
 */
public class EquivalenceFixture implements Comparable<EquivalenceFixture>, Supplier<String> {
    static final List<String> LOG = new ArrayList<>();
    static int counter;

    static {
        LOG.add("clinit");
        counter = 3;
    }

    private final int value;

    public EquivalenceFixture() {
        this(0);
    }

    protected EquivalenceFixture(int value) {
        this.value = value;
    }

    EquivalenceFixture(String s, int... rest) {
        this(s.length() + rest.length);
    }

    public int m(int x) { return x + value; }

    public long m(long x) {
        return x * 2;
    }

    public String m(String s) {
        return s
                + value;
    }

    public int m(int[] a) {
        int sum = 0;
        for (int v : a) {
            sum += v;
        }
        return sum;
    }

    public static int m(Object... many) {
        return many.length;
    }

    private static synchronized double m(double d, float f, char c, byte b, short s, boolean z) {
        return z ? d + f + c + b + s : 0;
    }

    protected final int[][] grid(long[] row, Object[][] cells) {
        return new int[row.length][cells.length];
    }

    @Override
    public int compareTo(EquivalenceFixture o) {
        return Integer.compare(value, o.value);
    }

    @Override
    public String get() {
        return "fixture";
    }

    public native void nativeMethod(int x);

    public strictfp double strict(double a) {
        return a / 3;
    }

    /** Thirty lines, and a loop whose line entries go backwards in bci order. */
    static long longMethod(long seed) {
        long acc = seed;
        for (int i = 0; i < 3; i++) {
            acc ^= i;
        }
        acc = acc * 31 + 0;
        acc = acc * 31 + 1;
        acc = acc * 31 + 2;
        acc = acc * 31 + 3;
        acc = acc * 31 + 4;
        acc = acc * 31 + 5;
        acc = acc * 31 + 6;
        acc = acc * 31 + 7;
        acc = acc * 31 + 8;
        acc = acc * 31 + 9;
        acc = acc * 31 + 10;
        acc = acc * 31 + 11;
        acc = acc * 31 + 12;
        acc = acc * 31 + 13;
        acc = acc * 31 + 14;
        acc = acc * 31 + 15;
        acc = acc * 31 + 16;
        acc = acc * 31 + 17;
        acc = acc * 31 + 18;
        acc = acc * 31 + 19;
        acc = acc * 31 + 20;
        acc = acc * 31 + 21;
        acc = acc * 31 + 22;
        acc = acc * 31 + 23;
        acc = acc * 31 + 24;
        acc = acc * 31 + 25;
        acc = acc * 31 + 26;
        acc = acc * 31 + 27;
        acc = acc * 31 + 28;
        acc = acc * 31 + 29;
        return acc;
    }

    int lambdas() throws Exception {
        IntSupplier s = () -> value + 1;
        Callable<String> c = () -> {
            String r = m("x");
            return r.trim();
        };
        Runnable capture = () -> LOG.add(String.valueOf(value));
        capture.run();
        return s.getAsInt() + c.call().length();
    }

    /** A covariant override makes a bridge {@code Base base()} in {@link Child}. */
    static class Base {
        Base self() {
            return this;
        }
    }

    static final class Child extends Base {
        @Override
        Child self() {
            return this;
        }
    }

    abstract static class Shape {
        abstract double area();

        double twice() {
            return 2 * area();
        }
    }

    interface Defaults {
        default int one() {
            return 1;
        }

        static int two() {
            return 2;
        }

        int three();
    }

    enum Color implements Defaults {
        RED, GREEN {
            @Override
            public int three() {
                return 33;
            }
        }, BLUE;

        @Override
        public int three() {
            return 3;
        }
    }

    final class Inner {
        int outerValue() {
            return value;
        }
    }
}
