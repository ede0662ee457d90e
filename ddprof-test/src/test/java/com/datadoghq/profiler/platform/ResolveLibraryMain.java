package com.datadoghq.profiler.platform;

import java.nio.file.Files;

import com.datadoghq.profiler.LibraryLoader;

/**
 * Child JVM of {@link ResolveLibraryPathTest}: prints the {@code os.arch} it runs with and the
 * ELF machine field (e_machine) of the file {@link LibraryLoader#resolveLibraryPath(String)}
 * extracts into {@code args[0]} (deleted when this JVM exits), one per line. Loads nothing.
 */
public final class ResolveLibraryMain {
    private ResolveLibraryMain() {
    }

    public static void main(String[] args) throws Exception {
        System.out.println(System.getProperty("os.arch"));
        byte[] header = Files.readAllBytes(LibraryLoader.resolveLibraryPath(args[0]));
        System.out.println((header[18] & 0xff) | (header[19] & 0xff) << 8);
    }
}
