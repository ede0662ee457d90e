package com.datadoghq.profiler.export;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.concurrent.TimeUnit;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.TestEnv;
import io.opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The exporter against a real OpenTelemetry Collector (optional: built by
 * scripts/build-otelcol.sh, which CI does not run; skipped, saying so, without it). The
 * collector's OTLP receiver takes what the agent sends and its OTLP/HTTP exporter forwards it to
 * the fake collector here: every CPU sample of the recording must come through, and the
 * resource's service.name with it.
 */
class OtelCollectorTest {
    @TempDir
    Path dir;

    static Path collectorBinary() {
        String given = System.getProperty("ddprof.test.otelcol");
        if (given != null && !given.isEmpty()) {
            return Paths.get(given);
        }
        // ddprof-lib/target/ddprof-VERSION.jar -> the repository's target/otelcol/
        return TestEnv.libJar().toAbsolutePath().getParent().getParent().getParent()
                .resolve("target/otelcol/otelcol-ddprof");
    }

    @Test
    void aRealCollectorTakesAndForwardsEveryInterval() throws Exception {
        Path bin = collectorBinary();
        assumeTrue(Files.isExecutable(bin), "no collector at " + bin + ": run scripts/build-otelcol.sh to build one");
        try (OtlpCollector sink = new OtlpCollector(i -> 200)) {
            int port = freePort();
            Path config = dir.resolve("otelcol.yaml");
            Files.write(config, String.join("\n",
                    "receivers:",
                    "  otlp:",
                    "    protocols:",
                    "      http:",
                    "        endpoint: 127.0.0.1:" + port,
                    "exporters:",
                    "  otlphttp:",
                    "    endpoint: " + sink.url().replace("/v1development/profiles", ""),
                    "service:",
                    "  telemetry:",
                    "    metrics:",
                    "      level: none",
                    "  pipelines:",
                    "    profiles:",
                    "      receivers: [otlp]",
                    "      exporters: [otlphttp]",
                    "").getBytes(StandardCharsets.UTF_8));
            Path log = dir.resolve("otelcol.log");
            Process collector = new ProcessBuilder(bin.toString(), "--config=" + config,
                    "--feature-gates=service.profilesSupport")
                    .redirectErrorStream(true).redirectOutput(log.toFile()).start();
            try {
                waitForPort(port, collector, log);
                Path file = dir.resolve("real.jfr");
                String url = "http://127.0.0.1:" + port + "/v1development/profiles";
                ChildJvm.Result r = new ChildJvm()
                        .jvmArgs("-javaagent:" + TestEnv.libJar() + "=start,cpu,otlpinterval=1s,otlpservice=via-otelcol,otlp="
                                + url + ",file=" + file)
                        .main(OtlpExportMain.class, "otlp_exports", "2", "stop")
                        .timeout(java.time.Duration.ofSeconds(120))
                        .run(dir);
                OtlpExportTest.assertRan(r);
                long recorded = OtlpExportTest.cpuSamplesByChunk(file).values().stream().mapToLong(Long::longValue).sum();
                assertTrue(recorded > 0, r.describe());
                // The collector forwards on its own schedule: wait for every sample (bounded).
                long forwarded = 0;
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (System.nanoTime() < deadline) {
                    forwarded = 0;
                    for (OtlpCollector.Request q : sink.requests()) {
                        ExportProfilesServiceRequest req = q.decode();
                        assertEquals("via-otelcol", OtlpExportTest.resource(req).get("service.name"));
                        forwarded += OtlpExportTest.cpuSamples(req);
                    }
                    if (forwarded >= recorded) {
                        break;
                    }
                    Thread.sleep(200);
                }
                assertEquals(recorded, forwarded, "CPU samples: recording vs forwarded by the collector\n"
                        + r.describe() + "\n--- collector ---\n" + tail(log));
            } finally {
                collector.destroy();
                collector.waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            return s.getLocalPort();
        }
    }

    private static void waitForPort(int port, Process p, Path log) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline) {
            if (!p.isAlive()) {
                throw new AssertionError("the collector exited:\n" + tail(log));
            }
            try (Socket s = new Socket("127.0.0.1", port)) {
                return;
            } catch (IOException e) {
                Thread.sleep(100);
            }
        }
        throw new AssertionError("the collector never listened on " + port + ":\n" + tail(log));
    }

    private static String tail(Path log) throws IOException {
        List<String> lines = Files.readAllLines(log);
        return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
    }
}
