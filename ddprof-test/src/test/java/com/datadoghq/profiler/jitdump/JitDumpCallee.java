package com.datadoghq.profiler.jitdump;

/**
 * The callee that {@link JitDumpMain#hot} inlines: small enough for both compilers to inline, and in a
 * source file of its own, so that a line of it in perf's output can only come from inlining records.
 */
final class JitDumpCallee {
    private JitDumpCallee() {
    }

    static long mix(long a, int i) {
        a ^= a << 13;
        a ^= a >>> 7;
        a ^= a << 17;
        return a + i;
    }
}
