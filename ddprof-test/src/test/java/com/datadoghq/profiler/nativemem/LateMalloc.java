package com.datadoghq.profiler.nativemem;

import java.io.IOException;
import java.nio.file.Path;

/** The Java side of {@code late_malloc.c}: a library loaded while the profiler runs. */
final class LateMalloc {
    private LateMalloc() {
    }

    static native long allocate(int count, int size);

    /** The Java caller the samples' stacks must reach. */
    static long lateCaller(int count, int size) {
        return allocate(count, size);
    }

    /** Builds the library into {@code dir}; null without a C compiler. */
    static Path build(Path dir) throws IOException, InterruptedException {
        return KnownMalloc.compile(dir, "late_malloc");
    }
}
