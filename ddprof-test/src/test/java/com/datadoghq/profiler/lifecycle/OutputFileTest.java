package com.datadoghq.profiler.lifecycle;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.time.Duration;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.CpuBurner;
import com.datadoghq.profiler.testing.CpuWorkloadMain;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.ProfilerExtension;
import com.datadoghq.profiler.testing.TestEnv;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Recordings are written safely: never through a symbolic link or into a file that is not a
 * regular one (refused at start, nothing touched), never seen half-written (a temporary file
 * renamed into place), and a write that fails raises an exception the method's signature allows
 * while the unwritten data goes into the next recording written, not lost. A recording that exists
 * keeps its mode (and, where the process may give it, its owner) through start, dump and stop; a new
 * one is at most {@code rw-r--r--}. The temporary file's name cannot be guessed: names created in
 * the directory beforehand do not stop a start. In {@code file=}, {@code %{VAR}} past the pattern's
 * start is one file name (its slashes written {@code _}), and an unset variable is an error naming it.
 */
@ExtendWith(ProfilerExtension.class)
class OutputFileTest {
    @TempDir
    Path dir;

    private final JavaProfiler profiler;

    OutputFileTest(JavaProfiler profiler) {
        this.profiler = profiler;
    }

    @Test
    void aSymlinkAtTheOutputPathIsRefusedAndItsTargetUntouched() throws Exception {
        Path target = dir.resolve("precious.txt");
        Files.write(target, "precious".getBytes(StandardCharsets.UTF_8));
        Path link = dir.resolve("rec.jfr");
        Files.createSymbolicLink(link, target);
        assertThrows(IOException.class, () -> profiler.execute("start,cpu=10ms,file=" + link));
        assertFalse(TestEnv.isRunning(profiler));
        assertEquals("precious", new String(Files.readAllBytes(target), StandardCharsets.UTF_8));
        assertTrue(Files.isSymbolicLink(link), "the link itself must be left alone");

        Path dangling = dir.resolve("dangling.jfr");
        Files.createSymbolicLink(dangling, dir.resolve("nowhere.jfr"));
        assertThrows(IOException.class, () -> profiler.execute("start,cpu=10ms,file=" + dangling));
        assertFalse(Files.exists(dir.resolve("nowhere.jfr")), "a dangling link's target was created");
    }

    @Test
    void devicesAndDirectoriesAreRefusedAtStart() {
        for (String path : new String[] {"/dev/full", "/dev/null", dir.toString()}) {
            IOException e = assertThrows(IOException.class, () -> profiler.execute("start,cpu=10ms,file=" + path),
                    "start with file=" + path);
            assertTrue(e.getMessage().contains(path), "the message names the path: " + e.getMessage());
            assertFalse(TestEnv.isRunning(profiler), "running after a refused start with file=" + path);
        }
    }

