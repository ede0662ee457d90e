/*
 * A native library of known allocations for NativeMemTest: `allocate` mallocs `count`
 * blocks of `size` bytes from this library (so through this library's own malloc import
 * slot) and frees each one before the next. Built at -O0 so the malloc/free pairs stay.
 * No JNI header is needed: the arguments are plain C integers.
 */
#include <stdlib.h>
#include <string.h>

static volatile long sink;

long long Java_com_datadoghq_profiler_nativemem_KnownMalloc_allocate(void *env, void *cls, int count, int size) {
    long long touched = 0;
    for (int i = 0; i < count; i++) {
        char *p = malloc((size_t) size);
        if (p == NULL) {
            return -1;
        }
        p[0] = (char) i;
        p[size - 1] = (char) i;
        touched += p[0];
        sink = (long) p;
        free(p);
    }
    return touched;
}

/* Blocks kept live until `release`: what `convert --leak` must report. */
static char **kept;
static int kept_count;

long long Java_com_datadoghq_profiler_nativemem_KnownMalloc_keep(void *env, void *cls, int count, int size) {
    kept = malloc((size_t) count * sizeof(char *));
    if (kept == NULL) {
        return -1;
    }
    for (int i = 0; i < count; i++) {
        kept[i] = malloc((size_t) size);
        if (kept[i] == NULL) {
            return -1;
        }
        kept[i][0] = (char) i;
    }
    kept_count = count;
    return count;
}

void Java_com_datadoghq_profiler_nativemem_KnownMalloc_release(void *env, void *cls) {
    for (int i = 0; i < kept_count; i++) {
        free(kept[i]);
    }
    free(kept);
    kept = NULL;
    kept_count = 0;
}
