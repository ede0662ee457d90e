import java.util.function.LongUnaryOperator;

/**
 * Loaded by ArmSuite in a class loader of its own (not on its class path: the script compiles it
 * into a folder of its own), burnt in, then dropped and unloaded before the dump: the suite's
 * {@code unload} check wants none of its sampled frames named after another method.
 */
public class ArmSuiteUnloadable implements LongUnaryOperator {
    @Override
    public long applyAsLong(long n) {
        return burnUnloadable(n);
    }

    static long burnUnloadable(long n) {
        long x = 7;
        for (long i = 0; i < n; i++) {
            x = x * 2862933555777941757L + i;
            x ^= x >>> 29;
        }
        return x;
    }
}
