package com.datadoghq.profiler;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

/**
 * The operating system, told from {@code os.name}; on Linux also which C library the JVM
 * runs on (glibc or musl), which decides which native library build fits.
 */
public enum OperatingSystem {
    linux("Linux", "linux"),
    macos("Mac OS X", "macOS", "mac"),
    unknown();

    /** The {@code os.name} spellings of this system, compared exactly. */
    private final String[] identifiers;

    OperatingSystem(String... identifiers) {
        this.identifiers = identifiers;
    }

    /** The system one of whose {@code os.name} spellings is {@code identifier}, else {@link #unknown}. */
    public static OperatingSystem of(String identifier) {
        if (identifier != null) {
            for (OperatingSystem os : values()) {
                for (String id : os.identifiers) {
                    if (id.equals(identifier)) {
                        return os;
                    }
                }
            }
        }
        return unknown;
    }

    /** The running system, from the {@code os.name} property. */
    public static OperatingSystem current() {
        return of(System.getProperty("os.name"));
    }

    /**
     * Whether this JVM runs on musl libc. Looks at the {@code java} launcher's ELF program
     * interpreter first, then at the libraries mapped into this process.
     *
     * @throws IOException if neither could be read (the launcher's error is thrown)
     */
    public boolean isMusl() throws IOException {
        try {
            return isMuslJavaExecutable();
        } catch (IOException launcherUnreadable) {
            try {
                return isMuslProcSelfMaps();
            } catch (IOException ignored) {
                throw launcherUnreadable;
            }
        }
    }

    /**
     * musl from {@code /proc/self/maps}: the first mapping naming {@code -musl-} (musl's
     * loader, {@code ld-musl-<arch>.so.1}) answers yes, the first naming {@code /libc.}
     * (glibc's {@code libc.so.6}) answers no; neither: no.
     */
    boolean isMuslProcSelfMaps() throws IOException {
        try (BufferedReader maps = Files.newBufferedReader(Paths.get("/proc/self/maps"),
                StandardCharsets.ISO_8859_1)) {
            for (String line = maps.readLine(); line != null; line = maps.readLine()) {
                if (line.contains("-musl-")) {
                    return true;
                }
                if (line.contains("/libc.")) {
                    return false;
                }
            }
        }
        return false;
    }

    /**
     * musl from {@code $java.home/bin/java}: an ELF file whose program interpreter, the first
     * {@code /ld-} path in its first 4 KiB (where PT_INTERP's string sits), is
     * {@code /ld-musl...}. No {@code /ld-} at all: not musl.
     *
     * @throws IOException if the launcher cannot be read or is not an ELF file
     */
    boolean isMuslJavaExecutable() throws IOException {
        Path launcher = Paths.get(System.getProperty("java.home", ""), "bin", "java");
        byte[] head = new byte[4 + 4096];
        int length = 0;
        try (InputStream in = Files.newInputStream(launcher)) {
            int n;
            while (length < head.length && (n = in.read(head, length, head.length - length)) > 0) {
                length += n;
            }
        }
        if (length < 5 || head[0] != 0x7f || head[1] != 'E' || head[2] != 'L' || head[3] != 'F') {
            throw new IOException(launcher + " is not an ELF executable");
        }
        int interpreter = indexOf(head, 4, length, "/ld-");
        return interpreter >= 0 && indexOf(head, interpreter + 4, Math.min(length, interpreter + 8), "musl")
                == interpreter + 4;
    }

    /** First index of {@code ascii} in {@code bytes[from, to)}, or -1. */
    private static int indexOf(byte[] bytes, int from, int to, String ascii) {
        outer:
        for (int i = from; i + ascii.length() <= to; i++) {
            for (int k = 0; k < ascii.length(); k++) {
                if (bytes[i + k] != ascii.charAt(k)) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }
}
