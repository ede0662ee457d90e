package com.datadoghq.profiler.platform;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.Map;

import com.datadoghq.profiler.LibraryLoader;
import com.datadoghq.profiler.testing.ChildJvm;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link LibraryLoader#resolveLibraryPath(String)}: the bundled library of this platform as a
 * file, without loading it, usable as {@code -agentpath:}.
 */
class ResolveLibraryPathTest {
    @TempDir
    Path dir;

    @Test
    void extractsTheBundledLibrary() throws Exception {
        Path lib = LibraryLoader.resolveLibraryPath(dir.toString());
        assertTrue(lib.isAbsolute(), lib.toString());
        assertEquals(dir.toAbsolutePath(), lib.getParent());
        assertTrue(Files.isRegularFile(lib), lib.toString());
        assertTrue(lib.getFileName().toString().startsWith("libjavaProfiler") && lib.toString().endsWith(".so"));
        assertEquals(EnumSet.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE),
                Files.getPosixFilePermissions(lib));
        byte[] bundled;
        try (InputStream in = LibraryLoader.class.getResourceAsStream(LibraryLoader.BUNDLED_RESOURCE)) {
            bundled = in.readAllBytes();
        }
        assertArrayEquals(bundled, Files.readAllBytes(lib));
        // Each call makes its own file.
        Path again = LibraryLoader.resolveLibraryPath(dir.toString());
        assertNotEquals(lib, again);
        assertTrue(Files.isRegularFile(lib) && Files.isRegularFile(again));
    }

    /**
     * The jar carries one library per architecture (upstream's folders) and the loader takes the
     * one {@code os.arch} names: an aarch64 JVM gets the AArch64 build, an x86_64 one the x86-64
     * build (the ELF header's machine field). The JVMs here run on x86_64 with {@code os.arch}
     * overridden; the aarch64 library itself runs in scripts/arm64-smoke.sh.
     */
    @Test
    void eachArchitectureGetsItsOwnLibrary() throws Exception {
        assumeTrue(LibraryLoader.class.getResource("/META-INF/native-libs/linux-arm64/libjavaProfiler.so") != null,
                "the jar was built without linux-arm64 (no cross toolchain: ddprof.arm64=auto skipped it)");
        Path lib = Paths.get(LibraryLoader.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        Map<String, Integer> machineOf = new LinkedHashMap<>();
        machineOf.put("aarch64", 183); // EM_AARCH64
        machineOf.put("arm64", 183);
        machineOf.put("amd64", 62); // EM_X86_64
        machineOf.put("x86_64", 62);
        for (Map.Entry<String, Integer> e : machineOf.entrySet()) {
            ChildJvm.Result r = new ChildJvm().classpath(lib).jvmArgs("-Dos.arch=" + e.getKey())
                    .main(ResolveLibraryMain.class, dir.toString()).run(dir);
            assertEquals(0, r.exitCode, r.describe());
            String[] lines = r.stdout.trim().split("\n");
            assertEquals(e.getKey(), lines[0], "os.arch not overridden: " + r.describe());
            assertEquals(e.getValue().toString(), lines[1], "ELF machine for os.arch=" + e.getKey() + ": " + r.describe());
        }
    }

    @Test
    void defaultsToTmpdir() throws Exception {
        Path lib = LibraryLoader.resolveLibraryPath(null);
        try {
            assertEquals(Path.of(System.getProperty("java.io.tmpdir")).toAbsolutePath(), lib.getParent());
        } finally {
            Files.deleteIfExists(lib);
        }
    }

    @Test
    void theFileWorksAsAnAgent() throws Exception {
        Path lib = LibraryLoader.resolveLibraryPath(dir.toString());
        ChildJvm.Result r = new ChildJvm().jvmArgs("-agentpath:" + lib, "-version").run(dir);
        assertEquals(0, r.exitCode, r.describe());
        assertTrue(r.stderr.contains("version"), r.describe());
    }
}
