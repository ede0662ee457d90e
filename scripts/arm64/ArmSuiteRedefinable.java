/**
 * Burnt in by ArmSuite before and after it redefines this class (the suite's {@code redefine}
 * check, mode {@code lazy}): the script compiles it as it is (version 1: {@link #runRedefinable}
 * calls {@link #spinRedefinableOld}) and, into a folder of its own, with the call swapped to
 * {@link #spinRedefinableNew} (version 2, the bytes given to RedefineClasses). Both versions have
 * the same methods, as redefinition requires; each runs only one of the two spins, so a sampled
 * frame named after the other one names a method that did not run.
 */
public class ArmSuiteRedefinable {
    public static long runRedefinable(long n) {
        return spinRedefinableOld(n); // REDEFINE: the script swaps Old for New here
    }

    static long spinRedefinableOld(long n) {
        long x = 5;
        for (long i = 0; i < n; i++) {
            x = x * 3202034522624059733L + i;
            x ^= x >>> 31;
        }
        return x;
    }

    static long spinRedefinableNew(long n) {
        long x = 11;
        for (long i = 0; i < n; i++) {
            x = x * 4354685564936845319L + i;
            x ^= x >>> 27;
        }
        return x;
    }
}
