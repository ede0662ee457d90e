/*
 * A library that takes a signal for itself after the profiler started, as some native
 * libraries do (their own profiler or timer): a plain handler that counts and does not pass
 * the signal on to the handler it replaced. Installed with sigaction, so that libjsig (when
 * preloaded) says nothing about it.
 */
#include <signal.h>
#include <stdint.h>
#include <string.h>

/* The JNI types used here, without jni.h (not every JDK or test host puts it on the path). */
typedef int32_t jint;
typedef int64_t jlong;
typedef void JNIEnv;
typedef void *jclass;
#define JNIEXPORT __attribute__((visibility("default")))
#define JNICALL

static volatile long caught[65];

static void on_signal(int sig) {
    if (sig > 0 && sig < 65) {
        __atomic_fetch_add(&caught[sig], 1, __ATOMIC_RELAXED);
    }
}

JNIEXPORT jint JNICALL Java_com_datadoghq_profiler_signals_ForeignHandlerMain_install(JNIEnv *env, jclass cls, jint sig) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    return sigaction(sig, &sa, NULL);
}

JNIEXPORT jlong JNICALL Java_com_datadoghq_profiler_signals_ForeignHandlerMain_caught(JNIEnv *env, jclass cls, jint sig) {
    return sig > 0 && sig < 65 ? __atomic_load_n(&caught[sig], __ATOMIC_RELAXED) : -1;
}

/* For the libjsig test's control: the deprecated call that libjsig warns about. */
JNIEXPORT void JNICALL Java_com_datadoghq_profiler_signals_ForeignHandlerMain_ignoreWithSignal(JNIEnv *env, jclass cls, jint sig) {
    signal(sig, SIG_IGN);
}
