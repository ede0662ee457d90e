/*
 * The aarch64 suite's JNI library (scripts/arm64-smoke.sh builds it with aarch64-linux-gnu-gcc
 * -O2: no -fno-omit-frame-pointer, so its frames unwind by their .eh_frame rows). ArmSuite's
 * native method nativeArmSuite calls chainArmSuiteA -> chainArmSuiteB -> burnArmSuiteC, a leaf
 * loop that keeps its return address in x30; ArmSuiteCheck wants these C frames, in this order,
 * directly above the Java native method in the CPU samples, its Java caller below it.
 */
#include <jni.h>

volatile unsigned long armsuite_jni_sink;

/* noinline, noclone (a clone's symbol would be renamed) and a result used after each call:
 * every function keeps its own frame and name. static: called directly, not through the PLT. */
__attribute__((noinline, noclone)) static unsigned long burnArmSuiteC(long n) {
    unsigned long x = 1;
    for (long i = 0; i < n; i++) {
        x = x * 6364136223846793005UL + (unsigned long) i;
        x ^= x >> 17;
    }
    armsuite_jni_sink = x;
    return x;
}

__attribute__((noinline, noclone)) static unsigned long chainArmSuiteB(long n) {
    return burnArmSuiteC(n) ^ armsuite_jni_sink ^ 0x55;
}

__attribute__((noinline, noclone)) static unsigned long chainArmSuiteA(long n) {
    return chainArmSuiteB(n) * 3 + armsuite_jni_sink;
}

JNIEXPORT jlong JNICALL Java_ArmSuite_nativeArmSuite(JNIEnv *env, jclass cls, jlong n) {
    (void) env;
    (void) cls;
    return (jlong) (chainArmSuiteA(n) + 7);
}
