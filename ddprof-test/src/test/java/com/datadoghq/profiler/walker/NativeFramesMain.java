package com.datadoghq.profiler.walker;

import com.datadoghq.profiler.testing.CpuBudget;

/**
 * A child JVM's main that keeps one thread, "native-worker", busy below Java, so that a test
 * can look at the native frames of its samples. Args: mode, then milliseconds.
 * <ul>
 *   <li>{@code throw}: {@code new Throwable()} at a recursion depth of 40, over and over: most
 *   time is spent in the VM's {@code java_lang_Throwable::fill_in_stack_trace} (libjvm, built
 *   with frame pointers), below the native method {@code Throwable.fillInStackTrace}, with a
 *   frame anchor</li>
 *   <li>{@code nanotime}: {@link System#nanoTime()} in a loop: compiled code calls the VM's
 *   clock as a leaf call, without a frame anchor, into libc and the vDSO</li>
 *   <li>{@code deflate}: {@link FrameKindsMain#deflateFor}: zlib (no frame pointers) below the
 *   native method {@code Deflater.deflateBytes*}</li>
 *   <li>{@code trig}: {@link Math#sin}/{@link Math#cos} in a loop: compiled code calls HotSpot's
 *   intrinsic stubs for them (code-cache stubs, no nmethod, no symbol)</li>
 *   <li>{@code latejni}: loads the library named by {@code -Dlate.lib} (built from
 *   {@code late_spin.c}) after the profiler started, then spins in its C functions below the
 *   native method {@link #lateSpin}</li>
 *   <li>{@code deletedjni}: extracts the library named by {@code -Dlate.lib} (built from
 *   {@code deleted_spin.c}) to a temporary file beside it, loads it and deletes it, as Netty and
 *   zstd-jni load theirs, then spins in its C functions below the native method
 *   {@link #deletedSpin}; prints whether this process may open {@code /proc/self/map_files/}</li>
 *   <li>{@code gcstorm}: allocates while keeping a changing set of about 24 MB alive, so that a
 *   small heap collects all the time: most samples are of GC threads, which have no Java frame</li>
 *   <li>{@code nativethread}: from that library, starts a pthread never attached to the JVM
 *   ({@code late-native}) that spins in C for the given CPU time, and waits for it</li>
 * </ul>
 */
public final class NativeFramesMain {
    public static volatile long sink;
    public static volatile Throwable last;

    public static void main(String[] args) throws Exception {
        // For a perf map the test reads (/tmp/perf-<pid>.map, option perfmap).
        System.out.println("pid: " + ProcessHandle.current().pid());
        String mode = args[0];
        long millis = args.length > 1 ? Long.parseLong(args[1]) : 2000;
        Runnable work;
        switch (mode) {
            case "throw":
                work = () -> sink = throwLoop(millis);
                break;
            case "nanotime":
                work = () -> sink = nanoLoop(millis);
                break;
            case "deflate":
                work = () -> FrameKindsMain.deflateFor(millis);
                break;
            case "trig":
                work = () -> sink = trigLoop(millis);
                break;
            case "latejni":
                System.load(System.getProperty("late.lib"));
                work = () -> sink = lateLoop(millis);
                break;
            case "deletedjni":
                loadDeleted(java.nio.file.Path.of(System.getProperty("late.lib")));
                work = () -> sink = deletedLoop(millis);
                break;
            case "gcstorm":
                work = () -> sink = gcStorm(millis);
                break;
            case "nativethread":
                System.load(System.getProperty("late.lib"));
                work = () -> awaitNativeThread(millis);
                break;
            default:
                throw new IllegalArgumentException("mode: " + mode);
        }
        Thread worker = new Thread(work, "native-worker");
        worker.start();
        worker.join();
        System.out.println("workload done: " + mode);
    }

    static native long lateSpin(long n);

    static native long deletedSpin(long n);

    /** Spins in {@code deleted_spin.c} for {@code millis} of this thread's CPU time. */
    public static long deletedLoop(long millis) {
        CpuBudget budget = CpuBudget.of(millis);
        long s = 0;
        while (budget.left()) {
            s += deletedSpin(2_000_000);
        }
        return s;
    }

    /** Copies {@code lib} to a temporary file, loads the copy and deletes it. */
    static void loadDeleted(java.nio.file.Path lib) throws java.io.IOException {
        java.nio.file.Path copy = java.nio.file.Files.createTempFile(lib.getParent(), "libextracted", ".so");
        java.nio.file.Files.copy(lib, copy, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        System.load(copy.toString());
        java.nio.file.Files.delete(copy);
        System.out.println("loaded and deleted: " + copy);
        boolean mapFiles;
        try (java.util.stream.Stream<java.nio.file.Path> links = java.nio.file.Files.list(
                java.nio.file.Path.of("/proc/self/map_files"))) {
            java.nio.file.Path first = links.findFirst().orElseThrow();
            try (java.io.InputStream in = java.nio.file.Files.newInputStream(first)) {
                mapFiles = in.read() >= 0;
            } catch (java.io.IOException denied) {
                mapFiles = false;
            }
        }
        System.out.println("map_files readable: " + mapFiles);
    }

    static native int startNativeThread(long millis);

    static native int nativeThreadDone();

    static void awaitNativeThread(long millis) {
        if (startNativeThread(millis) != 0) {
            throw new IllegalStateException("pthread_create failed");
        }
        try {
            while (nativeThreadDone() == 0) {
                Thread.sleep(10);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Spins in {@code late_spin.c} for {@code millis} of this thread's CPU time. */
    public static long lateLoop(long millis) {
        CpuBudget budget = CpuBudget.of(millis);
        long s = 0;
        while (budget.left()) {
            s += lateSpin(2_000_000);
        }
        return s;
    }

    /** Churns the heap for {@code millis} of this thread's CPU time. */
    public static long gcStorm(long millis) {
        CpuBudget budget = CpuBudget.of(millis);
        byte[][] kept = new byte[24_000][];
        long s = 0;
        java.util.Random r = new java.util.Random(42);
        while (budget.left()) {
            for (int i = 0; i < 10_000; i++) {
                byte[] b = new byte[512 + r.nextInt(1024)];
                kept[r.nextInt(kept.length)] = b;
                s += b.length;
            }
        }
        return s;
    }

    /** Throws for {@code millis} of this thread's CPU time. */
    public static long throwLoop(long millis) {
        CpuBudget budget = CpuBudget.of(millis);
        long s = 0;
        while (budget.left()) {
            last = deep(40);
            s++;
        }
        return s;
    }

    static Throwable deep(int n) {
        return n == 0 ? new Throwable() : deep(n - 1);
    }

    /**
     * Reads the clock for {@code millis} of this thread's CPU time; the budget is checked
     * once per 10,000 reads, so its own calls stay out of nearly every sample.
     */
    public static long nanoLoop(long millis) {
        CpuBudget budget = CpuBudget.of(millis);
        long s = 0;
        while (budget.left()) {
            for (int i = 0; i < 10_000; i++) {
                s += System.nanoTime() & 1;
            }
        }
        return s;
    }

    /** Sums sines and cosines for {@code millis} of this thread's CPU time. */
    public static long trigLoop(long millis) {
        CpuBudget budget = CpuBudget.of(millis);
        double s = 0;
        long i = 0;
        while (budget.left()) {
            for (int k = 0; k < 10_000; k++, i++) {
                s += Math.sin(i * 0.001) + Math.cos(i * 0.002);
            }
        }
        return (long) s;
    }
}
