package com.datadoghq.profiler.nativemem;

import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;

import com.datadoghq.profiler.JavaProfiler;

/**
 * A child JVM's main for {@link ProfilerOutOfItsOwnProfileTest}: a quiet service. Args: the output
 * directory, the profiler options (without {@code start} and {@code file}), the number of dumps.
 * Starts the profiler, runs {@link ZipWork#zipCaller} on the thread {@code app-zip} (the
 * application's own native allocations), then idles with a few parked threads while the profiler's
 * background threads work, dumping {@code dump-N.jfr} every 300 ms (from this thread, through the
 * API: the dump's own allocations are the profiler's too); stops into {@code last.jfr}. Prints the
 * start's reply, the counters before the stop ({@code counter name=value}) and
 * {@code workload done}.
 */
public final class QuietServiceMain {
    private QuietServiceMain() {}

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        String options = args[1];
        int dumps = Integer.parseInt(args[2]);
        JavaProfiler profiler = JavaProfiler.getInstance();
        System.out.println("reply " + profiler.execute("start," + options + ",file=" + dir.resolve("last.jfr")).trim());
        for (int i = 0; i < 4; i++) {
            Thread idle = new Thread(() -> LockSupport.park(), "idle-" + i);
            idle.setDaemon(true);
            idle.start();
        }
        Thread zip = new Thread(() -> ZipWork.zipCaller(20), "app-zip");
        zip.start();
        zip.join();
        for (int i = 0; i < dumps; i++) {
            Thread.sleep(300);
            profiler.dump(dir.resolve("dump-" + i + ".jfr"));
        }
        Map<String, Long> counters = profiler.getDebugCounters();
        profiler.stop();
        counters.forEach((k, v) -> System.out.println("counter " + k + "=" + v));
        System.out.println("workload done");
    }
}
