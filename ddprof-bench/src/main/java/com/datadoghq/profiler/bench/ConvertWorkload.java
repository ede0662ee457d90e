package com.datadoghq.profiler.bench;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * The program profiled to make the conversion benchmark's recording ({@code scripts/bench-convert.sh}):
 * {@code ConvertWorkload THREADS SECONDS}. Each thread picks one of a few JDK-heavy tasks at random
 * (regular expressions, sorting, big integers, formatting, streams) or sleeps a few milliseconds,
 * so that the recording holds many distinct stacks, CPU and wall samples of running and sleeping
 * threads, as a service's would.
 */
public final class ConvertWorkload {
    static volatile long sink;

    private ConvertWorkload() {
    }

    public static void main(String[] args) throws InterruptedException {
        int threads = Integer.parseInt(args[0]);
        long end = System.nanoTime() + Long.parseLong(args[1]) * 1_000_000_000L;
        List<Thread> started = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            Random random = new Random(t);
            Thread thread = new Thread(() -> {
                while (System.nanoTime() < end) {
                    step(random);
                }
            }, "worker-" + t);
            thread.start();
            started.add(thread);
        }
        for (Thread t : started) {
            t.join();
        }
    }

    static void step(Random r) {
        switch (r.nextInt(6)) {
            case 0:
                sink += Pattern.compile("(a|b)+c" + r.nextInt(10)).matcher("ababababc" + r.nextInt(10)).matches() ? 1 : 0;
                break;
            case 1: {
                int[] x = r.ints(2000).toArray();
                Arrays.sort(x);
                sink += x[0];
                break;
            }
            case 2:
                sink += BigInteger.valueOf(r.nextLong()).pow(40).mod(BigInteger.valueOf(1_000_003)).longValue();
                break;
            case 3:
                sink += String.format("%d-%s-%.3f", r.nextInt(), Integer.toHexString(r.nextInt()), r.nextDouble()).length();
                break;
            case 4:
                sink += IntStream.range(0, 3000).mapToObj(i -> "k" + (i % 97))
                        .collect(Collectors.groupingBy(s -> s, Collectors.counting())).size();
                break;
            default:
                try {
                    Thread.sleep(1 + r.nextInt(3));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
        }
    }
}
