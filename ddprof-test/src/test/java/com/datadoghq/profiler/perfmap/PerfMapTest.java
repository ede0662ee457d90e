package com.datadoghq.profiler.perfmap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import com.datadoghq.profiler.testing.Perf;
import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.CodeRecords;
import com.datadoghq.profiler.testing.CpuBurner;
import com.datadoghq.profiler.testing.TestEnv;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code perfmap} writes {@code /tmp/perf-<pid>.map} while the profiler runs: a {@code START SIZE name}
 * line (hex, as Linux perf reads it) for every compiled method and VM stub, those made before the start
 * included; Linux perf then names the JIT's code of a busy Java method. One map per process: the first
 * start empties a map a dead process with the same pid left, and later starts add no line the map has
 * already (each start replays all the code that exists).
 */
class PerfMapTest {
    private static final Pattern LINE = Pattern.compile("[0-9a-f]+ [0-9a-f]+ \\S.*");
    private static final String CHAIN_C = CpuBurner.class.getName() + "::chainC(";

    @TempDir
    Path dir;

    @Test
    void mapListsCompiledMethodsAndStubs() throws Exception {
        Run run = run("perfmap", true, null);
        try {
            assertTrue(Files.isRegularFile(run.map), "no perf map at " + run.map + ":\n" + run.child.describe());
            List<String> lines = Files.readAllLines(run.map, StandardCharsets.UTF_8);
            List<String> bad = lines.stream().filter(l -> !LINE.matcher(l).matches()).limit(5)
                    .collect(Collectors.toList());
            assertTrue(bad.isEmpty(), "lines perf cannot read: " + bad);
            // The busy method, compiled while the profiler ran, and stubs that existed before it started.
            assertTrue(lines.stream().anyMatch(l -> l.contains(CHAIN_C)), "no line for " + CHAIN_C + " in "
                    + lines.size() + " lines, e.g. " + lines.subList(0, Math.min(10, lines.size())));
            assertTrue(lines.stream().anyMatch(l -> l.endsWith(" Interpreter")), "no line for the interpreter");
            for (String l : lines) {
                String[] f = l.split(" ", 3);
                assertTrue(Long.parseUnsignedLong(f[1], 16) > 0, "empty range: " + l);
            }
        } finally {
            Files.deleteIfExists(run.map);
        }
    }

    @Test
    void noMapWithoutTheOption() throws Exception {
        Run run = run("noperfmap", false, null);
        boolean written = Files.exists(run.map);
        Files.deleteIfExists(run.map);
        assertFalse(written, "a perf map without perfmap: " + run.map);
    }

    @Test
    void severalStartsWriteEachLineOnceAndNoStaleOne() throws Exception {
        ChildJvm.Result r = new ChildJvm()
                .classpath(TestEnv.libJar())
                .main(RestartsMain.class, dir.toString(), "6", "perfmap")
                .timeout(Duration.ofSeconds(120))
                .run(dir);
        Path map = mapOf(r);
        try {
            assertEquals(0, r.exitCode, "child JVM failed:\n" + r.describe());
            assertTrue(r.stdout.contains("workload done: restarts"), r.describe());
            List<String> lines = Files.readAllLines(map, StandardCharsets.UTF_8);
            assertFalse(lines.contains(RestartsMain.STALE), "the line a dead process left is still there");
            CodeRecords records = new CodeRecords();
            for (String l : lines) {
                assertTrue(LINE.matcher(l).matches(), "a line perf cannot read: " + l);
                String[] f = l.split(" ", 3);
                records.add(Long.parseUnsignedLong(f[0], 16), Long.parseUnsignedLong(f[1], 16), f[2]);
            }
            assertTrue(records.repeats().isEmpty(), records.repeats().size() + " of " + lines.size()
                    + " lines repeat what the map said already, e.g. "
                    + records.repeats().subList(0, Math.min(5, records.repeats().size())));
            assertEquals(1, lines.stream().filter(l -> l.endsWith(" Interpreter")).count(), "interpreter lines");
            assertTrue(lines.stream().anyMatch(l -> l.contains(CHAIN_C)), "no line for " + CHAIN_C);
        } finally {
            Files.deleteIfExists(map);
        }
    }

    private static Path mapOf(ChildJvm.Result r) {
        assertFalse(r.timedOut, "child JVM hung:\n" + r.describe());
        Matcher m = Pattern.compile("pid: (\\d+)").matcher(r.stdout);
        assertTrue(m.find(), "no pid:\n" + r.describe());
        return Paths.get("/tmp/perf-" + m.group(1) + ".map");
    }

    /** {@code perf record} of the JVM names the busy Java method from the map (Debian's linux-perf). */
    @Test
    void perfNamesTheBusyJavaMethod() throws Exception {
        assumeTrue(Perf.works(dir), "perf cannot record user-space samples here");
        Path data = dir.resolve("perf.data");
        Run run = run("perf", true, new String[] {"perf", "record", "-q", "-e", "cpu-clock:u", "-o", data.toString(),
                "--"});
        try {
            assertTrue(Files.isRegularFile(data), "no perf data:\n" + run.child.describe());
            String script = Perf.exec(dir, 120, "perf", "script", "-i", data.toString(), "-F", "comm,tid,ip,sym");
            List<String> worker = script.lines().filter(l -> l.contains("perfmap-worker")).collect(Collectors.toList());
            long named = worker.stream().filter(l -> l.contains(CpuBurner.class.getName() + "::chain")).count();
            // The worker spends its CPU in the chain; perf samples at 4 kHz. Most of its samples must be named.
            assertTrue(worker.size() >= 200, "perf samples of the worker: " + worker.size() + "\n"
                    + head(script) + run.child.describe());
            assertTrue(named * 2 >= worker.size(), "worker samples named after the chain: " + named + " of "
                    + worker.size() + "; e.g.\n" + String.join("\n", worker.subList(0, Math.min(20, worker.size()))));
        } finally {
            Files.deleteIfExists(run.map);
        }
    }

    private static final class Run {
        ChildJvm.Result child;
        Path map;
    }

    private Run run(String name, boolean perfmap, String[] launcher) throws Exception {
        Path jfr = dir.resolve(name + ".jfr");
        ChildJvm child = new ChildJvm()
                .jvmArgs("-agentpath:" + TestEnv.nativeLib() + "=start,cpu=1ms" + (perfmap ? ",perfmap" : "")
                        + ",file=" + jfr)
                .main(PerfMapMain.class, "2000")
                .timeout(Duration.ofSeconds(90));
        if (launcher != null) {
            child.launcher(launcher);
        }
        Run run = new Run();
        run.child = child.run(dir);
        assertFalse(run.child.timedOut, "child JVM hung:\n" + run.child.describe());
        assertEquals(0, run.child.exitCode, "child JVM failed:\n" + run.child.describe());
        assertTrue(run.child.stdout.contains("workload done: perfmap"), run.child.describe());
        Matcher m = Pattern.compile("pid: (\\d+)").matcher(run.child.stdout);
        assertTrue(m.find(), "no pid:\n" + run.child.describe());
        run.map = Paths.get("/tmp/perf-" + m.group(1) + ".map");
        return run;
    }

    private static String head(String s) {
        List<String> l = new ArrayList<>(s.lines().limit(20).collect(Collectors.toList()));
        return String.join("\n", l) + "\n";
    }
}
