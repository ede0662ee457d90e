package com.datadoghq.profiler.alloc;

import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntConsumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.management.ObjectName;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.internal.Diagnostics;

/**
 * A child JVM's main for {@link AllocationLazyNmtTest}, run with
 * {@code -XX:NativeMemoryTracking=summary}. Args: the output directory, classes, methods per
 * class, bytes each method allocates (in arrays of 64 KiB). Starts
 * {@code memory=256k:a,fjmethodid=lazy}, loads the classes ({@link AllocatingClassBytes}), runs
 * everything once (see {@code main}), then reads HotSpot's native memory by NMT category at three
 * points: {@code base}, {@code dumped} (after every method allocated its bytes and the recording
 * was dumped to {@code dump.jfr}) and {@code control} (after JVMTI made the jmethodIDs of every
 * method of those classes, as {@code GetStackTrace} does for the frames it samples). Lines:
 * {@code nmt <point> <category> malloc=<bytes> committed=<bytes>}, {@code counter <name>=<value>}
 * (at the dump), {@code ids <methods>}, {@code workload done}.
 */
public final class LazyNmtMain {
    /** Where the generated methods store their arrays (so the JIT cannot drop them). */
    public static volatile Object sink;

    private static final int ARRAY = 64 << 10;

    private LazyNmtMain() {}

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        int classes = Integer.parseInt(args[1]);
        int methods = Integer.parseInt(args[2]);
        long perMethod = Long.parseLong(args[3]);
        JavaProfiler profiler = JavaProfiler.getInstance();
        System.out.println("reply " + profiler.execute("start,memory=256k:a,fjmethodid=lazy,file="
                + dir.resolve("lazy.jfr")).trim());
        Loader loader = new Loader();
        List<Class<?>> loaded = new ArrayList<>();
        List<IntConsumer> workers = new ArrayList<>();
        String sinkOwner = LazyNmtMain.class.getName().replace('.', '/');
        for (int c = 0; c < classes; c++) {
            String name = "gen/Alloc" + c;
            Class<?> k = loader.define(name.replace('/', '.'), AllocatingClassBytes.write(name, methods, sinkOwner));
            loaded.add(k);
            workers.add((IntConsumer) k.getDeclaredConstructor().newInstance());
        }
        // Everything runs once before it runs the same way again: the generated methods get
        // compiled (1,000 empty calls each: a compilation registers dependencies in Class
        // memory), the workload as measured (a GC caches the oop maps of the interpreted frames
        // it meets there, once per class and bci), a dump, a reading of NMT. So what the
        // measured part adds is what sampling and dumping cost.
        int rounds = (int) Math.max(1, perMethod / ARRAY);
        runOn("nmt-warmup", workers, 1_000, 0);
        runOn("nmt-warmup", workers, rounds, ARRAY);
        profiler.dump(dir.resolve("warmup.jfr"));
        print("warmup", nmt());
        Map<String, long[]> base = nmt();
        runOn("nmt-allocator", workers, rounds, ARRAY);
        profiler.dump(dir.resolve("dump.jfr"));
        Map<String, long[]> dumped = nmt();
        print("base", base);
        print("dumped", dumped);
        Map<String, Long> counters = profiler.getDebugCounters();

        long ids = 0;
        for (Class<?> k : loaded) {
            ids += Diagnostics.makeMethodIds(k);
        }
        print("control", nmt());
        profiler.stop();
        counters.forEach((k, v) -> System.out.println("counter " + k + "=" + v));
        System.out.println("ids " + ids);
        System.out.println("workload done");
    }

    /** Calls every class's {@code accept(size)} {@code rounds} times on a new thread. */
    private static void runOn(String thread, List<IntConsumer> workers, int rounds, int size)
            throws InterruptedException {
        Thread t = new Thread(new Rounds(workers, rounds, size), thread);
        t.start();
        t.join();
    }

    /** A class, not a lambda: a lambda's first run defines a hidden class (Class memory). */
    private static final class Rounds implements Runnable {
        private final List<IntConsumer> workers;
        private final int rounds;
        private final int size;

        Rounds(List<IntConsumer> workers, int rounds, int size) {
            this.workers = workers;
            this.rounds = rounds;
            this.size = size;
        }

        @Override
        public void run() {
            for (int r = 0; r < rounds; r++) {
                for (IntConsumer w : workers) {
                    w.accept(size);
                }
            }
        }
    }

    private static final class Loader extends ClassLoader {
        Loader() {
            super(LazyNmtMain.class.getClassLoader());
        }

        Class<?> define(String name, byte[] bytes) {
            return defineClass(name, bytes, 0, bytes.length);
        }
    }

    private static final Pattern CATEGORY = Pattern.compile(
            "(?m)^-\\s+([A-Za-z][A-Za-z ]*?) \\(reserved=(\\d+)\\w*, committed=(\\d+)\\w*\\)");
    private static final Pattern MALLOC = Pattern.compile("\\(malloc=(\\d+)");

    /** category -> {malloc, committed}, in bytes, from the DiagnosticCommand MBean. */
    static Map<String, long[]> nmt() throws Exception {
        String text = (String) ManagementFactory.getPlatformMBeanServer().invoke(
                new ObjectName("com.sun.management:type=DiagnosticCommand"), "vmNativeMemory",
                new Object[] {new String[] {"summary", "scale=b"}}, new String[] {String[].class.getName()});
        Map<String, long[]> m = new LinkedHashMap<>();
        Matcher total = Pattern.compile("Total: reserved=(\\d+)\\w*, committed=(\\d+)").matcher(text);
        if (total.find()) {
            m.put("Total", new long[] {-1, Long.parseLong(total.group(2))});
        }
        Matcher cat = CATEGORY.matcher(text);
        List<int[]> spans = new ArrayList<>();
        List<String> names = new ArrayList<>();
        List<Long> committed = new ArrayList<>();
        while (cat.find()) {
            names.add(cat.group(1).trim());
            committed.add(Long.parseLong(cat.group(3)));
            spans.add(new int[] {cat.start(), cat.end()});
        }
        for (int i = 0; i < names.size(); i++) {
            // A category's lines run to the next category's header.
            int end = i + 1 < spans.size() ? spans.get(i + 1)[0] : text.length();
            Matcher malloc = MALLOC.matcher(text.substring(spans.get(i)[1], end));
            long mallocBytes = malloc.find() ? Long.parseLong(malloc.group(1)) : 0;
            m.put(names.get(i), new long[] {mallocBytes, committed.get(i)});
        }
        if (m.isEmpty()) {
            throw new IllegalStateException("no NMT summary in: " + text);
        }
        return m;
    }

    private static void print(String point, Map<String, long[]> nmt) {
        nmt.forEach((k, v) -> System.out.println("nmt " + point + " " + k.replace(' ', '_') + " malloc=" + v[0]
                + " committed=" + v[1]));
    }
}
