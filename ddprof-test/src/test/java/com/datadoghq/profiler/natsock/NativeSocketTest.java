package com.datadoghq.profiler.natsock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.JmcEvents;
import com.datadoghq.profiler.testing.ProfilerExtension;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code natsock[=INTERVAL]}: TCP socket calls hooked through import slots, sampled by call time
 * and recorded as {@code datadog.NativeSocketEvent}. What a user relies on: the calls of a
 * loopback echo show with the right peer, byte counts and Java caller, and their weights stand
 * for the time really spent in the calls; UDP and file I/O never show; the rate limit holds however densely
 * the option asks; the thread's span ids come along; stop puts the hooks back; the JDK's parser
 * and JMC's read the same events. Workloads are counted in round trips, never in time.
 */
@ExtendWith(ProfilerExtension.class)
class NativeSocketTest {
    static final String EVENT = "datadog.NativeSocketEvent";
    static final Set<String> OUTBOUND = new HashSet<>(Arrays.asList("SEND", "WRITE"));
    static final Set<String> INBOUND = new HashSet<>(Arrays.asList("RECV", "READ"));

    @TempDir
    Path dir;

    private final JavaProfiler profiler;

    NativeSocketTest(JavaProfiler profiler) {
        this.profiler = profiler;
    }

    private static EchoWork.Run echo(String thread, int port, int rounds, int size, long spanId) throws Exception {
        EchoWork.Run[] run = new EchoWork.Run[1];
        Thread t = new Thread(() -> {
            if (spanId != 0) {
                TestEnv.profiler().setContext(spanId, spanId + 1);
            }
            run[0] = EchoWork.clientCaller(port, rounds, size);
            if (spanId != 0) {
                TestEnv.profiler().setContext(0, 0);
            }
        }, thread);
        t.start();
        t.join();
        if (run[0] == null) {
            throw new AssertionError("the client on " + thread + " failed");
        }
        return run[0];
    }

    private static List<RecordedEvent> events(Path file) throws IOException {
        return JfrReader.events(file, EVENT);
    }

    private static List<RecordedEvent> onThread(List<RecordedEvent> events, String thread) {
        return JfrReader.onThread(events, thread);
    }

    /** C frames (type Native, no class) from the leaf on, one of them a JNI function, then Java. */
    private static boolean startsAtJniCode(RecordedEvent e) {
        boolean jni = false;
        for (RecordedFrame f : JfrReader.frames(e)) {
            boolean c = "Native".equals(f.getType()) && f.getMethod() != null && f.getMethod().getType() != null
                    && f.getMethod().getType().getName().isEmpty();
            if (!c) {
                return jni;
            }
            jni |= f.getMethod().getName().startsWith("Java_");
        }
        return false;
    }

    private static String describe(RecordedEvent e) {
        return JfrReader.describe(e) + " " + e.getString("operation") + " " + e.getString("remoteAddress") + " "
                + e.getLong("bytesTransferred") + " B, weight " + e.getFloat("weight") + ", " + e.getDuration();
    }

    private static String sample(List<RecordedEvent> events) {
        return events.stream().limit(5).map(NativeSocketTest::describe).collect(Collectors.joining("\n  ", "\n  ", ""));
    }

