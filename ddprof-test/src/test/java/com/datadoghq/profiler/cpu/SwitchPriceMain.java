package com.datadoghq.profiler.cpu;

import java.nio.ByteBuffer;
import java.nio.channels.Pipe;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Map;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.CpuBurner;

/**
 * A child JVM's main for {@link SwitchPriceTest}. Args: the output directory, the workload
 * ({@code switch}: a thread and an echo thread hand a byte back and forth through two pipes, both
 * blocking on every hand-off, as an event-loop service does; {@code cpu}: {@link CpuBurner}), the
 * options (without {@code start} and {@code file}). Runs the workload until the profiler has
 * measured a window of context switches (the gauge {@code cpu_switches_per_cpu_second} set) or
 * for at most 4 s of the workload's CPU time beyond that, then writes {@code getStatus()} to
 * {@code status} and prints the counters as {@code counter <name>=<value>}.
 */
public final class SwitchPriceMain {
    private static volatile boolean running = true;

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        boolean switches = args[1].equals("switch");
        JavaProfiler profiler = JavaProfiler.getInstance();
        String reply = profiler.execute("start," + args[2] + ",file=" + dir.resolve("out.jfr"));
        System.out.println("reply " + reply.trim());
        Thread worker = new Thread(switches ? SwitchPriceMain::pingPong : new CpuBurner(), "worker");
        worker.setDaemon(true);
        worker.start();
        // The watcher's window is 5 s of wall time with at least 100 ms of CPU; wait for its first
        // figure (a loaded host stretches the wait, not the result).
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (profiler.getDebugCounters().getOrDefault("cpu_switches_per_cpu_second", 0L) == 0
                && System.nanoTime() < deadline) {
            Thread.sleep(200);
        }
        // One more window, so that a warning given at the end of the first one is in place.
        Thread.sleep(1500);
        Files.write(dir.resolve("status"), profiler.getStatus().getBytes(StandardCharsets.UTF_8));
        for (Map.Entry<String, Long> e : profiler.getDebugCounters().entrySet()) {
            System.out.println("counter " + e.getKey() + "=" + e.getValue());
        }
        running = false;
        profiler.stop();
        System.out.println("workload done");
    }

    private static void pingPong() {
        try {
            Pipe ping = Pipe.open();
            Pipe pong = Pipe.open();
            Thread echo = new Thread(() -> {
                ByteBuffer b = ByteBuffer.allocate(1);
                try {
                    while (true) {
                        b.clear();
                        if (ping.source().read(b) < 0) {
                            return;
                        }
                        b.flip();
                        pong.sink().write(b);
                    }
                } catch (java.io.IOException e) {
                    // closed: done
                }
            }, "echo");
            echo.setDaemon(true);
            echo.start();
            ByteBuffer b = ByteBuffer.allocate(1);
            while (running) {
                b.clear();
                b.put((byte) 1);
                b.flip();
                ping.sink().write(b);
                b.clear();
                pong.source().read(b);
            }
            ping.sink().close();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
