/*
 * The aarch64 suite's JNI library (scripts/arm64-smoke.sh builds it with aarch64-linux-gnu-gcc
 * -O2: no -fno-omit-frame-pointer, so its frames unwind by their .eh_frame rows). ArmSuite's
 * native method nativeArmSuite calls chainArmSuiteA -> chainArmSuiteB -> burnArmSuiteC, a leaf
 * loop that keeps its return address in x30; ArmSuiteCheck wants these C frames, in this order,
 * directly above the Java native method in the CPU samples, its Java caller below it.
 * The script builds it twice: plain, and with -mbranch-protection=pac-ret+leaf for mode pac,
 * where every function (the leaf too) signs its return address (paciasp) before keeping it
 * in x30 or its frame record, and its .eh_frame rows say so (DW_CFA_AARCH64_negate_ra_state).
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

/* The return address as this function's frame record holds it (__builtin_frame_address makes
 * the record; the call makes the prologue save x30 there): with pac-ret, signed by paciasp, a
 * pointer-authentication code in the bits above the address when the CPU implements it
 * (qemu-user's default CPU, "max", does); plain otherwise. ArmSuiteCheck reads the bits. */
JNIEXPORT jlong JNICALL Java_ArmSuite_savedReturnArmSuite(JNIEnv *env, jclass cls) {
    (void) env;
    (void) cls;
    void **record = __builtin_frame_address(0);
    armsuite_jni_sink += burnArmSuiteC(1);
    return (jlong) record[1];
}
