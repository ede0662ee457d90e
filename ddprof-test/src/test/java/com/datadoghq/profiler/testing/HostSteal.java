package com.datadoghq.profiler.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The share of this guest's busy CPU time the hypervisor stole over a window, from the first line of
 * {@code /proc/stat}. With paravirtual steal accounting a thread's CPU time (ThreadMXBean,
 * {@code CLOCK_THREAD_CPUTIME_ID}) leaves stolen time out, while perf_events' {@code cpu-clock} counts it:
 * on a host shared with other guests a perf sample's weight runs ahead of the thread's CPU time by about
 * {@code 1 / (1 - stolen share)}.
 */
public final class HostSteal {
    private final long[] start;

    private HostSteal(long[] start) {
        this.start = start;
    }

    /** A window starting now. */
    public static HostSteal start() {
        return new HostSteal(read());
    }

    /** Stolen jiffies over busy plus stolen jiffies since {@link #start()}; 0 where unknown. */
    double stolenShare() {
        long[] now = read();
        if (start.length < 8 || now.length < 8) {
            return 0;
        }
        long busy = 0;
        // user nice system idle iowait irq softirq steal: everything but idle and iowait.
        for (int i : new int[] {0, 1, 2, 5, 6, 7}) {
            busy += now[i] - start[i];
        }
        long stolen = now[7] - start[7];
        return busy > 0 ? (double) stolen / busy : 0;
    }

    /**
     * The largest ratio of perf weights to a thread's CPU time that {@code most} allows on a quiet host,
     * given what was stolen since {@link #start()}: {@code most / (1 - stolen share)}, the share capped at
     * a half. Call once the workload's CPU time was read.
     */
    public Bound bound(double most) {
        double stolen = Math.min(stolenShare(), 0.5);
        return new Bound(most / (1 - stolen), stolen);
    }

    /** An upper bound and the stolen share it allows for, for the failure message. */
    public static final class Bound {
        public final double most;
        public final double stolen;

        Bound(double most, double stolen) {
            this.most = most;
            this.stolen = stolen;
        }

        @Override
        public String toString() {
            return String.format("%.3f (allowing for the %.1f%% of busy CPU time the hypervisor stole)",
                    most, 100 * stolen);
        }
    }

    private static long[] read() {
        try {
            List<String> lines = Files.readAllLines(Path.of("/proc/stat"));
            String[] f = lines.get(0).trim().split("\\s+");
            long[] v = new long[f.length - 1];
            for (int i = 1; i < f.length; i++) {
                v[i - 1] = Long.parseLong(f[i]);
            }
            return v;
        } catch (IOException | RuntimeException e) {
            return new long[0];
        }
    }
}
