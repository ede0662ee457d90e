/*
 * For NativeMemTest: a library loaded after the profiler started, so hooked only at the next
 * dump. `allocate` mallocs and frees `count` blocks of `size` bytes. Built at -O0.
 */
#include <stdlib.h>

static volatile long sink;

long long Java_com_datadoghq_profiler_nativemem_LateMalloc_allocate(void *env, void *cls, int count, int size) {
    for (int i = 0; i < count; i++) {
        char *p = malloc((size_t) size);
        if (p == NULL) {
            return -1;
        }
        p[0] = (char) i;
        sink = (long) p;
        free(p);
    }
    return count;
}