    @Test
    void echoCallsShowTheirPeerBytesAndJavaCaller() throws Exception {
        Path file = dir.resolve("echo.jfr");
        // The rate controller keeps about 83 events a second: 100,000 round trips give the client a few
        // hundred samples on a quiet host, more on a busy one (the run takes longer).
        int rounds = 100_000;
        int size = 4096;
        EchoWork.Run run;
        Map<String, Long> counters;
        try (EchoWork.Server server = new EchoWork.Server()) {
            String reply = TestEnv.start(profiler, "start,natsock=100us,file=" + file);
            assertTrue(reply.contains("Profiling started") && !reply.contains("WARNING"), reply);
            run = echo("natsock-client", server.port(), rounds, size, 0);
            counters = profiler.getDebugCounters();
            profiler.stop();

            List<RecordedEvent> events = events(file);
            List<RecordedEvent> client = onThread(events, "natsock-client");
            List<RecordedEvent> served = onThread(events, "natsock-server");
            assertTrue(client.size() >= 20, client.size() + " client events of " + events.size()
                    + "; counters: " + counters + sample(events));
            String serverAddress = "127.0.0.1:" + server.port();
            for (RecordedEvent e : client) {
                String op = e.getString("operation");
                assertTrue(OUTBOUND.contains(op) || INBOUND.contains(op), describe(e));
                assertEquals(serverAddress, e.getString("remoteAddress"), describe(e));
                long bytes = e.getLong("bytesTransferred");
                assertTrue(bytes > 0 && bytes <= size, describe(e));
                assertTrue(e.getFloat("weight") >= 1 && !e.getDuration().isNegative(), describe(e));
                assertTrue(JfrReader.contains(e, EchoWork.class, "clientCaller"), "no Java caller: " + describe(e));
                assertTrue(JfrReader.frames(e).stream().map(RecordedFrame::getMethod).noneMatch(m -> m != null && m.getName().contains("_hook")), "a hook frame: " + describe(e));
            }
            // The stacks start at the hook's caller: C frames down to the JNI function of the Java
            // native method that made the call.
            long fromC = client.stream().filter(NativeSocketTest::startsAtJniCode).count();
            assertTrue(fromC * 10 >= client.size() * 9, fromC + " of " + client.size()
                    + " client stacks start with C frames down to a Java_* function" + sample(client));
            List<RecordedEvent> out = client.stream().filter(e -> OUTBOUND.contains(e.getString("operation")))
                    .collect(Collectors.toList());
            assertFalse(out.isEmpty(), "no outbound call sampled" + sample(client));
            assertTrue(client.stream().anyMatch(e -> INBOUND.contains(e.getString("operation"))),
                    "no inbound call sampled" + sample(client));
            // A 4 KiB write on loopback goes out whole.
            long whole = out.stream().filter(e -> e.getLong("bytesTransferred") == size).count();
            assertTrue(whole * 10 >= out.size() * 9, whole + " of " + out.size() + " writes moved " + size + " bytes");
            // The server's calls name the client's end.
            assertFalse(served.isEmpty(), "no server-side event" + sample(events));
            for (RecordedEvent e : served) {
                assertEquals("127.0.0.1:" + run.localPort, e.getString("remoteAddress"), describe(e));
            }
            // Sampled by call time: duration times weight stands for the time the client spent in its calls
            // (Java's clock around them adds a little: its own copies and the JNI transition).
            double estimate = client.stream().mapToDouble(e -> e.getDuration().toNanos() * (double) e.getFloat("weight")).sum();
            double truth = run.nanosInCalls;
            assertTrue(estimate >= truth * 0.4 && estimate <= truth * 1.5, "the client's " + client.size()
                    + " samples stand for " + (long) estimate + " ns in socket calls; Java measured " + (long) truth);
            // JMC (metadata-driven, as the Datadog backend) reads the same events.
            List<JmcEvents.Event> jmc = JmcEvents.read(file.toFile(), EVENT);
            assertEquals(events.size(), jmc.size(), "JMC and RecordingFile count different events");
            assertEquals(events.stream().mapToLong(e -> e.getLong("bytesTransferred")).sum(),
                    jmc.stream().mapToLong(e -> e.getLong("bytesTransferred")).sum(), "JMC reads other byte counts");
            assertEquals(client.size(), jmc.stream().filter(e -> "natsock-client".equals(e.thread)
                    && serverAddress.equals(e.getString("remoteAddress"))).count(), "JMC reads other threads or peers");
        }
        // The converter reads them as the socket kind, worth their estimated call time.
        Path collapsed = dir.resolve("echo.collapsed");
        ChildJvm.Result r = new ChildJvm()
                .jvmArgs("-jar", TestEnv.toolsJar().toString(), "convert", "--to", "collapsed", "--event", "socket",
                        file.toString(), collapsed.toString())
                .timeout(Duration.ofMinutes(3)).run(dir);
        assertEquals(0, r.exitCode, r.describe());
        String text = new String(Files.readAllBytes(collapsed), StandardCharsets.UTF_8);
        assertTrue(text.contains(EchoWork.class.getName() + ".clientCaller"), text.substring(0, Math.min(2000, text.length())));
        assertTrue(counters.get("natsock_hooked_libraries") > 0, "counters: " + counters);
        assertTrue(counters.get("natsock_events") > 0, "counters: " + counters);
        List<RecordedEvent> config = JfrReader.events(file, JfrReader.PROFILER_CONFIG);
        assertEquals(64, config.get(config.size() - 1).getInt("modeMask") & 64, "modeMask has NATIVESOCKET");
        Map<String, String> settings = JfrReader.events(file, JfrReader.ACTIVE_SETTING).stream()
                .filter(e -> e.getLong("id") == 128)
                .collect(Collectors.toMap(e -> e.getString("name"), e -> e.getString("value"), (a, b) -> b));
        assertEquals("true", settings.get("enabled"), settings.toString());
        assertEquals("100000", settings.get("natsock"), settings.toString());
    }

    @Test
    void udpAndFileIoAreNotRecorded() throws Exception {
        Path file = dir.resolve("other.jfr");
        Path data = dir.resolve("data.bin");
        try (EchoWork.Server server = new EchoWork.Server()) {
            TestEnv.start(profiler, "start,natsock=1,file=" + file);
            Thread udp = new Thread(NativeSocketTest::udpRoundTrips, "natsock-udp");
            udp.start();
            udp.join();
            Thread files = new Thread(() -> fileRoundTrips(data), "natsock-file");
            files.start();
            files.join();
            // The hooks are in place: TCP on another thread is recorded.
            echo("natsock-tcp", server.port(), 2_000, 512, 0);
            profiler.stop();
        }
        List<RecordedEvent> events = events(file);
        assertFalse(onThread(events, "natsock-tcp").isEmpty(), "no TCP event" + sample(events));
        assertEquals(0, onThread(events, "natsock-udp").size(), "UDP recorded" + sample(onThread(events, "natsock-udp")));
        assertEquals(0, onThread(events, "natsock-file").size(), "file I/O recorded" + sample(onThread(events, "natsock-file")));
    }

