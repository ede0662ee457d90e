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

/*
 * A thread started here and never attached to the JVM (no JVMTI ThreadStart): it spins in
 * ddprof_native_thread_spin for the CPU time asked, says so, then sleeps until the process
 * ends, so that its name is still there when the recording is written.
 */
#include <pthread.h>
#include <time.h>
#include <unistd.h>

static volatile int native_done;

static long long thread_cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (long long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

__attribute__((noinline)) void ddprof_native_thread_spin(long long millis) {
    long long until = thread_cpu_ms() + millis;
    while (thread_cpu_ms() < until) {
        sink += ddprof_late_leaf(100000);
    }
}

static void *native_thread_main(void *arg) {
    pthread_setname_np(pthread_self(), "late-native");
    ddprof_native_thread_spin((long long) (long) arg);
    native_done = 1;
    for (;;) {
        pause();
    }
    return 0;
}

int Java_com_datadoghq_profiler_walker_NativeFramesMain_startNativeThread(void *env, void *cls, long long millis) {
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &attr, native_thread_main, (void *) (long) millis);
    pthread_attr_destroy(&attr);
    return rc;
}

int Java_com_datadoghq_profiler_walker_NativeFramesMain_nativeThreadDone(void *env, void *cls) {
    return native_done;
}
