package com.datadoghq.profiler.signals;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Map;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.CpuBudget;

/**
 * Child JVM of {@link ForeignHandlerTest}. {@code foreign DIR LIB}: starts the profiler, lets a
 * library ({@code foreign_handler.c}) take SIGPROF and SIGVTALRM without chaining, spins, then
 * starts again; prints what each phase got as {@code key=value} lines. {@code jsig DIR LIB}: one
 * start and stop (run under libjsig), then the deprecated {@code signal()} as a control.
 */
public final class ForeignHandlerMain {
    static final int SIGUSR1 = 10;
    static final int SIGPIPE = 13;
    static final int SIGVTALRM = 26;
    static final int SIGPROF = 27;
    static final long SPIN_MS = 600;
    /** A multiple of the scheduler tick, so that a thread's CPU timer fires once per interval. */
    static final long INTERVAL_MS = 10;
    private static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();
    static volatile double sink;

    static native int install(int sig);

    static native long caught(int sig);

    static native void ignoreWithSignal(int sig);

    public static void main(String[] args) throws Exception {
        String dir = args[1];
        String lib = args[2];
        JavaProfiler profiler = JavaProfiler.getInstance();
        String start = "start,event=ctimer,interval=" + INTERVAL_MS + "ms,wall=5ms,file=" + dir + "/foreign.jfr";
        if (args[0].equals("jsig")) {
            profiler.execute(start + ",memory=256k:a");
            spin(100);
            profiler.execute("stop");
            System.err.println("MARK profiler started and stopped");
            System.load(lib);
            ignoreWithSignal(SIGUSR1); // not the JVM's: JDK 17 and 21 warn
            ignoreWithSignal(SIGPIPE); // the JVM's: JDK 25 warns
            System.err.println("MARK control done");
            return;
        }
        profiler.execute(start);
        profiler.addThread(); // the wall sampler signals registered threads (filter on)
        spin(100);
        System.load(lib);
        say("install.sigprof", install(SIGPROF));
        say("install.sigvtalrm", install(SIGVTALRM));
        // The library watcher looks every 200 ms; `status` looks itself.
        String status = profiler.execute("status");
        for (int i = 0; i < 50 && !status.contains("SIGVTALRM replaced"); i++) {
            Thread.sleep(100);
            status = profiler.execute("status");
        }
        System.out.print(prefixed("status.replaced", status));
        System.out.print(prefixed("getstatus.replaced", profiler.getStatus()));
        phase("replaced", profiler);
        say("counter.signal_handler_replaced", counter(profiler, "signal_handler_replaced"));
        profiler.execute("stop");

        System.out.print(prefixed("restart", profiler.execute(start)));
        profiler.addThread();
        phase("restarted", profiler);
        System.out.print(prefixed("status.restarted", profiler.execute("status")));
        System.out.print(prefixed("getstatus.restarted", profiler.getStatus()));
        say("counter.restarted.signal_handler_replaced", counter(profiler, "signal_handler_replaced"));
        profiler.execute("stop");
    }

    /** Spins {@link #SPIN_MS} of CPU and prints the signals each side got meanwhile. */
    private static void phase(String name, JavaProfiler profiler) {
        long own = counter(profiler, "ctimer_signal_own");
        long wallOwn = counter(profiler, "wallclock_signal_own");
        long foreign = caught(SIGPROF);
        long wallForeign = caught(SIGVTALRM);
        long cpu = MX.getCurrentThreadCpuTime();
        spin(SPIN_MS);
        say(name + ".cpu_ms", (MX.getCurrentThreadCpuTime() - cpu) / 1_000_000);
        say(name + ".own", counter(profiler, "ctimer_signal_own") - own);
        say(name + ".wall_own", counter(profiler, "wallclock_signal_own") - wallOwn);
        say(name + ".foreign", caught(SIGPROF) - foreign);
        say(name + ".wall_foreign", caught(SIGVTALRM) - wallForeign);
    }

    private static long counter(JavaProfiler profiler, String name) {
        Map<String, Long> counters = profiler.getDebugCounters();
        return counters.getOrDefault(name, -1L);
    }

    private static void spin(long cpuMillis) {
        CpuBudget budget = CpuBudget.of(cpuMillis);
        double x = 1;
        while (budget.left()) {
            for (int i = 0; i < 10_000; i++) {
                x = x * 1.0000001 + 1e-9;
            }
        }
        sink = x;
    }

    private static void say(String key, long value) {
        System.out.println(key + "=" + value);
    }

    private static String prefixed(String key, String text) {
        StringBuilder out = new StringBuilder();
        for (String line : text.split("\n")) {
            out.append(key).append(": ").append(line).append('\n');
        }
        return out.toString();
    }
}
