package com.datadoghq.profiler.jitdump;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import com.datadoghq.profiler.testing.Perf;
import com.datadoghq.profiler.perfmap.RestartsMain;
import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.CodeRecords;
import com.datadoghq.profiler.testing.TestEnv;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code jitdump} writes {@code jit-<pid>.dump} in Linux perf's jitdump format while the profiler runs:
 * a code-load record for every compiled method and stub, and before each compiled method's load a
 * debug-info record whose lines include those of the methods inlined into it. {@code perf inject --jit}
 * turns a {@code perf record -k 1} of the JVM into a profile that names the busy Java method and, by its
 * line table, the method inlined into it. A process makes one default directory and one dump per
 * directory however many starts; later starts append to it without repeating the code it names.
 */
class JitDumpTest {
    private static final int MAGIC = 0x4A695444;
    private static final String HOT = JitDumpMain.class.getName() + "::hot(J)J";
    private static final String CALLEE_FILE = "JitDumpCallee.java";

    @TempDir
    Path dir;

    /** The bare option writes under $JITDUMPDIR/.debug/jit, as perf's own agent; the file is well formed. */
    @Test
    void dumpHoldsCodeLoadsAndInlinedLines() throws Exception {
        Path base = dir.resolve("base");
        Files.createDirectories(base);
        Run run = run("default", "jitdump", base, null);
        Path parent = base.resolve(".debug").resolve("jit");
        List<Path> dumps;
        try (Stream<Path> s = Files.walk(parent)) {
            dumps = s.filter(p -> p.getFileName().toString().equals("jit-" + run.pid + ".dump"))
                    .collect(Collectors.toList());
        }
        assertEquals(1, dumps.size(), "dumps under " + parent + ": " + dumps + "\n" + run.child.describe());
        assertTrue(dumps.get(0).getParent().getFileName().toString().startsWith("java-jit-"), dumps.toString());

        ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(dumps.get(0))).order(ByteOrder.nativeOrder());
        assertEquals(MAGIC, b.getInt(0), "magic");
        assertEquals(1, b.getInt(4), "version");
        int headerSize = b.getInt(8);
        assertEquals(40, headerSize, "header size");
        assertEquals(run.pid, b.getInt(20), "pid");

