package com.datadoghq.profiler.nativemem;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The native-memory profile of a quiet service is the service's, not the profiler's: with every
 * allocation sampled ({@code nativemem=0}) and the profiler's background threads busy (the wall
 * sampler reading {@code /proc/self/task} every period with {@code filter=}, the CPU engine, the
 * library watcher) over several dumps, no {@code datadog.NativeMemoryAllocation} is on one of the
 * profiler's threads or has one of the profiler's own functions on its stack, while the
 * application's zlib allocations are all still there.
 */
class ProfilerOutOfItsOwnProfileTest {
    static final String EVENT = "datadog.NativeMemoryAllocation";
    /**
     * Functions of this library as the symbolizer names them: our Rust crate and the Rust runtime
     * linked into it, demangled or still in Rust's v0 mangling ({@code _R...}; no other Rust code runs
     * in these JVMs), and our JNI and exported C functions.
     */
    static final Pattern OWN_FUNCTION = Pattern.compile("(^|[<&(\\s])(javaProfiler|std|core|alloc|parking_lot)::"
            + "|^_R[A-Za-z0-9_]+$|^Java_com_datadoghq_profiler_|^ddprof_|^_?rust_|^__rust");

    @TempDir
    Path dir;

    static boolean isOwnFrame(RecordedFrame f) {
        return "Native".equals(f.getType()) && f.getMethod() != null && f.getMethod().getType() != null
                && f.getMethod().getType().getName().isEmpty() && OWN_FUNCTION.matcher(f.getMethod().getName()).find();
    }

    @Test
    void aQuietServicesNativeAllocationsAreNotTheProfilers() throws Exception {
        String options = "cpu=10ms,wall=5ms,filter=,nativemem=0";
        ChildJvm.Result r = new ChildJvm()
                .classpath(TestEnv.libJar())
                .main(QuietServiceMain.class, dir.toString(), options, "6")
                .timeout(Duration.ofSeconds(120))
                .run(dir);
        assertFalse(r.timedOut, "child JVM hung:\n" + r.describe());
        assertEquals(0, r.exitCode, "child JVM failed:\n" + r.describe());
        assertTrue(r.stdout.contains("workload done"), r.describe());
        Map<String, Long> counters = new HashMap<>();
        for (String line : r.stdout.split("\n")) {
            if (line.startsWith("counter ")) {
                String[] kv = line.substring(8).split("=", 2);
                counters.put(kv[0], Long.parseLong(kv[1].trim()));
            }
        }
        List<Path> files;
        try (Stream<Path> s = Files.list(dir)) {
            files = s.filter(p -> p.toString().endsWith(".jfr")).sorted().collect(Collectors.toList());
        }
        assertEquals(7, files.size(), "six dumps and the last chunk: " + files);
        List<RecordedEvent> events = new ArrayList<>();
        for (Path f : files) {
            events.addAll(JfrReader.events(f, EVENT));
        }

        // The application's own allocations are recorded: every Deflater and Inflater mallocs its zlib
        // state, and every allocation is sampled.
        List<RecordedEvent> zip = JfrReader.onThread(events, "app-zip").stream()
                .filter(e -> JfrReader.contains(e, ZipWork.class, "zipCaller")).collect(Collectors.toList());
        assertTrue(zip.size() >= 20 * 4, zip.size() + " samples of the zip thread reach ZipWork.zipCaller; counters: "
                + counters + JfrReader.describe(events, 5));

        // The profiler did allocate through the hooks meanwhile (its threads' start, its dumps' JVMTI
        // calls, libc's own mallocs under its code): about as many blocks as the application's here.
        assertTrue(counters.getOrDefault("nativemem_own_skipped", 0L) > 0, "counters: " + counters);

        // None is the profiler's: not on its threads, not below its functions.
        List<RecordedEvent> ownThread = events.stream()
                .filter(e -> JfrReader.threadName(e) != null && JfrReader.threadName(e).startsWith("ddprof-"))
                .collect(Collectors.toList());
        List<RecordedEvent> ownFrames = events.stream()
                .filter(e -> JfrReader.frames(e).stream().anyMatch(ProfilerOutOfItsOwnProfileTest::isOwnFrame))
                .collect(Collectors.toList());
        assertTrue(ownThread.isEmpty(), ownThread.size() + " of " + events.size()
                + " native allocations are on the profiler's threads" + JfrReader.describe(ownThread, 5));
        assertTrue(ownFrames.isEmpty(), ownFrames.size() + " of " + events.size()
                + " native allocations have the profiler's functions on their stacks" + JfrReader.describe(ownFrames, 5));
    }
}
