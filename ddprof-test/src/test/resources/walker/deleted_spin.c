/*
 * For DeletedLibraryFramesTest: a JNI library the workload extracts, loads and deletes, as
 * Netty and zstd-jni load theirs, with their kinds of functions: a static one (the leaf), a
 * hidden one (-fvisibility=hidden, as Netty builds) and the exported JNI entry point. Only the
 * last is in the dynamic symbol table; the others are in .symtab. Built with -O2
 * -fomit-frame-pointer: the walk from the leaf to the JNI function needs their DWARF rules.
 */
static volatile unsigned long sink;

static __attribute__((noinline, noclone)) unsigned long deleted_static_leaf(unsigned long n) {
    unsigned long x = n | 1;
    for (unsigned long i = 0; i < n; i++) {
        x = x * 6364136223846793005UL + i;
        sink = x;
    }
    return x;
}

__attribute__((noinline, noclone, visibility("hidden"))) unsigned long deleted_hidden_middle(unsigned long n) {
    unsigned long r = deleted_static_leaf(n);
    sink += r;
    return r + 1;
}

long long Java_com_datadoghq_profiler_walker_NativeFramesMain_deletedSpin(void *env, void *cls, long long n) {
    long long r = (long long) deleted_hidden_middle((unsigned long) n);
    sink += (unsigned long) r;
    return r + 1;
}
