package com.datadoghq.profiler.lazy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Map;
import java.util.function.IntUnaryOperator;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.IsolatingLoader;

/**
 * A child JVM's main for {@link LazyChurnTest}. Args: output directory, number of classes, profiler
 * options. Runs that many uniquely named copies of {@link Churn00000000} one after the other, each in
 * its own loader for ~5 ms of CPU and then dropped ({@code System.gc()} every 100 classes, so that
 * they unload and the next ones reuse their metaspace), while another thread dumps every 300 ms
 * ({@code dump-N.jfr}). The run window of class {@code i} (defined, constructed, run) is the span the
 * tracing context holds {@code spanId = i + 1}: a sample's context says which class was running when
 * it was taken.
 * Prints the counters as {@code counter name=value} after the last dump.
 */
public final class LazyChurnMain {
    static final String TEMPLATE = Churn00000000.class.getName();
    static final int PER_CLASS_MS = 5;

    private LazyChurnMain() {
    }

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        int classes = Integer.parseInt(args[1]);
        JavaProfiler profiler = JavaProfiler.getInstance();
        profiler.execute("start," + args[2] + ",file=" + dir.resolve("main.jfr"));
        byte[] template = IsolatingLoader.classBytes(TEMPLATE);
        Thread dumper = new Thread(() -> {
            int n = 0;
            while (!Thread.currentThread().isInterrupted()) {
                try {
                    Thread.sleep(300);
                } catch (InterruptedException e) {
                    return;
                }
                profiler.dump(dir.resolve("dump-" + (++n) + ".jfr"));
            }
        }, "churn-dumper");
        dumper.start();
        for (int i = 0; i < classes; i++) {
            profiler.setContext(i + 1, i + 1);
            IntUnaryOperator op = copy(template, i);
            op.applyAsInt(PER_CLASS_MS);
            profiler.setContext(0, 0);
            if (i % 100 == 99) {
                System.gc();
            }
        }
        dumper.interrupt();
        dumper.join();
        profiler.dump(dir.resolve("dump-last.jfr"));
        for (Map.Entry<String, Long> e : profiler.getDebugCounters().entrySet()) {
            System.out.println("counter " + e.getKey() + "=" + e.getValue());
        }
        profiler.stop();
        System.out.println("workload done");
    }

    /** The name of class {@code i}: the template's, of the same length. */
    static String name(int i) {
        return TEMPLATE.substring(0, TEMPLATE.length() - 8) + String.format("%08d", i);
    }

    private static IntUnaryOperator copy(byte[] template, int i) throws ReflectiveOperationException {
        String name = name(i);
        byte[] b = rename(template, TEMPLATE.replace('.', '/'), name.replace('.', '/'));
        Class<?> c = new ClassLoader(LazyChurnMain.class.getClassLoader()) {
            Class<?> define() {
                return defineClass(name, b, 0, b.length);
            }
        }.define();
        return (IntUnaryOperator) c.getDeclaredConstructor().newInstance();
    }

    /** {@code bytes} with every occurrence of {@code from} replaced by {@code to}, of the same length. */
    private static byte[] rename(byte[] bytes, String from, String to) {
        byte[] f = from.getBytes(StandardCharsets.UTF_8);
        byte[] t = to.getBytes(StandardCharsets.UTF_8);
        byte[] out = bytes.clone();
        for (int i = 0; i + f.length <= out.length; i++) {
            int j = 0;
            while (j < f.length && out[i + j] == f[j]) {
                j++;
            }
            if (j == f.length) {
                System.arraycopy(t, 0, out, i, t.length);
                i += f.length - 1;
            }
        }
        return out;
    }
}
