package com.datadoghq.profiler.lazy;

import java.lang.instrument.ClassDefinition;
import java.lang.instrument.Instrumentation;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.IsolatingLoader;

/**
 * A child JVM's main and {@code -javaagent} for {@link KeptIdNamesTest}. Arg: the output
 * directory. Starts the profiler in the default jmethodID mode ({@code cpu=1ms}); a worker
 * ({@code lines-worker}) calls {@link LineShiftTarget#hot} in a loop. Dumps {@code dump-1.jfr} and
 * {@code dump-2.jfr} after the worker got {@value #CPU_MS} ms of CPU each (counters printed as
 * {@code first name=value} and {@code second name=value}); after as much again parks the worker
 * between two calls, dumps {@code dump-3.jfr} (the old version's last samples), redefines {@link LineShiftTarget} with
 * every line moved by {@value #SHIFT}, lets the worker run {@value #CPU_MS} ms more and dumps
 * {@code dump-4.jfr} (counters as {@code fourth name=value}): every sample of {@code hot} there ran
 * the new version.
 */
public final class KeptIdNamesMain {
    static final int SHIFT = 1000;
    static final long CPU_MS = 400;

    private static volatile Instrumentation inst;

    private KeptIdNamesMain() {}

    public static void premain(String args, Instrumentation i) {
        inst = i;
    }

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        if (inst == null) {
            throw new IllegalStateException("run with -javaagent (Premain-Class " + KeptIdNamesMain.class.getName() + ")");
        }
        byte[] shifted = shiftLines(IsolatingLoader.classBytes(LineShiftTarget.class.getName()), SHIFT);
        JavaProfiler profiler = JavaProfiler.getInstance();
        System.out.print(profiler.execute("start,cpu=1ms,file=" + dir.resolve("main.jfr")));

        AtomicBoolean paused = new AtomicBoolean();
        AtomicBoolean parked = new AtomicBoolean();
        AtomicBoolean done = new AtomicBoolean();
        AtomicLong workerId = new AtomicLong();
        Thread worker = new Thread(() -> {
            workerId.set(Thread.currentThread().getId());
            long seed = 1;
            while (!done.get()) {
                if (paused.get()) {
                    parked.set(true);
                    while (paused.get() && !done.get()) {
                        sleep(1);
                    }
                    parked.set(false);
                }
                seed += LineShiftTarget.hot(seed);
            }
        }, "lines-worker");
        worker.start();
        while (workerId.get() == 0) {
            sleep(1);
        }
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long id = workerId.get();

        burn(mx, id);
        profiler.dump(dir.resolve("dump-1.jfr"));
        print("first", profiler.getDebugCounters());
        burn(mx, id);
        profiler.dump(dir.resolve("dump-2.jfr"));
        print("second", profiler.getDebugCounters());
        burn(mx, id);

        paused.set(true);
        while (!parked.get()) {
            sleep(1);
        }
        profiler.dump(dir.resolve("dump-3.jfr"));
        inst.redefineClasses(new ClassDefinition(LineShiftTarget.class, shifted));
        paused.set(false);
        burn(mx, id);
        profiler.dump(dir.resolve("dump-4.jfr"));
        print("fourth", profiler.getDebugCounters());

        done.set(true);
        worker.join();
        profiler.stop();
        System.out.println("workload done");
    }

    /** Waits until the worker got {@value #CPU_MS} ms more CPU. */
    private static void burn(ThreadMXBean mx, long id) {
        long until = mx.getThreadCpuTime(id) + CPU_MS * 1_000_000;
        while (mx.getThreadCpuTime(id) < until) {
            sleep(5);
        }
    }

    /**
     * The class file with every {@code LineNumberTable} line moved by {@code shift}: walks the
     * constant pool ({@link ClassConstants}, for the attribute names), fields and methods to each method's {@code Code}
     * attribute and its attributes.
     */
    static byte[] shiftLines(byte[] bytes, int shift) {
        ByteBuffer b = ByteBuffer.wrap(bytes.clone());
        String[] utf8 = ClassConstants.read(b).utf8;
        b.position(b.position() + 6); // access, this, super
        int interfaces = b.getShort() & 0xffff;
        b.position(b.position() + 2 * interfaces);
        skipMembers(b); // fields
        int methods = b.getShort() & 0xffff;
        int shifted = 0;
        for (int m = 0; m < methods; m++) {
            b.position(b.position() + 6); // access, name, descriptor
            int attributes = b.getShort() & 0xffff;
            for (int a = 0; a < attributes; a++) {
                String name = utf8[b.getShort() & 0xffff];
                int len = b.getInt();
                int end = b.position() + len;
                if ("Code".equals(name)) {
                    b.position(b.position() + 4); // max stack, max locals
                    int codeLength = b.getInt();
                    b.position(b.position() + codeLength);
                    int handlers = b.getShort() & 0xffff;
                    b.position(b.position() + 8 * handlers);
                    int codeAttributes = b.getShort() & 0xffff;
                    for (int c = 0; c < codeAttributes; c++) {
                        String codeName = utf8[b.getShort() & 0xffff];
                        int codeLen = b.getInt();
                        int codeEnd = b.position() + codeLen;
                        if ("LineNumberTable".equals(codeName)) {
                            int entries = b.getShort() & 0xffff;
                            for (int e = 0; e < entries; e++) {
                                int at = b.position() + 2;
                                b.putShort(at, (short) ((b.getShort(at) & 0xffff) + shift));
                                b.position(b.position() + 4);
                                shifted++;
                            }
                        }
                        b.position(codeEnd);
                    }
                }
                b.position(end);
            }
        }
        if (shifted == 0) {
            throw new IllegalStateException("no line number to shift");
        }
        return b.array();
    }

    private static void skipMembers(ByteBuffer b) {
        int members = b.getShort() & 0xffff;
        for (int i = 0; i < members; i++) {
            b.position(b.position() + 6);
            int attributes = b.getShort() & 0xffff;
            for (int a = 0; a < attributes; a++) {
                b.position(b.position() + 2);
                int len = b.getInt();
                b.position(b.position() + len);
            }
        }
    }

    private static void print(String when, Map<String, Long> counters) {
        for (Map.Entry<String, Long> e : counters.entrySet()) {
            System.out.println(when + " " + e.getKey() + "=" + e.getValue());
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
