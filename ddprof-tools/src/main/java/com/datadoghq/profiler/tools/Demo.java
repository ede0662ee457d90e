package com.datadoghq.profiler.tools;

import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import com.datadoghq.profiler.JavaProfiler;

/**
 * {@code demo [seconds] [jfr-path]}: profiles a bundled CPU-bound workload and prints its report.
 *
 * <p>Two threads burn CPU through call chains whose names are easy to spot in a profile:
 * <ul>
 *   <li>{@code ddprof-demo-primes}: {@code Primes.loop -> Primes.countPrimes -> Primes.sieve
 *       -> Primes.crossOut}</li>
 *   <li>{@code ddprof-demo-sort}: {@code Sorter.loop -> Sorter.sortRound -> Sorter.mergeSort
 *       (recursive) -> Sorter.merge}</li>
 * </ul>
 * The profiler runs with {@code start,cpu=10ms,file=<jfr-path>} (plus any options in the system
 * property {@code ddprof.demo.options}, e.g. {@code fjmethodid=lazy}) for the given number of
 * seconds (default 5); then it is stopped and the recording is summarised with {@link Report}.
 * The default recording is {@code ddprof-demo-<pid>.jfr} in {@code java.io.tmpdir}.
 */
public final class Demo {
    private static volatile boolean running;
    /** Results are folded in here so the JIT cannot drop the work. */
    private static volatile long sink;

    private Demo() {
    }

    /** Entry point used by {@code Main}. Returns the exit code. */
    static final String USAGE = String.join("\n",
            "Usage: demo [seconds] [jfr-path]",
            "  profiles a bundled CPU-bound workload (default 5 s), then prints its report and the",
            "  recording's path (default: a ddprof-demo-PID.jfr in the temporary directory)");

    public static int run(String... args) throws Exception {
        if (args.length == 1 && (args[0].equals("--help") || args[0].equals("-h"))) {
            System.out.println(USAGE);
            return 0;
        }
        if (args.length > 2) {
            System.err.println("demo: unexpected argument '" + args[2] + "'; run 'demo --help' for usage");
            return 2;
        }
        int seconds = 5;
        if (args.length >= 1) {
            try {
                seconds = Integer.parseInt(args[0]);
            } catch (NumberFormatException e) {
                seconds = -1;
            }
            if (seconds <= 0) {
                System.err.println("demo: seconds must be a positive integer, got '" + args[0]
                        + "'; run 'demo --help' for usage");
                return 2;
            }
        }
        Path jfr = args.length >= 2
                ? Paths.get(args[1]).toAbsolutePath()
                : Paths.get(System.getProperty("java.io.tmpdir"), "ddprof-demo-" + ProcessHandle.current().pid() + ".jfr");

        String command = "start,cpu=10ms,file=" + jfr;
        String extra = System.getProperty("ddprof.demo.options", "").trim();
        if (!extra.isEmpty()) {
            command += "," + extra;
        }

        JavaProfiler profiler = JavaProfiler.getInstance();
        Thread primes = new Thread(Primes::loop, "ddprof-demo-primes");
        Thread sorter = new Thread(Sorter::loop, "ddprof-demo-sort");
        running = true;
        primes.start();
        sorter.start();
        try {
            System.out.println("Profiling the demo workload for " + seconds + " s (" + command + ")");
            profiler.execute(command);
            try {
                TimeUnit.SECONDS.sleep(seconds);
            } finally {
                profiler.stop();
            }
        } finally {
            running = false;
            primes.join();
            sorter.join();
        }

        System.out.println();
        Report.print(Report.read(jfr), jfr, System.out);
        System.out.println();
        System.out.println("Recording: " + jfr);
        return 0;
    }

    /** Prime counting with a sieve of Eratosthenes. */
    static final class Primes {
        static void loop() {
            long acc = 0;
            while (running) {
                acc += countPrimes(2_000_000);
            }
            sink += acc;
        }

        static int countPrimes(int limit) {
            boolean[] composite = sieve(limit);
            int count = 0;
            for (int i = 2; i <= limit; i++) {
                if (!composite[i]) {
                    count++;
                }
            }
            return count;
        }

        static boolean[] sieve(int limit) {
            boolean[] composite = new boolean[limit + 1];
            for (int p = 2; (long) p * p <= limit; p++) {
                if (!composite[p]) {
                    crossOut(composite, p, limit);
                }
            }
            return composite;
        }

        static void crossOut(boolean[] composite, int prime, int limit) {
            for (int multiple = prime * prime; multiple <= limit; multiple += prime) {
                composite[multiple] = true;
            }
        }
    }

    /** Top-down merge sort of random arrays. */
    static final class Sorter {
        static void loop() {
            Random random = new Random(42);
            int[] data = new int[200_000];
            int[] scratch = new int[data.length];
            long acc = 0;
            while (running) {
                acc += sortRound(random, data, scratch);
            }
            sink += acc;
        }

        static long sortRound(Random random, int[] data, int[] scratch) {
            for (int i = 0; i < data.length; i++) {
                data[i] = random.nextInt();
            }
            mergeSort(data, scratch, 0, data.length);
            return data[data.length / 2];
        }

        static void mergeSort(int[] a, int[] scratch, int from, int to) {
            if (to - from < 2) {
                return;
            }
            int mid = (from + to) >>> 1;
            mergeSort(a, scratch, from, mid);
            mergeSort(a, scratch, mid, to);
            merge(a, scratch, from, mid, to);
        }

        static void merge(int[] a, int[] scratch, int from, int mid, int to) {
            int i = from;
            int j = mid;
            int k = from;
            while (i < mid && j < to) {
                scratch[k++] = a[i] <= a[j] ? a[i++] : a[j++];
            }
            while (i < mid) {
                scratch[k++] = a[i++];
            }
            while (j < to) {
                scratch[k++] = a[j++];
            }
            System.arraycopy(scratch, from, a, from, to - from);
        }
    }
}
