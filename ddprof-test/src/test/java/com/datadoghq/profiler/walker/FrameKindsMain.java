package com.datadoghq.profiler.walker;

import java.util.zip.Deflater;

import com.datadoghq.profiler.testing.CpuBudget;
import com.datadoghq.profiler.testing.CpuBurner;

/**
 * A child JVM's main that keeps one thread, "kinds-worker", busy in a known place, so that a
 * test can look at the frame types of its samples. Args: mode, then milliseconds.
 * <ul>
 *   <li>{@code chain}: {@link CpuBurner}'s {@code run -> chainA -> chainB -> chainC}, pure
 *   arithmetic; how it runs (interpreted, C1, C2 with inlining) is up to the JVM options</li>
 *   <li>{@code deflate}: {@link Deflater#deflate(byte[])} at the best compression level in a
 *   loop, so that most time is spent below the native method of {@code java.util.zip.Deflater}</li>
 * </ul>
 */
public final class FrameKindsMain {
    public static volatile long sink;

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        long millis = args.length > 1 ? Long.parseLong(args[1]) : 3000;
        Runnable work;
        switch (mode) {
            case "chain":
                work = new CpuBurner(millis);
                break;
            case "deflate":
                work = () -> deflateFor(millis);
                break;
            default:
                throw new IllegalArgumentException("mode: " + mode);
        }
        Thread worker = new Thread(work, "kinds-worker");
        worker.start();
        worker.join();
        System.out.println("workload done: " + mode);
    }

    /** Compresses 64 KiB of text-like data over and over for {@code millis} of this thread's CPU. */
    public static void deflateFor(long millis) {
        byte[] input = new byte[1 << 16];
        long seed = 0x2545F4914F6CDD1DL;
        for (int i = 0; i < input.length; i++) {
            seed = seed * 6364136223846793005L + 1442695040888963407L;
            // A small alphabet: many short matches for the match finder to chase.
            input[i] = (byte) ('a' + (int) ((seed >>> 33) % 12));
        }
        byte[] output = new byte[1 << 17];
        Deflater deflater = new Deflater(Deflater.BEST_COMPRESSION);
        CpuBudget budget = CpuBudget.of(millis);
        long total = 0;
        try {
            while (budget.left()) {
                deflater.reset();
                deflater.setInput(input);
                deflater.finish();
                while (!deflater.finished()) {
                    total += deflater.deflate(output);
                }
            }
        } finally {
            deflater.end();
        }
        sink = total;
    }
}
