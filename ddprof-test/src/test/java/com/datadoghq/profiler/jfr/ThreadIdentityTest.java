package com.datadoghq.profiler.jfr;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedThread;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The thread of a sample is the Java thread it ran on, with its Java id and the name it has as of
 * the chunk's dump, as upstream writes them: also for a thread that existed before the library
 * loaded (no ThreadStart event named it), and for a thread renamed after it started (the chunk
 * written before the rename carries the old name, the one written after it the new one). CPU and
 * wall samples both, the wall ones through the thread filter and {@code addThread()}.
 */
class ThreadIdentityTest {
    static final String WALL_SAMPLE = "datadog.MethodSample";

    @TempDir
    Path dir;

    @Test
    void threadsOlderThanTheLibraryAndRenamedThreadsCarryTheirJavaIdAndCurrentName() throws Exception {
        Path dump = dir.resolve("dump.jfr");
        Path file = dir.resolve("main.jfr");
        ChildJvm.Result r = new ChildJvm()
                .classpath(TestEnv.libJar())
                .main(ThreadIdentityMain.class, dump.toString(), file.toString())
                .timeout(Duration.ofSeconds(120))
                .run(dir);
        assertFalse(r.timedOut, r.describe());
        assertEquals(0, r.exitCode, r.describe());
        assertTrue(r.stdout.contains("done"), r.describe());
        Matcher m = Pattern.compile("early=(\\d+) renamed=(\\d+)").matcher(r.stdout);
        assertTrue(m.find(), r.describe());
        long early = Long.parseLong(m.group(1));
        long renamed = Long.parseLong(m.group(2));

        List<RecordedEvent> before = JfrReader.readAll(dump);
        List<RecordedEvent> after = JfrReader.readAll(file);
        for (String type : new String[] {JfrReader.EXECUTION_SAMPLE, WALL_SAMPLE}) {
            List<RecordedEvent> first = JfrReader.ofType(before, type);
            List<RecordedEvent> second = JfrReader.ofType(after, type);
            assertNamed(type + " before the rename", first, early, "early-worker");
            assertNamed(type + " after the rename", second, early, "early-worker");
            assertNamed(type + " before the rename", first, renamed, "phase-one");
            assertNamed(type + " after the rename", second, renamed, "phase-two");
        }
    }

    /**
     * {@code samples} hold some of thread {@code javaId}, every one named {@code name}, and no sample
     * on a thread of that name has another Java id (before the fix, the thread older than the library
     * was written with its kernel name and Java id 0).
     */
    private static void assertNamed(String what, List<RecordedEvent> samples, long javaId, String name) {
        List<RecordedEvent> byId = samples.stream()
                .filter(e -> e.getThread() != null && e.getThread().getJavaThreadId() == javaId)
                .collect(Collectors.toList());
        List<RecordedEvent> byName = samples.stream()
                .filter(e -> e.getThread() != null && (name.equals(e.getThread().getJavaName())
                        || name.equals(e.getThread().getOSName())))
                .collect(Collectors.toList());
        assertFalse(byId.isEmpty(), what + ": no sample of Java thread " + javaId + " (" + name + "); threads "
                + threads(samples));
        for (RecordedEvent e : byId) {
            assertEquals(name, e.getThread().getJavaName(), what + ": " + threads(List.of(e)));
        }
        for (RecordedEvent e : byName) {
            assertEquals(javaId, e.getThread().getJavaThreadId(), what + ": " + threads(List.of(e)));
        }
    }

    /** "javaName/osName#javaId" of the samples' threads, with counts, for messages. */
    private static Map<String, Integer> threads(List<RecordedEvent> samples) {
        Map<String, Integer> seen = new TreeMap<>();
        for (RecordedEvent e : samples) {
            RecordedThread t = e.getThread();
            String key = t == null ? "none" : t.getJavaName() + "/" + t.getOSName() + "#" + t.getJavaThreadId();
            seen.merge(key, 1, Integer::sum);
        }
        return seen;
    }
}
