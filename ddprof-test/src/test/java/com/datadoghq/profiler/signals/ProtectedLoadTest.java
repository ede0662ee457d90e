package com.datadoghq.profiler.signals;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.internal.Diagnostics;
import com.datadoghq.profiler.testing.ProfilerExtension;
import com.datadoghq.profiler.testing.TestEnv;

/**
 * Crash-protected loads (the signal handler's reads of VM memory, {@code sample/safe_access.rs})
 * in a live JVM, through {@link Diagnostics#protectedLoad}: once a profiler has started they are
 * installed; a load of libjvm's first page reads its ELF magic; a load of an unmapped page (a gap
 * in {@code /proc/self/maps}) comes back unread, by one more recovered fault, and the JVM goes on.
 * The aarch64 suite ({@code scripts/arm64-smoke.sh}) checks the same under emulation.
 */
@ExtendWith(ProfilerExtension.class)
class ProtectedLoadTest {
    private static final long PAGE = 4096;
    /** "\x7fELF", as the low 4 bytes of a little-endian 8-byte load. */
    private static final long ELF_MAGIC = 0x464c457fL;

    @TempDir
    Path dir;

    @Test
    void anUnmappedPageFailsAndAMappedOneReads(JavaProfiler profiler) throws Exception {
        TestEnv.start(profiler, "start,cpu=10ms,file=" + dir.resolve("loads.jfr"));

        long libjvm = -1;
        for (String line : Files.readAllLines(Paths.get("/proc/self/maps"))) {
            String[] f = line.trim().split("\\s+");
            if (f.length >= 6 && f[5].endsWith("/libjvm.so") && Long.parseLong(f[2], 16) == 0) {
                libjvm = Long.parseUnsignedLong(f[0].split("-")[0], 16);
                break;
            }
        }
        assertTrue(libjvm > 0, "libjvm.so's first mapping in /proc/self/maps");
        long[] mapped = Diagnostics.protectedLoad(libjvm);
        assertEquals(1, mapped[3], "protected loads installed after a start");
        assertEquals(1, mapped[0], "libjvm's first page is read");
        assertEquals(ELF_MAGIC, mapped[1] & 0xffffffffL, "libjvm's first bytes: " + Long.toHexString(mapped[1]));

        // A page inside a gap between mappings; another thread may map it meanwhile: then the
        // next gap is tried.
        int tried = 0;
        for (long at : gapPages()) {
            if (tried++ == 5) {
                break;
            }
            long[] unmapped = Diagnostics.protectedLoad(at);
            if (unmapped[0] == 1 && mapped(at)) {
                continue;
            }
            assertEquals(0, unmapped[0], "the load of unmapped 0x" + Long.toHexString(at) + " came back unread");
            assertEquals(0, unmapped[1]);
            assertTrue(unmapped[2] > mapped[2], "by a recovered fault: " + mapped[2] + " then " + unmapped[2]);
            // The JVM goes on, and so do the loads.
            assertEquals(1, Diagnostics.protectedLoad(libjvm)[0]);
            profiler.stop();
            return;
        }
        throw new AssertionError("no unmapped page stayed unmapped for the load (" + tried + " tried)");
    }

    /** The second page of each gap of at least three pages between mappings. */
    private static List<Long> gapPages() throws IOException {
        List<Long> pages = new ArrayList<>();
        long previousEnd = -1;
        for (long[] r : ranges()) {
            if (previousEnd > 0 && Long.compareUnsigned(r[0] - previousEnd, 3 * PAGE) >= 0) {
                pages.add(previousEnd + PAGE);
            }
            previousEnd = r[1];
        }
        return pages;
    }

    private static boolean mapped(long at) throws IOException {
        for (long[] r : ranges()) {
            if (Long.compareUnsigned(at, r[0]) >= 0 && Long.compareUnsigned(at, r[1]) < 0) {
                return true;
            }
        }
        return false;
    }

    /** The mappings' [start, end), in address order (as the kernel lists them). */
    private static List<long[]> ranges() throws IOException {
        List<long[]> out = new ArrayList<>();
        for (String line : Files.readAllLines(Paths.get("/proc/self/maps"))) {
            String[] range = line.split(" ", 2)[0].split("-");
            out.add(new long[] {Long.parseUnsignedLong(range[0], 16), Long.parseUnsignedLong(range[1], 16)});
        }
        return out;
    }
}
