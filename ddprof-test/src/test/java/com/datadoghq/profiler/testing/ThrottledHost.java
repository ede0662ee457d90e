package com.datadoghq.profiler.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Runs child JVMs on a throttled host: their threads sit descheduled for tens of milliseconds at a
 * time, as in a container under a CPU quota, so signals pile up while a thread waits and arrive
 * together when it runs again. Three ways, the first that works here:
 * <ol>
 *   <li>cgroup v2: a child cgroup of the hierarchy's root with {@code cpu.max} = the share (where
 *       the root already enables {@code cpu} for its children);</li>
 *   <li>cgroup v1: a child of the {@code cpu} controller's root with {@code cpu.cfs_quota_us};</li>
 *   <li>CPU hogs: {@code 4 x nproc} busy shell loops in other processes, beside the child.</li>
 * </ol>
 * The cgroups need write access to the hierarchy (root, or a delegated tree); the hogs work
 * everywhere but throttle less predictably. Use one per test, closed when done:
 * <pre>
 * try (ThrottledHost host = ThrottledHost.open(0.25)) {
 *     ChildJvm.Result r = host.run(new ChildJvm().main(...), dir);
 * }
 * </pre>
 * Expectations must still scale with the CPU time the workload got (see {@link CpuBudget}): this
 * only makes a run slower and its scheduling rougher. {@link #describe()} says which way was taken.
 */
public final class ThrottledHost implements AutoCloseable {
    /** The CFS period the quota is given over: 100 ms, the kernel's default. */
    private static final long PERIOD_US = 100_000;
    private static final AtomicInteger SEQUENCE = new AtomicInteger();
    /** {@code -Dddprof.test.throttle=hogs} takes the hogs even where a cgroup could be made. */
    public static final String FORCE_PROPERTY = "ddprof.test.throttle";

    private final Path cgroup;
    private final Path procs;
    private final List<Process> hogs;
    private final String description;

    private ThrottledHost(Path cgroup, Path procs, List<Process> hogs, String description) {
        this.cgroup = cgroup;
        this.procs = procs;
        this.hogs = hogs;
        this.description = description;
    }

    /**
     * A throttled host where a child gets {@code cpuShare} (0 &lt; share &le; 1) of one CPU, by a
     * cgroup quota where one can be made, else beside CPU hogs (then the share is not enforced).
     */
    public static ThrottledHost open(double cpuShare) throws IOException {
        if (!(cpuShare > 0 && cpuShare <= 1)) {
            throw new IllegalArgumentException("cpuShare must be in (0, 1]: " + cpuShare);
        }
        long quotaUs = Math.max(1_000, Math.round(PERIOD_US * cpuShare));
        String name = "ddprof-test-" + ProcessHandle.current().pid() + "-" + SEQUENCE.incrementAndGet();
        List<String> tried = new ArrayList<>();
        if ("hogs".equals(System.getProperty(FORCE_PROPERTY))) {
            tried.add(FORCE_PROPERTY + "=hogs");
            return hogs(tried);
        }
        ThrottledHost host = cgroupV2(name, quotaUs, tried);
        if (host == null) {
            host = cgroupV1(name, quotaUs, tried);
        }
        return host != null ? host : hogs(tried);
    }

    /** The child, run in this host's cgroup (or beside its hogs), as {@link ChildJvm#run(Path)}. */
    public ChildJvm.Result run(ChildJvm child, Path workDir) throws IOException, InterruptedException {
        if (procs != null) {
            // The shell moves itself into the cgroup, then becomes the JVM: every thread the JVM
            // ever starts is inside from its first instruction.
            child.launcher("sh", "-c", "echo $$ > \"$0\" && exec \"$@\"", procs.toString());
        }
        return child.run(workDir);
    }

    /** Which throttle this host uses, for assertion messages. */
    public String describe() {
        return description;
    }

    @Override
    public void close() {
        for (Process p : hogs) {
            p.destroyForcibly();
        }
        for (Process p : hogs) {
            try {
                p.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (cgroup != null) {
            // Empty once the child exited; a cgroup directory is removed with rmdir, not rm -r.
            for (int i = 0; i < 50 && !cgroup.toFile().delete(); i++) {
                try {
                    Thread.sleep(100);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    private static ThrottledHost cgroupV2(String name, long quotaUs, List<String> tried) {
        Path root = mountOf("cgroup2");
        if (root == null) {
            tried.add("cgroup v2: not mounted");
            return null;
        }
        try {
            if (!read(root.resolve("cgroup.controllers")).contains("cpu")) {
                tried.add("cgroup v2 at " + root + ": no cpu controller (bound to v1?)");
                return null;
            }
            // Enabling the controller for the root's children would change the host for
            // everyone: only a hierarchy that already delegates it is used.
            if (!read(root.resolve("cgroup.subtree_control")).contains("cpu")) {
                tried.add("cgroup v2 at " + root + ": cpu not enabled for children (cgroup.subtree_control)");
                return null;
            }
            Path dir = Files.createDirectory(root.resolve(name));
            try {
                Files.write(dir.resolve("cpu.max"), (quotaUs + " " + PERIOD_US).getBytes(StandardCharsets.US_ASCII));
            } catch (IOException e) {
                dir.toFile().delete();
                throw e;
            }
            return new ThrottledHost(dir, dir.resolve("cgroup.procs"), List.of(),
                    "cgroup v2 " + dir + ", cpu.max " + quotaUs + " " + PERIOD_US);
        } catch (IOException | RuntimeException e) {
            tried.add("cgroup v2 at " + root + ": " + e);
            return null;
        }
    }

    private static ThrottledHost cgroupV1(String name, long quotaUs, List<String> tried) {
        Path root = cpuControllerV1();
        if (root == null) {
            tried.add("cgroup v1: no cpu controller mounted");
            return null;
        }
        try {
            Path dir = Files.createDirectory(root.resolve(name));
            try {
                Files.write(dir.resolve("cpu.cfs_period_us"), Long.toString(PERIOD_US).getBytes(StandardCharsets.US_ASCII));
                Files.write(dir.resolve("cpu.cfs_quota_us"), Long.toString(quotaUs).getBytes(StandardCharsets.US_ASCII));
            } catch (IOException e) {
                dir.toFile().delete();
                throw e;
            }
            return new ThrottledHost(dir, dir.resolve("cgroup.procs"), List.of(),
                    "cgroup v1 " + dir + ", cpu.cfs_quota_us " + quotaUs + " of " + PERIOD_US);
        } catch (IOException | RuntimeException e) {
            tried.add("cgroup v1 at " + root + ": " + e);
            return null;
        }
    }

    private static ThrottledHost hogs(List<String> tried) throws IOException {
        int n = 4 * Runtime.getRuntime().availableProcessors();
        List<Process> hogs = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) {
                hogs.add(new ProcessBuilder("sh", "-c", "while :; do :; done")
                        .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                        .redirectError(ProcessBuilder.Redirect.DISCARD)
                        .start());
            }
        } catch (IOException e) {
            hogs.forEach(Process::destroyForcibly);
            throw e;
        }
        return new ThrottledHost(null, null, hogs, n + " CPU hogs (no cgroup: " + String.join("; ", tried) + ")");
    }

    /** Where a filesystem of {@code type} is mounted (the first one), from /proc/self/mounts. */
    private static Path mountOf(String type) {
        for (String[] m : mounts()) {
            if (m[2].equals(type)) {
                return Paths.get(m[1]);
            }
        }
        return null;
    }

    /** The root of the cgroup v1 hierarchy that holds the {@code cpu} controller. */
    private static Path cpuControllerV1() {
        for (String[] m : mounts()) {
            if (m[2].equals("cgroup") && List.of(m[3].split(",")).contains("cpu")) {
                return Paths.get(m[1]);
            }
        }
        return null;
    }

    private static List<String[]> mounts() {
        List<String[]> out = new ArrayList<>();
        try {
            for (String line : Files.readAllLines(Paths.get("/proc/self/mounts"))) {
                String[] f = line.split(" ");
                if (f.length >= 4) {
                    out.add(f);
                }
            }
        } catch (IOException e) {
            // No mounts to read: no cgroups, hogs then.
        }
        return out;
    }

    private static String read(Path p) throws IOException {
        return new String(Files.readAllBytes(p), StandardCharsets.US_ASCII);
    }
}
