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
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.CpuBurner;
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
 * while the unwritten data goes into the next recording written, not lost.
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
}