    private static void udpRoundTrips() {
        try (DatagramSocket receiver = new DatagramSocket(0, InetAddress.getByName("127.0.0.1"));
             DatagramSocket sender = new DatagramSocket()) {
            receiver.setSoTimeout(50);
            sender.connect(receiver.getLocalSocketAddress());
            byte[] buf = new byte[512];
            for (int i = 0; i < 500; i++) {
                sender.send(new DatagramPacket(buf, buf.length));
                try {
                    receiver.receive(new DatagramPacket(new byte[512], 512));
                } catch (SocketTimeoutException e) {
                    // a dropped datagram
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void fileRoundTrips(Path data) {
        byte[] buf = new byte[4096];
        try {
            for (int r = 0; r < 20; r++) {
                try (FileOutputStream out = new FileOutputStream(data.toFile())) {
                    for (int i = 0; i < 100; i++) {
                        out.write(buf);
                    }
                }
                try (FileInputStream in = new FileInputStream(data.toFile())) {
                    while (in.read(buf) > 0) {
                        // drain
                    }
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Test
    void theRateLimitHoldsWhenEveryCallIsAsked() throws Exception {
        Path file = dir.resolve("rate.jfr");
        int rounds = 20_000;
        long started;
        long seconds;
        Map<String, Long> counters;
        try (EchoWork.Server server = new EchoWork.Server()) {
            TestEnv.start(profiler, "start,natsock=1,file=" + file);
            started = System.nanoTime();
            echo("natsock-rate", server.port(), rounds, 1024, 0);
            counters = profiler.getDebugCounters();
            profiler.stop();
            seconds = Math.max(1, (System.nanoTime() - started + 999_999_999L) / 1_000_000_000L);
        }
        List<RecordedEvent> events = events(file);
        // 4 socket calls a round trip (client and server, each way). The controller starts at every call
        // and scales the interval up after each burst of 16 events, up to 1024x a step, to about 83 events
        // a second. The bound grows with wall time, which a busy host only stretches.
        long bound = 300 + 3 * 83 * seconds;
        assertTrue(events.size() <= bound, events.size() + " events in " + seconds + " s for " + (4L * rounds)
                + " calls; bound " + bound + "; counters: " + counters);
        assertTrue(events.size() > 0, "no event");
        assertTrue(events.stream().anyMatch(e -> e.getFloat("weight") > 1), "the interval never moved");
        assertTrue(counters.get("natsock_interval_ns") > 1, "counters: " + counters);
    }

    @Test
    void theCallingThreadsSpanIdsComeAlong() throws Exception {
        Path file = dir.resolve("context.jfr");
        try (EchoWork.Server server = new EchoWork.Server()) {
            TestEnv.start(profiler, "start,natsock=1,file=" + file);
            echo("natsock-context", server.port(), 2_000, 512, 4242);
            profiler.stop();
        }
        List<RecordedEvent> mine = onThread(events(file), "natsock-context");
        assertFalse(mine.isEmpty(), "no event");
        for (RecordedEvent e : mine) {
            assertEquals(4242L, e.getLong("spanId"), describe(e));
            assertEquals(4243L, e.getLong("localRootSpanId"), describe(e));
        }
    }

    @Test
    void stopPutsTheHooksBackAndARestartRecordsAgain() throws Exception {
        try (EchoWork.Server server = new EchoWork.Server()) {
            for (int round = 0; round < 2; round++) {
                Path file = dir.resolve("restart-" + round + ".jfr");
                TestEnv.start(profiler, "start,natsock=1,file=" + file);
                assertTrue(profiler.getDebugCounters().get("natsock_hooked_slots") > 0);
                String thread = "natsock-restart-" + round;
                echo(thread, server.port(), 1_000, 512, 0);
                profiler.stop();
                assertEquals(0L, profiler.getDebugCounters().get("natsock_hooked_slots"), "the slots are put back at stop");
                // Hooks gone: sockets go on untouched.
                echo("natsock-after-" + round, server.port(), 1_000, 512, 0);
                List<RecordedEvent> events = events(file);
                assertFalse(onThread(events, thread).isEmpty(), "round " + round + ": no event" + sample(events));
            }
        }
    }

    @Test
    void aMalformedIntervalIsRejectedAndChangesNothing() throws Exception {
        Path file = dir.resolve("bad.jfr");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> profiler.execute("start,natsock=abc,file=" + file));
        assertTrue(e.getMessage().contains("natsock"), e.getMessage());
        assertFalse(TestEnv.isRunning(profiler), profiler.getStatus());
        assertEquals(0L, profiler.getDebugCounters().getOrDefault("natsock_hooked_slots", 0L));
    }
}