        List<String> loads = new ArrayList<>();
        boolean hotLoaded = false;
        boolean hotHasCalleeLines = false;
        boolean stubLoaded = false;
        long lastTime = 0;
        List<String> pendingFiles = null;
        int at = headerSize;
        while (at < b.limit()) {
            assertTrue(at + 16 <= b.limit(), "truncated record header at " + at);
            int id = b.getInt(at);
            int size = b.getInt(at + 4);
            long time = b.getLong(at + 8);
            assertTrue(size >= 16 && at + size <= b.limit(), "record " + id + " of size " + size + " at " + at);
            assertTrue(Long.compareUnsigned(time, lastTime) >= 0, "timestamps go back at " + at);
            lastTime = time;
            if (id == 2) { // JIT_CODE_DEBUG_INFO
                long entries = b.getLong(at + 24);
                pendingFiles = new ArrayList<>();
                int e = at + 32;
                for (long i = 0; i < entries; i++) {
                    int line = b.getInt(e + 8);
                    assertTrue(line > 0, "line " + line);
                    int nul = e + 16;
                    while (b.get(nul) != 0) {
                        nul++;
                    }
                    pendingFiles.add(text(b, e + 16, nul));
                    e = nul + 1;
                }
                assertEquals(at + size, e, "debug entries fill their record");
            } else if (id == 0) { // JIT_CODE_LOAD
                long codeSize = b.getLong(at + 40);
                int nul = at + 56;
                while (b.get(nul) != 0) {
                    nul++;
                }
                String name = text(b, at + 56, nul);
                assertEquals(at + size, nul + 1 + codeSize, "code bytes of " + name);
                assertTrue(codeSize > 0, "empty code: " + name);
                loads.add(name);
                if (name.equals(HOT)) {
                    hotLoaded = true;
                    hotHasCalleeLines |= pendingFiles != null
                            && pendingFiles.stream().anyMatch(f -> f.endsWith("/jitdump/" + CALLEE_FILE));
                }
                stubLoaded |= name.equals("Interpreter");
                pendingFiles = null;
            } else {
                pendingFiles = null;
            }
            at += size;
        }
        assertEquals(b.limit(), at, "records end with the file");
        assertTrue(hotLoaded, "no code load of " + HOT + " among " + loads.size() + " loads, e.g. "
                + loads.subList(0, Math.min(10, loads.size())));
        assertTrue(hotHasCalleeLines, "the debug info of " + HOT + " has no line of the inlined " + CALLEE_FILE);
        assertTrue(stubLoaded, "no code load of the interpreter (stubs made before the start)");
    }

    /** perf record -k 1, perf inject --jit, perf script: the hot method by name, the inlined one by its lines. */
    @Test
    void perfInjectNamesTheHotAndTheInlinedMethod() throws Exception {
        assumeTrue(Perf.works(dir, "-k", "1"), "perf cannot record user-space samples here");
        Path data = dir.resolve("perf.data");
        Path injected = dir.resolve("perf.jit.data");
        Path jit = dir.resolve("jit");
        Run run = run("perf", "jitdump=" + jit, null, new String[] {"perf", "record", "-k", "1", "-q", "-e",
                "cpu-clock:u", "-o", data.toString(), "--"});
        assertTrue(Files.isRegularFile(jit.resolve("jit-" + run.pid + ".dump")), "no dump:\n" + run.child.describe());
        Perf.exec(dir, 300, "perf", "inject", "--jit", "-i", data.toString(), "-o", injected.toString());
        String script = Perf.exec(dir, 300, "perf", "script", "-i", injected.toString(), "-F", "comm,tid,ip,sym,srcline");
        // perf script prints a sample's source line on the line after it.
        List<String> lines = script.lines().collect(Collectors.toList());
        int worker = 0;
        int hot = 0;
        int hotInCallee = 0;
        for (int i = 0; i < lines.size(); i++) {
            String l = lines.get(i);
            if (!l.contains("jitdump-worker")) {
                continue;
            }
            worker++;
            if (l.contains(HOT)) {
                hot++;
                if (i + 1 < lines.size() && lines.get(i + 1).contains(CALLEE_FILE + ":")) {
                    hotInCallee++;
                }
            }
        }
        String sample = String.join("\n", lines.subList(0, Math.min(40, lines.size())));
        // The worker spends its CPU in hot(), mostly in the inlined mix(); perf samples at 4 kHz.
        assertTrue(worker >= 200, "perf samples of the worker: " + worker + "\n" + sample + "\n" + run.child.describe());
        assertTrue(hot * 2 >= worker, "worker samples named " + HOT + ": " + hot + " of " + worker + "\n" + sample);
        assertTrue(hotInCallee * 4 >= hot, "samples of " + HOT + " on a line of the inlined " + CALLEE_FILE + ": "
                + hotInCallee + " of " + hot + "\n" + sample);
    }

    /** Starts alternating the bare option and a given directory, as a fuzzer or an operator might. */
    @Test
    void severalStartsMakeOneDirectoryAndRepeatNoCode() throws Exception {
        Path base = dir.resolve("base");
        Path given = dir.resolve("given");
        Files.createDirectories(base);
        ChildJvm.Result r = new ChildJvm()
                .classpath(TestEnv.libJar())
                .env("JITDUMPDIR", base.toString())
                .main(RestartsMain.class, dir.toString(), "6", "jitdump|jitdump=" + given)
                .timeout(Duration.ofSeconds(120))
                .run(dir);
        assertFalse(r.timedOut, "child JVM hung:\n" + r.describe());
        assertEquals(0, r.exitCode, "child JVM failed:\n" + r.describe());
        assertTrue(r.stdout.contains("workload done: restarts"), r.describe());
        assertFalse(r.stderr.contains("no jitdump is written"), r.describe());
        Matcher m = Pattern.compile("pid: (\\d+)").matcher(r.stdout);
        assertTrue(m.find(), "no pid:\n" + r.describe());
        int pid = Integer.parseInt(m.group(1));
        Files.deleteIfExists(java.nio.file.Paths.get("/tmp/perf-" + pid + ".map"));

        Path parent = base.resolve(".debug").resolve("jit");
        List<Path> made;
        try (Stream<Path> s = Files.list(parent)) {
            made = s.collect(Collectors.toList());
        }
        assertEquals(1, made.size(), "directories under " + parent + ": " + made);
        for (Path dump : new Path[] {made.get(0).resolve("jit-" + pid + ".dump"), given.resolve("jit-" + pid + ".dump")}) {
            assertTrue(Files.isRegularFile(dump), "no " + dump);
            ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(dump)).order(ByteOrder.nativeOrder());
            assertEquals(MAGIC, b.getInt(0), "magic");
            assertEquals(pid, b.getInt(20), "pid");
            CodeRecords records = new CodeRecords();
            List<Long> indexes = new ArrayList<>();
            int interpreter = 0;
            int at = b.getInt(8);
            while (at < b.limit()) {
                int id = b.getInt(at);
                int size = b.getInt(at + 4);
                assertTrue(size >= 16 && at + size <= b.limit(), "record " + id + " of size " + size + " at " + at);
                if (id == 0) { // JIT_CODE_LOAD
                    int nul = at + 56;
                    while (b.get(nul) != 0) {
                        nul++;
                    }
                    String name = text(b, at + 56, nul);
                    records.add(b.getLong(at + 32), b.getLong(at + 40), name);
                    indexes.add(b.getLong(at + 48));
                    interpreter += name.equals("Interpreter") ? 1 : 0;
                } else {
                    assertEquals(2, id, "a record other than a code load or its debug info at " + at);
                }
                at += size;
            }
            assertEquals(b.limit(), at, "records end with the file " + dump);
            assertTrue(records.count() > 100, records.count() + " code loads in " + dump);
            assertTrue(records.repeats().isEmpty(), records.repeats().size() + " of " + records.count()
                    + " code loads in " + dump + " repeat what it named already, e.g. "
                    + records.repeats().subList(0, Math.min(5, records.repeats().size())));
            assertEquals(1, interpreter, "interpreter loads in " + dump);
            assertEquals(indexes.size(), indexes.stream().distinct().count(), "code indexes repeat in " + dump);
        }
    }

    /** A directory that cannot be made is a warning naming the option; the session and the recording go on. */
    @Test
    void anUnusableDirectoryIsAWarning() throws Exception {
        Path notADir = dir.resolve("plain-file");
        Files.write(notADir, new byte[0]);
        Path jfr = dir.resolve("bad.jfr");
        ChildJvm.Result r = new ChildJvm()
                .jvmArgs("-agentpath:" + TestEnv.nativeLib() + "=start,cpu=10ms,jitdump=" + notADir.resolve("sub")
                        + ",file=" + jfr)
                .main(JitDumpMain.class, "300")
                .timeout(Duration.ofSeconds(120))
                .run(dir);
        assertEquals(0, r.exitCode, r.describe());
        assertTrue(r.stdout.contains("workload done: jitdump"), r.describe());
        assertTrue(r.stderr.contains("jitdump: cannot create") && r.stderr.contains("no jitdump is written"),
                "no warning for the unusable directory:\n" + r.describe());
        assertTrue(Files.size(jfr) > 0, "no recording:\n" + r.describe());
    }

    private static final class Run {
        ChildJvm.Result child;
        int pid;
    }

    private Run run(String name, String option, Path jitDumpDirEnv, String[] launcher) throws Exception {
        Path jfr = dir.resolve(name + ".jfr");
        ChildJvm child = new ChildJvm()
                .jvmArgs("-XX:CompileCommand=quiet", "-XX:CompileCommand=dontinline," + JitDumpMain.class.getName()
                        + "::hot", "-agentpath:" + TestEnv.nativeLib() + "=start,cpu=10ms," + option + ",file=" + jfr)
                .main(JitDumpMain.class, "2000")
                .timeout(Duration.ofSeconds(120));
        if (jitDumpDirEnv != null) {
            child.env("JITDUMPDIR", jitDumpDirEnv.toString());
        }
        if (launcher != null) {
            child.launcher(launcher);
        }
        Run run = new Run();
        run.child = child.run(dir);
        assertFalse(run.child.timedOut, "child JVM hung:\n" + run.child.describe());
        assertEquals(0, run.child.exitCode, "child JVM failed:\n" + run.child.describe());
        assertTrue(run.child.stdout.contains("workload done: jitdump"), run.child.describe());
        assertFalse(run.child.stderr.contains("no jitdump is written"), run.child.describe());
        Matcher m = Pattern.compile("pid: (\\d+)").matcher(run.child.stdout);
        assertTrue(m.find(), "no pid:\n" + run.child.describe());
        run.pid = Integer.parseInt(m.group(1));
        return run;
    }

    private static String text(ByteBuffer b, int from, int to) {
        byte[] bytes = new byte[to - from];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = b.get(from + i);
        }
        return new String(bytes, StandardCharsets.UTF_8);
    }
}
