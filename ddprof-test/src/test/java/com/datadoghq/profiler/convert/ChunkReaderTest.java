package com.datadoghq.profiler.convert;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.export.JfrProfileReader;
import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.CpuBurner;
import com.datadoghq.profiler.testing.CpuWorkloadMain;
import com.datadoghq.profiler.testing.TestEnv;
import com.datadoghq.profiler.tools.convert.Convert;
import com.google.protobuf.ByteString;
import io.opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest;
import io.opentelemetry.proto.profiles.v1development.Profile;
import io.opentelemetry.proto.profiles.v1development.ResourceProfiles;
import io.opentelemetry.proto.profiles.v1development.ScopeProfiles;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code convert} reads recordings with our own chunk reader; {@code -Dddprof.jfr.reader=jdk} keeps
 * the JDK's parser for a release. Both must give the same bytes, for every output format and event
 * kind, on the recordings users convert: ddprof's (CPU, wall and allocation samples with a context
 * attribute), async-profiler's (its CPU and wall samples), the JDK's own (jdk.ExecutionSample), and a
 * file of several chunks (OTLP's random profile ids aside). And a file the reader cannot read is one line naming the problem.
 */
class ChunkReaderTest {
    static final String PROPERTY = "ddprof.jfr.reader";

    static Path dir;
    static Path ddprof;
    static Path asyncProfiler;
    static Path jdk;
    static Path chunks;

    @BeforeAll
    static void record() throws Exception {
        dir = Files.createTempDirectory("ddprof-chunks-");
        ddprof = dir.resolve("ddprof.jfr");
        JavaProfiler profiler = TestEnv.profiler();
        TestEnv.stopQuietly(profiler);
        profiler.execute("start,cpu=10ms,wall=10ms,filter=0,memory=262144:a,attributes=op,file=" + ddprof);
        List<byte[]> kept = new ArrayList<>();
        try {
            profiler.setTraceContext(101, 0x1001L, 1, 2, 0, "op-alpha", -1, null);
            for (int i = 0; i < 8; i++) {
                CpuBurner.burn(60);
                kept.add(new byte[64 * 1024]);
            }
            profiler.clearTraceContext();
            CpuBurner.burn(300);
        } finally {
            profiler.stop();
        }
        assertTrue(kept.size() > 0);

        Path jar = Paths.get(one.profiler.AsyncProfiler.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        Path lib = dir.resolve("libasyncProfiler.so");
        try (ZipFile zip = new ZipFile(jar.toFile())) {
            ZipEntry e = zip.getEntry("linux-x64/libasyncProfiler.so");
            try (InputStream in = zip.getInputStream(e)) {
                Files.copy(in, lib, StandardCopyOption.REPLACE_EXISTING);
            }
        }
        asyncProfiler = dir.resolve("ap.jfr");
        ChildJvm.Result r = new ChildJvm()
                .jvmArgs("-agentpath:" + lib + "=start,event=cpu,interval=10ms,wall=10ms,jfr,file=" + asyncProfiler)
                .main(CpuWorkloadMain.class, "800").timeout(Duration.ofMinutes(3)).run(dir);
        assertEquals(0, r.exitCode, r.describe());

        jdk = dir.resolve("jdk.jfr");
        r = new ChildJvm().jvmArgs("-XX:StartFlightRecording=filename=" + jdk + ",settings=profile")
                .main(CpuWorkloadMain.class, "800").timeout(Duration.ofMinutes(3)).run(dir);
        assertEquals(0, r.exitCode, r.describe());

        // A file is a sequence of chunks: two recordings end to end are one of several chunks.
        chunks = dir.resolve("chunks.jfr");
        try (OutputStream out = Files.newOutputStream(chunks)) {
            out.write(Files.readAllBytes(ddprof));
            out.write(Files.readAllBytes(asyncProfiler));
            out.write(Files.readAllBytes(ddprof));
        }
    }

    @AfterAll
    static void cleanUp() throws IOException {
        System.clearProperty(PROPERTY);
        TestEnv.deleteTree(dir);
    }

    /** Converts with one reader; the output's bytes, or null with the exit code when there is none. */
    static byte[] convert(String reader, List<String> args, String out) throws IOException {
        Path target = dir.resolve(out);
        Files.deleteIfExists(target);
        List<String> all = new ArrayList<>(args);
        all.add(target.toString());
        int exit;
        if (reader == null) {
            System.clearProperty(PROPERTY);
        } else {
            System.setProperty(PROPERTY, reader);
        }
        try {
            exit = Convert.run(all.toArray(new String[0]));
        } finally {
            System.clearProperty(PROPERTY);
        }
        if (exit != 0) {
            assertTrue(!Files.exists(target), "exit " + exit + " but " + target + " written");
            return new byte[] {(byte) exit};
        }
        return Files.readAllBytes(target);
    }

    /** An OTLP request with its profiles' ids (16 random bytes each, new every run) zeroed. */
    static byte[] withoutProfileIds(byte[] otlp) throws IOException {
        ExportProfilesServiceRequest.Builder request = ExportProfilesServiceRequest.parseFrom(otlp).toBuilder();
        for (ResourceProfiles.Builder resource : request.getResourceProfilesBuilderList()) {
            for (ScopeProfiles.Builder scope : resource.getScopeProfilesBuilderList()) {
                for (Profile.Builder profile : scope.getProfilesBuilderList()) {
                    assertEquals(16, profile.getProfileId().size());
                    profile.setProfileId(ByteString.copyFrom(new byte[16]));
                }
            }
        }
        return request.build().toByteArray();
    }

    @Test
    void everyFormatAndKindIsByteIdenticalToTheJdkParsers() throws Exception {
        String[][] formats = {
            {"collapsed"}, {"collapsed", "--threads"}, {"pprof"}, {"otlp"}, {"html"}, {"html", "--threads"},
        };
        String[] kinds = {null, "cpu", "wall", "alloc"};
        int compared = 0;
        for (Path recording : new Path[] {ddprof, asyncProfiler, jdk}) {
            for (String[] format : formats) {
                for (String kind : kinds) {
                    List<String> args = new ArrayList<>(Arrays.asList("--to", format[0]));
                    args.addAll(Arrays.asList(format).subList(1, format.length));
                    if (kind != null) {
                        args.add("--event");
                        args.add(kind);
                    }
                    args.add(recording.toString());
                    byte[] ours = convert(null, args, "out.own");
                    byte[] theirs = convert("jdk", args, "out.jdk");
                    if (format[0].equals("otlp") && ours.length > 1 && theirs.length > 1) {
                        ours = withoutProfileIds(ours);
                        theirs = withoutProfileIds(theirs);
                    }
                    String what = recording.getFileName() + " " + String.join(" ", args);
                    assertArrayEquals(theirs, ours, what);
                    compared += ours.length > 1 ? 1 : 0;
                }
            }
            // Time ranges (tick to nanosecond conversion), thread states, filters, raw names.
            for (String[] extra : new String[][] {
                {"--from", "100ms", "--to", "-100ms"}, {"--state", "runnable"}, {"--raw-names"},
                {"--exclude", "burn"},
            }) {
                List<String> args = new ArrayList<>(Arrays.asList("--to", "collapsed"));
                args.addAll(Arrays.asList(extra));
                args.add(recording.toString());
                assertArrayEquals(convert("jdk", args, "out.jdk"), convert(null, args, "out.own"),
                        recording.getFileName() + " " + String.join(" ", args));
            }
        }
        // Every recording gave something to compare in most formats (not only "nothing to convert").
        assertTrue(compared >= 3 * formats.length, "compared " + compared + " outputs");
    }

    /**
     * A file of chunks from unrelated recordings (ddprof's, async-profiler's, ddprof's again): the
     * same profile as the three files read as one (each chunk's constant pools its own, though keys
     * repeat across the recordings). The JDK's parser is no reference here: it takes an entry over
     * from the previous chunk by its key alone.
     */
    @Test
    void chunksOfUnrelatedRecordingsStayApart() throws Exception {
        Path jdkAndAp = dir.resolve("jdk-ap.jfr");
        try (OutputStream out = Files.newOutputStream(jdkAndAp)) {
            out.write(Files.readAllBytes(jdk));
            out.write(Files.readAllBytes(asyncProfiler));
            out.write(Files.readAllBytes(jdk));
        }
        // ddprof's CPU samples are datadog.ExecutionSample: a file that declares them reads no
        // jdk.ExecutionSample (ddprof's jdksamples copies), so CPU samples are compared on the JDK's and
        // async-profiler's chunks.
        String[][] cases = {
            {"cpu", jdkAndAp.toString(), jdk.toString(), asyncProfiler.toString(), jdk.toString()},
            {"wall", chunks.toString(), ddprof.toString(), asyncProfiler.toString(), ddprof.toString()},
        };
        for (String[] c : cases) {
            String kind = c[0];
            List<String> one = Arrays.asList("--to", "collapsed", "--threads", "--event", kind, c[1]);
            List<String> three = Arrays.asList("--to", "collapsed", "--threads", "--event", kind, c[2], c[3], c[4]);
            byte[] whole = convert(null, one, "chunks.own");
            assertTrue(whole.length > 1, kind + ": nothing converted");
            assertArrayEquals(convert(null, three, "three.own"), whole, kind);
            assertArrayEquals(convert("jdk", three, "three.jdk"), whole, kind);
        }
    }

    /**
     * Damaged recordings (bytes flipped inside the chunks, past their headers, so the CLI's header
     * check passes): the reader reads them or fails with an IOException, never with another exception
     * or error (a count read as a huge allocation, a type that nests forever, an index out of bounds).
     */
    @Test
    void damagedRecordingsAreReadOrRefusedNeverCrash() throws Exception {
        java.util.Random random = new java.util.Random(21);
        for (Path recording : new Path[] {ddprof, asyncProfiler, jdk}) {
            byte[] whole = Files.readAllBytes(recording);
            for (int round = 0; round < 40; round++) {
                byte[] damaged = whole.clone();
                for (int flips = 0; flips < 1 + round % 4; flips++) {
                    int at = 68 + random.nextInt(damaged.length - 68);
                    damaged[at] = (byte) random.nextInt(256);
                }
                Path file = Files.write(dir.resolve("damaged.jfr"), damaged);
                try {
                    JfrProfileReader.readAll(file);
                } catch (IOException refused) {
                    // JfrProfileReader names the file around what the reader threw: an IOException.
                    Throwable cause = refused.getCause() == null ? refused : refused.getCause();
                    assertTrue(cause instanceof IOException, "round " + round + ": " + cause);
                    assertEquals(1, refused.getMessage().lines().count(), refused.getMessage());
                }
            }
        }
    }

    /** The reader on its own (the CLI checks a file before reading it): one line naming the problem. */
    @Test
    void emptyAndTruncatedFilesAreOneLineErrors() throws Exception {
        Path empty = Files.createFile(dir.resolve("empty.jfr"));
        byte[] whole = Files.readAllBytes(chunks);
        Path cut = Files.write(dir.resolve("cut.jfr"), Arrays.copyOf(whole, whole.length - 100));
        Path head = Files.write(dir.resolve("head.jfr"), Arrays.copyOf(whole, 30));
        Object[][] cases = {
            {empty, "empty.jfr is empty (0 bytes), not a JFR recording"},
            {cut, "cut.jfr is truncated: chunk "},
            {head, "head.jfr is truncated: chunk 1's header is cut off after 30 bytes"},
        };
        for (Object[] c : cases) {
            IOException e = assertThrows(IOException.class, () -> JfrProfileReader.readAll((Path) c[0]));
            String message = e.getMessage();
            assertTrue(message.contains((String) c[1]), message);
            assertEquals(1, message.lines().count(), message);
        }
    }
}
