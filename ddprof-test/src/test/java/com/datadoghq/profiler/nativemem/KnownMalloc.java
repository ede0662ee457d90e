package com.datadoghq.profiler.nativemem;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.TimeUnit;

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

    /** Compiles {@code /nativemem/NAME.c} into {@code dir/libNAME.so}; null without a C compiler. */
    static Path compile(Path dir, String name) throws IOException, InterruptedException {
        Path source = dir.resolve(name + ".c");
        try (InputStream in = KnownMalloc.class.getResourceAsStream("/nativemem/" + name + ".c")) {
            Files.copy(in, source, StandardCopyOption.REPLACE_EXISTING);
        }
        Path lib = dir.resolve("lib" + name + ".so");
        Process cc;
        try {
            cc = new ProcessBuilder("cc", "-O0", "-shared", "-fPIC", "-o", lib.toString(), source.toString())
                    .redirectErrorStream(true).start();
        } catch (IOException noCompiler) {
            return null;
        }
        if (!cc.waitFor(60, TimeUnit.SECONDS) || cc.exitValue() != 0) {
            throw new IOException("cc failed: " + new String(cc.getInputStream().readAllBytes()));
        }
        return lib;
    }
}
