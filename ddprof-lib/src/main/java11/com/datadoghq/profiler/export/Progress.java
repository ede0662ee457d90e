package com.datadoghq.profiler.export;

import java.io.PrintStream;

/**
 * A progress line for a long read, on a terminal: "convert: 45% of the recording read (1234567
 * events)", rewritten in place at most twice a second, and only once the read has taken two seconds
 * (a short conversion prints nothing). The share is the events' time against the recording's span:
 * chunks are written in time order, so it grows as the file is read.
 */
public final class Progress {
    private static final long QUIET_NANOS = 2_000_000_000L;
    private static final long EVERY_NANOS = 500_000_000L;

    private final PrintStream out;
    private final String what;
    private final long startNanos;
    private final long spanNanos;
    private final long began = System.nanoTime();
    private long lastPrint;
    private long events;
    private boolean printed;

    /**
     * Whether standard input and output are a terminal. {@code System.console()} says so up to JDK
     * 21; from JDK 22 it returns a console also when they are redirected, and {@code
     * Console.isTerminal()} says whether it is one.
     */
    public static boolean onTerminal() {
        java.io.Console console = System.console();
        if (console == null) {
            return false;
        }
        try {
            return (Boolean) java.io.Console.class.getMethod("isTerminal").invoke(console);
        } catch (ReflectiveOperationException e) {
            return true; // before JDK 22: a console is a terminal
        }
    }

    /** {@code startNanos} and {@code endNanos}: the recording's span (epoch nanoseconds). */
    public Progress(PrintStream out, String what, long startNanos, long endNanos) {
        this.out = out;
        this.what = what;
        this.startNanos = startNanos;
        this.spanNanos = Math.max(1, endNanos - startNanos);
    }

    /** Counts one event at {@code nanos}; looks at the clock once every 65,536 events. */
    public void event(long nanos) {
        if ((++events & 0xffff) != 0) {
            return;
        }
        long now = System.nanoTime();
        if (now - began < QUIET_NANOS || now - lastPrint < EVERY_NANOS) {
            return;
        }
        lastPrint = now;
        long percent = Math.max(0, Math.min(100, (nanos - startNanos) * 100 / spanNanos));
        out.print("\r" + what + ": " + percent + "% of the recording read (" + events + " events)");
        out.flush();
        printed = true;
    }

    /** Clears the line, if one was printed. */
    public void done() {
        if (printed) {
            out.print("\r\033[K");
            out.flush();
        }
    }
}
