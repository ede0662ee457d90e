/*
 * For VmWalkerNativeFramesTest: a JNI library the workload loads after the profiler started.
 * Built with -O2 -fomit-frame-pointer, so that unwinding from ddprof_late_leaf through
 * ddprof_late_middle to the JNI function needs their DWARF rules (.eh_frame), which the
 * profiler has to read once the library appears. No JNI header: the arguments are plain.
 */
static volatile unsigned long sink;

__attribute__((noinline)) unsigned long ddprof_late_leaf(unsigned long n) {
    unsigned long x = n | 1;
    for (unsigned long i = 0; i < n; i++) {
        x = x * 6364136223846793005UL + i;
        sink = x;
    }
    return x;
}

__attribute__((noinline)) unsigned long ddprof_late_middle(unsigned long n) {
    unsigned long r = ddprof_late_leaf(n);
    sink += r;
    return r + 1;
}

long long Java_com_datadoghq_profiler_walker_NativeFramesMain_lateSpin(void *env, void *cls, long long n) {
    long long r = (long long) ddprof_late_middle((unsigned long) n);
    sink += (unsigned long) r;
    return r + 1;
}
