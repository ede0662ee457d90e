package com.datadoghq.profiler.convert;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Map;
import java.util.zip.GZIPInputStream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.TestEnv;
import com.datadoghq.profiler.testing.CpuWorkloadMain;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.convert.pprof.ProfileProto;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code convert} on a recording async-profiler made (its own library from the Maven Central jar, in
 * a child JVM): CPU samples ({@code jdk.ExecutionSample}) and wall samples
 * ({@code profiler.WallClockSample}, each standing for its {@code samples} count) convert with their
 * totals, and the intervals come from async-profiler's settings ({@code interval}, {@code wall}).
 */
class AsyncProfilerRecordingTest {
    static Path dir;
    static Path jfr;

    @BeforeAll
    static void record() throws Exception {
        dir = Files.createTempDirectory("ddprof-ap-");
        Path jar = Paths.get(one.profiler.AsyncProfiler.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        Path lib = dir.resolve("libasyncProfiler.so");
        try (ZipFile zip = new ZipFile(jar.toFile())) {
            ZipEntry e = zip.getEntry("linux-x64/libasyncProfiler.so");
            assertTrue(e != null, "async-profiler's jar carries linux-x64/libasyncProfiler.so");
            try (InputStream in = zip.getInputStream(e)) {
                Files.copy(in, lib, StandardCopyOption.REPLACE_EXISTING);
            }
        }
        jfr = dir.resolve("ap.jfr");
        ChildJvm.Result r = new ChildJvm()
                .jvmArgs("-agentpath:" + lib + "=start,event=cpu,interval=10ms,wall=10ms,jfr,file=" + jfr)
                .main(CpuWorkloadMain.class, "1000")
                .run(dir);
        assertEquals(0, r.exitCode, r.describe());
    }

    @AfterAll
    static void cleanUp() throws IOException {
        TestEnv.deleteTree(dir);
    }

    @Test
    void cpuAndWallSamplesConvertWithTheirTotals() throws Exception {
        List<RecordedEvent> cpu = JfrReader.events(jfr, "jdk.ExecutionSample");
        List<RecordedEvent> wall = JfrReader.events(jfr, "profiler.WallClockSample");
        assertTrue(!cpu.isEmpty() && !wall.isEmpty(), "async-profiler wrote " + cpu.size() + " CPU and " + wall.size()
                + " wall samples");
        long wallWeight = wall.stream().mapToLong(e -> Math.max(1, e.getLong("samples"))).sum();

        Map<String, Long> lines = ConvertTest.readCollapsed(convert("--to", "collapsed", "--event", "wall",
                jfr.toString(), dir.resolve("wall.collapsed").toString()));
        assertEquals(wallWeight, lines.values().stream().mapToLong(Long::longValue).sum(), "wall: the samples counts");
        lines = ConvertTest.readCollapsed(convert("--to", "collapsed", "--event", "cpu", jfr.toString(),
                dir.resolve("cpu.collapsed").toString()));
        assertEquals(cpu.size(), lines.values().stream().mapToLong(Long::longValue).sum(), "cpu: one per event");

        for (String kind : new String[] {"cpu", "wall"}) {
            Path out = convert("--to", "pprof", "--event", kind, jfr.toString(), dir.resolve(kind + ".pb.gz").toString());
            ProfileProto.Profile p;
            try (InputStream in = new GZIPInputStream(Files.newInputStream(out))) {
                p = ProfileProto.Profile.parseFrom(in);
            }
            assertEquals(10_000_000L, p.getPeriod(), kind + "'s interval from async-profiler's settings");
        }
    }

    /**
     * {@code report} on async-profiler's recording: each kind's samples, and the threads they were
     * taken on (async-profiler names them in sampledThread, which the JDK's parser did not read as
     * the event's thread: the report said 0 threads).
     */
    @Test
    void reportCountsSamplesAndTheirThreads() throws Exception {
        String[] cmd = {"-jar", TestEnv.toolsJar().toString(), "report", jfr.toString()};
        ChildJvm.Result r = new ChildJvm().jvmArgs(cmd).run(dir);
        assertEquals(0, r.exitCode, r.describe());
        Map<String, long[]> kinds = ReportTest.kindLines(r.stdout);
        String[][] types = {{"cpu", "jdk.ExecutionSample"}, {"wall", "profiler.WallClockSample"}};
        for (String[] t : types) {
            List<RecordedEvent> events = JfrReader.events(jfr, t[1]);
            long threads = events.stream().map(e -> e.getThread("sampledThread").getOSThreadId()).distinct().count();
            assertEquals(events.size(), kinds.get(t[0])[1], t[0] + " samples\n" + r.stdout);
            assertTrue(r.stdout.lines().anyMatch(l -> l.startsWith(t[0] + ":") && l.endsWith("| threads " + threads)),
                    t[0] + ": " + threads + " threads\n" + r.stdout);
        }
    }

    static Path convert(String... args) throws Exception {
        String[] cmd = new String[args.length + 3];
        cmd[0] = "-jar";
        cmd[1] = TestEnv.toolsJar().toString();
        cmd[2] = "convert";
        System.arraycopy(args, 0, cmd, 3, args.length);
        ChildJvm.Result r = new ChildJvm().jvmArgs(cmd).run(dir);
        assertEquals(0, r.exitCode, r.describe());
        return Paths.get(args[args.length - 1]);
    }
}
