import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.LibraryLoader;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Paths;

/**
 * The aarch64 smoke test's workload (scripts/arm64-smoke.sh), run under qemu-user: loads the
 * jar's library the way an application does (JavaProfiler.getInstance(), no explicit path),
 * profiles CPU at 10 ms while the main thread burns CPU in {@link #burnArmSmokeHot}, dumps and
 * stops. Prints what the script checks against the recording: the architecture and the main
 * thread's CPU time (the sample count is scaled by it, not by the wall-clock run time), the
 * start command's reply, and the profiler's debug counters ({@code counter NAME=VALUE}).
 *
 *   java ArmSmoke JFR_PATH RUN_MILLIS [EXTRA_START_OPTIONS]
 */
public class ArmSmoke {
    static volatile long sink;

    static long burnArmSmokeHot(long n) {
        long x = 1;
        for (long i = 0; i < n; i++) {
            x = x * 6364136223846793005L + i;
            x ^= x >>> 17;
        }
        return x;
    }

    public static void main(String[] args) throws Exception {
        String jfr = args[0];
        long runMillis = Long.parseLong(args[1]);
        JavaProfiler profiler = JavaProfiler.getInstance();
        System.out.println("arch=" + System.getProperty("os.arch"));
        System.out.println("library=" + LibraryLoader.loadedLibraryPath());
        System.out.println("version=" + profiler.getVersion());
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        String extra = args.length > 2 && !args[2].isEmpty() ? "," + args[2] : "";
        String reply = profiler.execute("start,cpu=10ms" + extra + ",file=" + jfr);
        System.out.println("start_reply=" + reply.trim().replace('\n', ' '));
        long cpu0 = mx.getCurrentThreadCpuTime();
        long end = System.nanoTime() + runMillis * 1_000_000L;
        while (System.nanoTime() < end) {
            sink += burnArmSmokeHot(200_000);
        }
        long cpuMillis = (mx.getCurrentThreadCpuTime() - cpu0) / 1_000_000L;
        profiler.dump(Paths.get(jfr + ".dump.jfr"));
        for (java.util.Map.Entry<String, Long> e : profiler.getDebugCounters().entrySet()) {
            System.out.println("counter " + e.getKey() + "=" + e.getValue());
        }
        profiler.stop();
        System.out.println("main_cpu_ms=" + cpuMillis);
    }
}
