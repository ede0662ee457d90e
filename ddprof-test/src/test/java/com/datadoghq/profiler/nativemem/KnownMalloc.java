package com.datadoghq.profiler.nativemem;

import java.io.IOException;
import java.nio.file.Path;

import com.datadoghq.profiler.testing.CLibrary;

/** The Java side of {@code known_malloc.c}: blocks of a known size, malloc'ed and freed in C. */
final class KnownMalloc {
    private KnownMalloc() {
    }

    static native long allocate(int count, int size);

    /** Mallocs {@code count} blocks of {@code size} bytes (and an array of their pointers) and keeps them. */
    static native long keep(int count, int size);

    /** Frees what {@link #keep} kept. */
    static native void release();

    /** The Java caller of the kept blocks. */
    static long keepCaller(int count, int size) {
        return keep(count, size);
    }

    /** The Java caller the samples' stacks must reach. */
    static long knownCaller(int count, int size) {
        return allocate(count, size);
    }

    /** Builds the library into {@code dir} with the system C compiler; null when there is none. */
    static Path build(Path dir) throws IOException, InterruptedException {
        return compile(dir, "known_malloc");
    }

    /** Compiles {@code /nativemem/NAME.c} into {@code dir/libNAME.so} at -O0; null without a C compiler. */
    static Path compile(Path dir, String name) throws IOException, InterruptedException {
        return CLibrary.compile(dir, "nativemem/" + name, "-O0");
    }
}
