package com.datadoghq.profiler.platform;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;

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
