package com.datadoghq.profiler.lifecycle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import com.datadoghq.profiler.LibraryLoader;
import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The extracted library file and its mapping: the copy {@code LibraryLoader} extracts is deleted
 * as soon as it is loaded (nothing left in a private {@code java.io.tmpdir} after SIGKILL or
 * {@code Runtime.halt}), a file the caller names is never deleted, our own (deleted) library is
 * still named in the recording, and the library stays mapped and working after the class loader
 * that loaded it is collected, a second loader sharing the same copy.
 */
class LibraryFileTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(90);

    @TempDir
    Path dir;

    @Test
    void noExtractedCopyLeftAfterSigkill() throws Exception {
        Path tmp = Files.createDirectory(dir.resolve("tmp"));
        Path file = dir.resolve("killed.jfr");
        Process p = startChild(tmp, "wait", file);
        try {
            List<String> out = readUntilReady(p);
            assertLoadedFromDeletedCopy(out, tmp);
            assertEquals(List.of(), libraryFiles(tmp), "copy still in tmpdir while running:\n" + out);
        } finally {
            p.destroyForcibly(); // SIGKILL on Linux
            assertTrue(p.waitFor(30, TimeUnit.SECONDS), "child did not die");
        }
        assertEquals(137, p.exitValue(), "not killed by SIGKILL");
        assertEquals(List.of(), libraryFiles(tmp), "copy left in the private java.io.tmpdir after SIGKILL");
    }

    @Test
    void noExtractedCopyLeftAfterHaltAndOwnLibraryStillNamed() throws Exception {
        Path tmp = Files.createDirectory(dir.resolve("tmp"));
        Path file = dir.resolve("halted.jfr");
        Process p = startChild(tmp, "halt", file);
        List<String> out = readUntilReady(p);
        assertTrue(p.waitFor(TIMEOUT.getSeconds(), TimeUnit.SECONDS), "child did not halt:\n" + out);
        assertEquals(0, p.exitValue(), "halt status:\n" + out);
        assertLoadedFromDeletedCopy(out, tmp);
        assertEquals(List.of(), libraryFiles(tmp), "copy left in the private java.io.tmpdir after Runtime.halt");

        // Our own, deleted, library is still read (through the descriptor it keeps on itself):
        // the dump lists it among the native libraries under the path it was loaded from.
        String loaded = loadedPath(out);
        List<String> libs = JfrReader.events(Path.of(file + ".dump.jfr"), "jdk.NativeLibrary").stream()
                .map(e -> e.getString("name")).collect(Collectors.toList());
        assertTrue(libs.contains(loaded), "no jdk.NativeLibrary " + loaded + " in " + libs);
    }

    @Test
    void explicitLibraryFileIsKept() throws Exception {
        Path lib = Files.copy(TestEnv.nativeLib(), dir.resolve("libjavaProfiler.so"));
        Path file = dir.resolve("explicit.jfr");
        ChildJvm.Result r = new ChildJvm()
                .classpath(TestEnv.libJar())
                .jvmArgs("-Dddprof.native.lib=" + lib)
                .main(ClasspathProfilerMain.class, file.toString(), "500")
                .timeout(TIMEOUT)
                .run(dir);
        assertEquals(0, r.exitCode, r.describe());
        assertTrue(Files.isRegularFile(lib), "the library file the caller named was deleted");
        assertTrue(Files.isRegularFile(file), r.describe());
    }

    @Test
    void libraryOutlivesTheClassLoaderThatLoadedIt() throws Exception {
        Path tmp = Files.createDirectory(dir.resolve("tmp"));
        Path file = dir.resolve("unloaded.jfr");
        ChildJvm.Result r = new ChildJvm()
                .jvmArgs("-Djava.io.tmpdir=" + tmp)
                .main(UnloadedLoaderMain.class, TestEnv.libJar().toString(), file.toString())
                .timeout(TIMEOUT)
                .run(dir);
        assertFalse(r.timedOut, r.describe());
        assertEquals(0, r.exitCode, "child JVM died:\n" + r.describe());
        assertTrue(r.stdout.contains("unloaded=true"), "the first class loader was not collected:\n" + r.describe());
        assertTrue(r.stdout.contains("Running          : true"), "second loader: not running:\n" + r.describe());
        // The second loader reached the same copy (one inode mapped), through the descriptor.
        assertTrue(r.stdout.contains("inodes=1 "), "not one shared copy:\n" + r.describe());
        assertTrue(r.stdout.contains("second loaded=/proc/self/fd/"), r.describe());
        assertTrue(r.stdout.contains("done"), r.describe());
        assertEquals(List.of(), libraryFiles(tmp), "copies left in tmpdir");
        List<RecordedEvent> samples = JfrReader.executionSamples(file);
        long after = samples.stream().filter(e -> JfrReader.threadName(e).startsWith("after-unload-")).count();
        assertTrue(after > 0, "no sample after the first loader was collected:\n" + r.describe());
    }

    /**
     * The built library carries DF_1_NODELETE: the dynamic linker never unmaps it, whatever
     * dlclose the JDK makes when a class loader is collected. (glibc happens to keep it today
     * for other reasons too, so the test above alone would not catch the flag's loss.)
     */
    @Test
    void bundledLibraryIsLinkedNodelete() throws Exception {
        byte[] elf;
        try (InputStream in = LibraryLoader.class.getResourceAsStream(LibraryLoader.BUNDLED_RESOURCE)) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            in.transferTo(out);
            elf = out.toByteArray();
        }
        long flags1 = dynamicEntry(elf, 0x6ffffffbL); // DT_FLAGS_1
        assertTrue(flags1 >= 0 && (flags1 & 0x8) != 0, "DF_1_NODELETE not set; DT_FLAGS_1 = " + flags1);
        assertTrue((dynamicEntry(Files.readAllBytes(TestEnv.nativeLib()), 0x6ffffffbL) & 0x8) != 0);
    }

    /** The value of the first dynamic-section entry tagged {@code tag}, or -1. */
    private static long dynamicEntry(byte[] elf, long tag) {
        ByteBuffer b = ByteBuffer.wrap(elf).order(ByteOrder.LITTLE_ENDIAN);
        long shoff = b.getLong(0x28);
        int shentsize = Short.toUnsignedInt(b.getShort(0x3a));
        int shnum = Short.toUnsignedInt(b.getShort(0x3c));
        for (int i = 0; i < shnum; i++) {
            int sh = (int) (shoff + (long) i * shentsize);
            if (b.getInt(sh + 4) != 6) { // SHT_DYNAMIC
                continue;
            }
            int off = (int) b.getLong(sh + 24);
            int size = (int) b.getLong(sh + 32);
            for (int e = off; e + 16 <= off + size; e += 16) {
                if (b.getLong(e) == tag) {
                    return b.getLong(e + 8);
                }
            }
        }
        return -1;
    }

    private Process startChild(Path tmp, String mode, Path file) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(TestEnv.javaExecutable());
        cmd.add("-Djava.io.tmpdir=" + tmp);
        cmd.add("-cp");
        cmd.add(ChildJvm.testClasses() + File.pathSeparator + TestEnv.libJar());
        cmd.add(ExtractedLibraryMain.class.getName());
        cmd.add(mode);
        cmd.add(file.toString());
        return new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
    }

    /** The child's output up to its READY line (fails if it ends or takes too long first). */
    private static List<String> readUntilReady(Process p) throws Exception {
        List<String> lines = new ArrayList<>();
        Thread reader = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) {
                    synchronized (lines) {
                        lines.add(line);
                        lines.notifyAll();
                    }
                }
            } catch (IOException ignored) {
                // the process died
            }
        }, "child-output");
        reader.setDaemon(true);
        reader.start();
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        synchronized (lines) {
            while (!lines.contains("READY")) {
                long left = deadline - System.nanoTime();
                if (left <= 0 || (!p.isAlive() && !reader.isAlive())) {
                    throw new AssertionError("child never got READY:\n" + String.join("\n", lines));
                }
                lines.wait(Math.min(TimeUnit.NANOSECONDS.toMillis(left) + 1, 200));
            }
            return new ArrayList<>(lines);
        }
    }

    private static String loadedPath(List<String> out) {
        return out.stream().filter(l -> l.startsWith("loaded=")).map(l -> l.substring("loaded=".length()))
                .findFirst().orElseThrow(() -> new AssertionError("no loaded= line:\n" + out));
    }

    /** Loaded from a copy extracted into {@code tmp}, mapped and deleted. */
    private static void assertLoadedFromDeletedCopy(List<String> out, Path tmp) throws IOException {
        String loaded = loadedPath(out);
        assertTrue(loaded.startsWith(tmp.toRealPath().toString() + "/libjavaProfiler-"), "loaded " + loaded + " not from " + tmp);
        assertTrue(out.stream().anyMatch(l -> l.startsWith("mapped: ") && l.endsWith(loaded + " (deleted)")),
                "not mapped as a deleted file:\n" + String.join("\n", out));
    }

    private static List<String> libraryFiles(Path tmp) throws IOException {
        try (Stream<Path> s = Files.list(tmp)) {
            return s.map(f -> f.getFileName().toString()).filter(n -> n.startsWith("libjavaProfiler"))
                    .collect(Collectors.toList());
        }
    }
}