    @Test
    void aFailedDumpRaisesAndItsSamplesReachTheNextRecording() throws Exception {
        Path main = dir.resolve("main.jfr");
        TestEnv.start(profiler, "start,cpu=1ms,file=" + main);
        try {
            CpuBurner.burn(400);
            Path unwritable = dir.resolve("no-such-dir").resolve("one.jfr");
            assertThrows(UncheckedIOException.class, () -> profiler.dump(unwritable));
            assertTrue(profiler.getDebugCounters().getOrDefault("recording_write_errors", 0L) >= 1,
                    "recording_write_errors: " + profiler.getDebugCounters().get("recording_write_errors"));
            CpuBurner.burn(400);
            Path next = dir.resolve("two.jfr");
            profiler.dump(next);
            // Both chunks: the one that could not be written first, then the new one.
            assertTrue(JfrReader.readAll(next).stream().filter(e -> e.getEventType().getName()
                    .equals(JfrReader.PROFILER_CONFIG)).count() >= 2, "the unwritten chunk is missing from " + next);
            assertTrue(JfrReader.executionSamples(next).size() >= 20, "samples in " + next);
        } finally {
            profiler.stop();
        }
        try (Stream<Path> files = Files.list(dir)) {
            List<String> left = files.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".tmp"))
                    .collect(Collectors.toList());
            assertTrue(left.isEmpty(), "temporary files left: " + left);
        }
        assertTrue(Files.isRegularFile(main, LinkOption.NOFOLLOW_LINKS));
        assertArrayEquals(new byte[] {'F', 'L', 'R', 0}, java.util.Arrays.copyOf(Files.readAllBytes(main), 4));
    }

    @Test
    void anExistingRecordingKeepsItsModeAndOwnerThroughStartDumpAndStop() throws Exception {
        Path main = dir.resolve("private.jfr");
        Path dumped = dir.resolve("dumped.jfr");
        Files.write(main, new byte[] {1});
        Files.write(dumped, new byte[] {2});
        Files.setPosixFilePermissions(main, PosixFilePermissions.fromString("rw-------"));
        Files.setPosixFilePermissions(dumped, PosixFilePermissions.fromString("rw-r-----"));
        // As root (the directory this test made is root's) the file can belong to someone else
        // first: the owner must be kept too. Otherwise the owner is this user's and stays so.
        boolean root = Integer.valueOf(0).equals(Files.getAttribute(dir, "unix:uid"));
        if (root) {
            Files.setAttribute(main, "unix:uid", 4321);
            Files.setAttribute(main, "unix:gid", 4322);
        }
        Object uid = Files.getAttribute(main, "unix:uid");
        Object gid = Files.getAttribute(main, "unix:gid");

        TestEnv.start(profiler, "start,cpu=1ms,file=" + main);
        try {
            assertMode("rw-------", main, "after start");
            CpuBurner.burn(100);
            profiler.dump(dumped);
            assertMode("rw-------", main, "after a dump");
            assertMode("rw-r-----", dumped, "a dump's file");
            assertTrue(JfrReader.executionSamples(dumped).size() >= 1, "no samples in " + dumped);
            CpuBurner.burn(100);
        } finally {
            profiler.stop();
        }
        assertMode("rw-------", main, "after stop");
        assertArrayEquals(new byte[] {'F', 'L', 'R', 0}, java.util.Arrays.copyOf(Files.readAllBytes(main), 4));
        assertEquals(uid, Files.getAttribute(main, "unix:uid"), "owner");
        assertEquals(gid, Files.getAttribute(main, "unix:gid"), "group");
    }

    @Test
    void aNewRecordingIsAtMostReadableByOthers() throws Exception {
        Path main = dir.resolve("new.jfr");
        TestEnv.start(profiler, "start,cpu=10ms,file=" + main);
        profiler.stop();
        Set<PosixFilePermission> perms = Files.getPosixFilePermissions(main);
        perms.removeAll(PosixFilePermissions.fromString("rw-r--r--"));
        assertTrue(perms.isEmpty(), "permissions beyond rw-r--r--: " + PosixFilePermissions.toString(perms));
    }

    @Test
    void temporaryNamesCreatedBeforehandDoNotStopAStart() throws Exception {
        // In a fresh JVM, which creates the names the earlier scheme would use before it starts.
        ChildJvm.Result r = new ChildJvm()
                .classpath(TestEnv.libJar())
                .main(PreCreatedNamesMain.class, dir.toString())
                .timeout(Duration.ofSeconds(60))
                .run(dir);
        assertFalse(r.timedOut, "child JVM hung:\n" + r.describe());
        assertEquals(0, r.exitCode, "child JVM failed:\n" + r.describe());
        assertTrue(r.stdout.contains("workload done"), r.describe());
        Path main = dir.resolve("pre.jfr");
        assertArrayEquals(new byte[] {'F', 'L', 'R', 0}, java.util.Arrays.copyOf(Files.readAllBytes(main), 4));
        assertTrue(JfrReader.executionSamples(dir.resolve("dump.jfr")).size() >= 1, "no samples in the dump");
        try (Stream<Path> files = Files.list(dir)) {
            List<Path> tmp = files.filter(p -> p.getFileName().toString().endsWith(".tmp")).collect(Collectors.toList());
            assertEquals(PreCreatedNamesMain.NAMES, tmp.size(),
                    "the names made beforehand are left alone, and no temporary file is left");
            for (Path p : tmp) {
                assertArrayEquals(new byte[] {7}, Files.readAllBytes(p), p + " was written");
            }
        }
    }

    @Test
    void anUnsetVariableInTheFilePatternIsAnErrorNamingIt() throws Exception {
        String pattern = dir + "/%{DDPROF_TEST_UNSET_VARIABLE}/rec.jfr";
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> profiler.execute("start,cpu=10ms,file=" + pattern));
        assertTrue(e.getMessage().contains("DDPROF_TEST_UNSET_VARIABLE") && e.getMessage().contains("not set"),
                e.getMessage());
        assertFalse(TestEnv.isRunning(profiler));
        try (Stream<Path> files = Files.list(dir)) {
            assertEquals(0, files.count(), "a refused start created files");
        }
    }

    @Test
    void aVariablesSlashesCannotMoveTheRecording() throws Exception {
        Path inner = dir.resolve("recordings");
        Files.createDirectories(inner);
        ChildJvm.Result r = new ChildJvm()
                .env("DDPROF_TEST_TEAM", "../escaped/x")
                .jvmArgs("-agentpath:" + TestEnv.nativeLib() + "=start,cpu=10ms,file=" + inner
                        + "/%{DDPROF_TEST_TEAM}-%p.jfr")
                .main(CpuWorkloadMain.class, "300")
                .timeout(Duration.ofSeconds(60))
                .run(dir);
        assertFalse(r.timedOut, "child JVM hung:\n" + r.describe());
        assertEquals(0, r.exitCode, "child JVM failed:\n" + r.describe());
        assertFalse(Files.exists(dir.resolve("escaped")), "the value's slashes made or used a directory");
        List<String> names;
        try (Stream<Path> files = Files.list(inner)) {
            names = files.map(p -> p.getFileName().toString()).collect(Collectors.toList());
        }
        assertEquals(1, names.size(), names.toString());
        assertTrue(names.get(0).matches("\\.\\._escaped_x-\\d+\\.jfr"), names.toString());
        assertTrue(JfrReader.executionSamples(inner.resolve(names.get(0))).size() >= 1, "no samples");
    }

    private static void assertMode(String expected, Path p, String when) throws IOException {
        assertEquals(expected, PosixFilePermissions.toString(Files.getPosixFilePermissions(p)), p + " " + when);
    }
}
