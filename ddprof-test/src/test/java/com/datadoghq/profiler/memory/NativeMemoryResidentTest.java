package com.datadoghq.profiler.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.TestEnv;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code native_mem_resident_bytes.calltrace} is what the trace table's mappings cost in RSS,
 * and the report's lower bound adds it up as such. A page of an anonymous mapping joins the
 * RSS when it is first written; a page only read maps the kernel's shared zero page, which
 * costs nothing (and which {@code mincore} nonetheless reports as resident). The table is
 * written by interning traces: at most one slot page per trace stored, plus the frame-arena
 * pages their frames fill ({@code calltrace_storage_inserted_bytes} counts both, since the start:
 * a dump empties the tables but their pages stay resident for the next round). So in a fresh JVM the
 * gauge can exceed that only by a handful of pages at the ends of the written ranges.
 */
class NativeMemoryResidentTest {
    private static final long PAGE = 4096;
    /** Partial pages at both ends of the written ranges, in two generations. */
    private static final long SLACK_PAGES = 8;

    @TempDir
    Path dir;

    @Test
    void residentTraceTableBytesAreBoundedByWhatWasWritten() throws Exception {
        ChildJvm.Result r = new ChildJvm()
                .classpath(TestEnv.libJar())
                .main(NativeMemoryResidentMain.class, dir.resolve("resident.jfr").toString(),
                        dir.resolve("resident-dump.jfr").toString(), "1000")
                .timeout(Duration.ofSeconds(60))
                .run(dir);
        assertEquals(0, r.exitCode, r.describe());
        for (String phase : new String[] {"after-start", "after-dump"}) {
            Matcher m = Pattern.compile(phase + " resident=(\\d+) traces=(\\d+) bytes=(\\d+)").matcher(r.stdout);
            assertTrue(m.find(), "no " + phase + " line:\n" + r.describe());
            long resident = Long.parseLong(m.group(1));
            long traces = Long.parseLong(m.group(2));
            long bytes = Long.parseLong(m.group(3));
            long bound = (traces + (bytes + PAGE - 1) / PAGE + SLACK_PAGES) * PAGE;
            assertTrue(resident <= bound,
                    phase + ": native_mem_resident_bytes.calltrace = " + resident + " but only " + traces
                            + " traces (" + bytes + " bytes) were stored, which can have written at most "
                            + bound + " bytes of pages. Pages only read (the zero page) are counted as resident."
                            + "\n" + r.describe());
        }
    }
}
