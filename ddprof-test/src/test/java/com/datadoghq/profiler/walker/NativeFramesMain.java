package com.datadoghq.profiler.walker;

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
 * </ul>
 */
public final class NativeFramesMain {
    public static volatile long sink;
    public static volatile Throwable last;

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        long millis = args.length > 1 ? Long.parseLong(args[1]) : 2000;
        long deadline = System.nanoTime() + millis * 1_000_000L;
        Runnable work;
        switch (mode) {
            case "throw":
                work = () -> sink = throwLoop(deadline);
                break;
            case "nanotime":
                work = () -> sink = nanoLoop(deadline);
                break;
            case "deflate":
                work = () -> FrameKindsMain.deflateFor(millis);
                break;
            default:
                throw new IllegalArgumentException("mode: " + mode);
        }
        Thread worker = new Thread(work, "native-worker");
        worker.start();
        worker.join();
        System.out.println("workload done: " + mode);
    }

    public static long throwLoop(long deadline) {
        long s = 0;
        while (System.nanoTime() < deadline) {
            last = deep(40);
            s++;
        }
        return s;
    }

    static Throwable deep(int n) {
        return n == 0 ? new Throwable() : deep(n - 1);
    }

    public static long nanoLoop(long deadline) {
        long s = 0;
        long now;
        do {
            now = System.nanoTime();
            s += now & 1;
        } while (now < deadline);
        return s;
    }
}
