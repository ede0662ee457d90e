/*
 * A JVMTI agent that takes can_generate_sampled_object_alloc_events, which HotSpot lets only
 * one environment hold, and keeps it: the "other agent" of OtherAgentHoldsSamplingTest. No JDK
 * headers needed: the JavaVM and jvmtiEnv function tables are read by index (GetEnv is slot 6 of
 * the invocation interface, AddCapabilities function 142 of JVMTI; the capability is bit 43).
 */
#include <stdio.h>

typedef int (*get_env_fn)(void *vm, void **env, int version);
typedef int (*add_capabilities_fn)(void *env, const void *caps);

int Agent_OnLoad(void *vm, char *options, void *reserved) {
    void **invoke = *(void ***)vm;
    void *jvmti = 0;
    if (((get_env_fn)invoke[6])(vm, &jvmti, 0x30010200) != 0 || jvmti == 0) {
        fprintf(stderr, "holder: no JVMTI\n");
        return 1;
    }
    void **fns = *(void ***)jvmti;
    unsigned int caps[4] = {0, 0, 0, 0};
    caps[43 / 32] |= 1u << (43 % 32);
    int err = ((add_capabilities_fn)fns[142 - 1])(jvmti, caps);
    printf("holder: AddCapabilities(can_generate_sampled_object_alloc_events) = %d\n", err);
    fflush(stdout);
    return 0;
}
