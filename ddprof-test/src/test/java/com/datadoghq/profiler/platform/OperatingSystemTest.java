package com.datadoghq.profiler.platform;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

import com.datadoghq.profiler.Arch;
import com.datadoghq.profiler.OperatingSystem;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link OperatingSystem} and {@link Arch}: names, the running system, musl detection. */
class OperatingSystemTest {
    @TempDir
    Path dir;

    @Test
    void osNames() {
        assertEquals(OperatingSystem.linux, OperatingSystem.of("Linux"));
        assertEquals(OperatingSystem.linux, OperatingSystem.of("linux"));
        assertEquals(OperatingSystem.macos, OperatingSystem.of("Mac OS X"));
        assertEquals(OperatingSystem.macos, OperatingSystem.of("macOS"));
        assertEquals(OperatingSystem.macos, OperatingSystem.of("mac"));
        assertEquals(OperatingSystem.unknown, OperatingSystem.of("Windows 11"));
        assertEquals(OperatingSystem.unknown, OperatingSystem.of("LINUX"));
        assertEquals(OperatingSystem.unknown, OperatingSystem.of(""));
        assertEquals(OperatingSystem.unknown, OperatingSystem.of(null));
        assertEquals(OperatingSystem.linux, OperatingSystem.current());
    }

    @Test
    void archNames() {
        for (String s : new String[] {"x86_64", "amd64", "k8"}) {
            assertEquals(Arch.x64, Arch.of(s), s);
        }
        for (String s : new String[] {"x86", "i386", "i486", "i586", "i686"}) {
            assertEquals(Arch.x86, Arch.of(s), s);
        }
        assertEquals(Arch.arm, Arch.of("ARM"));
        assertEquals(Arch.arm, Arch.of("aarch32"));
        assertEquals(Arch.arm64, Arch.of("aarch64"));
        assertEquals(Arch.arm64, Arch.of("arm64"));
        assertEquals(Arch.unknown, Arch.of("riscv64"));
        assertEquals(Arch.unknown, Arch.of("AMD64"));
        assertEquals(Arch.unknown, Arch.of(null));
        assertEquals(Arch.of(System.getProperty("os.arch")), Arch.current());
        assertEquals(Arch.x64, Arch.current()); // the suite runs on linux x86_64
    }

    /** All three answers agree with what this process maps: glibc's libc or musl's loader. */
    @Test
    void muslOfTheRunningJvm() throws Exception {
        String maps = new String(Files.readAllBytes(Path.of("/proc/self/maps")), StandardCharsets.ISO_8859_1);
        boolean musl = maps.contains("ld-musl-");
        assertEquals(!musl, maps.contains("/libc.so.6") || maps.contains("/libc-2."), "neither libc found:\n" + maps);
        OperatingSystem os = OperatingSystem.current();
        assertEquals(musl, os.isMusl());
        assertEquals(musl, call(os, "isMuslProcSelfMaps"));
        assertEquals(musl, call(os, "isMuslJavaExecutable"));
    }

    /** The launcher check reads the ELF interpreter of {@code $java.home/bin/java}. */
    @Test
    void muslFromTheLauncher() throws Exception {
        OperatingSystem os = OperatingSystem.linux;
        assertTrue(withLauncher(elf("/lib/ld-musl-x86_64.so.1"), () -> call(os, "isMuslJavaExecutable")));
        assertFalse(withLauncher(elf("/lib64/ld-linux-x86-64.so.2"), () -> call(os, "isMuslJavaExecutable")));
        assertFalse(withLauncher(elf("no interpreter"), () -> call(os, "isMuslJavaExecutable")));
        // Not an ELF file: an error from the launcher check, then isMusl() answers from the maps.
        byte[] script = "#!/bin/sh\nexec /lib/ld-musl-x86_64.so.1\n".getBytes(StandardCharsets.US_ASCII);
        InvocationTargetException e = assertThrows(InvocationTargetException.class,
                () -> withLauncher(script, () -> call(os, "isMuslJavaExecutable")));
        assertTrue(e.getCause() instanceof IOException, e.toString());
        boolean fromMaps = call(os, "isMuslProcSelfMaps");
        assertEquals(fromMaps, withLauncher(script, os::isMusl));
        // No launcher at all: the same fallback.
        assertEquals(fromMaps, withLauncher(null, os::isMusl));
    }

    /** The first 64 bytes of an ELF header, then a PT_INTERP-like string. */
    private static byte[] elf(String interpreter) {
        byte[] head = new byte[64];
        head[0] = 0x7f;
        head[1] = 'E';
        head[2] = 'L';
        head[3] = 'F';
        head[4] = 2;
        byte[] tail = interpreter.getBytes(StandardCharsets.US_ASCII);
        byte[] file = Arrays.copyOf(head, head.length + tail.length + 1);
        System.arraycopy(tail, 0, file, head.length, tail.length);
        return file;
    }

    interface Check {
        boolean run() throws Exception;
    }

    /** Runs {@code check} with {@code java.home} pointing at a JDK whose bin/java is {@code launcher} (null: none). */
    private boolean withLauncher(byte[] launcher, Check check) throws Exception {
        Path home = Files.createTempDirectory(dir, "home");
        Files.createDirectories(home.resolve("bin"));
        if (launcher != null) {
            Files.write(home.resolve("bin").resolve("java"), launcher);
        }
        String saved = System.getProperty("java.home");
        System.setProperty("java.home", home.toString());
        try {
            return check.run();
        } finally {
            System.setProperty("java.home", saved);
        }
    }

    /** The package-private checks, as upstream's tests call them. */
    private static boolean call(OperatingSystem os, String method) throws Exception {
        Method m = OperatingSystem.class.getDeclaredMethod(method);
        m.setAccessible(true);
        return (Boolean) m.invoke(os);
    }
}
