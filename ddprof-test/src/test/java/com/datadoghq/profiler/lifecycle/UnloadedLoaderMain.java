package com.datadoghq.profiler.lifecycle;

import java.io.BufferedReader;
import java.lang.ref.WeakReference;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Set;
import java.util.TreeSet;

import com.datadoghq.profiler.testing.CpuBurner;

/**
 * A child JVM's main: the Java API in a throwaway class loader (the ddprof jar, bootstrap
 * parent) loads the bundled library and starts profiling; the loader is dropped and collected
 * (which makes the JDK dlclose the library) while the profiler keeps running; threads start,
 * sample and end for a while; then a second loader reaches the same library, reads the status
 * and stops the recording. Prints {@code unloaded=}, {@code status:}, {@code inodes=} (distinct
 * inodes of the mapped library files) and {@code done}. Args: the ddprof jar, the recording.
 */
public final class UnloadedLoaderMain {
    public static void main(String[] args) throws Exception {
        URL jar = Paths.get(args[0]).toUri().toURL();
        String file = args[1];

        WeakReference<ClassLoader> first = startInThrowawayLoader(jar, file);
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (first.get() != null && System.nanoTime() < deadline) {
            System.gc();
            Thread.sleep(20);
        }
        System.out.println("unloaded=" + (first.get() == null));

        // The loader's Cleaner (dlclose) runs soon after; keep sampling, starting threads
        // (ThreadStart/ThreadEnd callbacks) and loading classes for a while.
        long until = System.nanoTime() + 2_000_000_000L;
        int threads = 0;
        while (System.nanoTime() < until) {
            System.gc();
            CpuBurner b = new CpuBurner(50);
            Thread t = new Thread(b, "after-unload-" + threads++);
            t.start();
            t.join();
        }
        System.out.println("threads after unload: " + threads);

        try (URLClassLoader second = new URLClassLoader(new URL[] {jar}, null)) {
            Class<?> api = second.loadClass("com.datadoghq.profiler.JavaProfiler");
            Object profiler = api.getMethod("getInstance").invoke(null);
            System.out.println("status: " + api.getMethod("getStatus").invoke(profiler).toString().replace('\n', '|'));
            api.getMethod("stop").invoke(profiler);
            Class<?> loader = second.loadClass("com.datadoghq.profiler.LibraryLoader");
            System.out.println("second loaded=" + loader.getMethod("loadedLibraryPath").invoke(null));
        }
        System.out.println("inodes=" + mappedInodes().size() + " " + mappedInodes());
        System.out.println("done");
    }

    /** Loads and starts the profiler in a new loader; returns only a weak reference to it. */
    private static WeakReference<ClassLoader> startInThrowawayLoader(URL jar, String file) throws Exception {
        URLClassLoader loader = new URLClassLoader(new URL[] {jar}, null);
        Class<?> api = loader.loadClass("com.datadoghq.profiler.JavaProfiler");
        Object profiler = api.getMethod("getInstance").invoke(null);
        Method execute = api.getMethod("execute", String.class);
        System.out.println(execute.invoke(profiler, "start,cpu=1ms,file=" + file));
        Class<?> loaderApi = loader.loadClass("com.datadoghq.profiler.LibraryLoader");
        System.out.println("first loaded=" + loaderApi.getMethod("loadedLibraryPath").invoke(null));
        Thread t = new Thread(new CpuBurner(200), "before-unload");
        t.start();
        t.join();
        loader.close();
        return new WeakReference<>(loader);
    }

    /** Inodes of the libjavaProfiler files mapped into this process. */
    private static Set<String> mappedInodes() throws Exception {
        Set<String> inodes = new TreeSet<>();
        try (BufferedReader r = Files.newBufferedReader(Paths.get("/proc/self/maps"), StandardCharsets.ISO_8859_1)) {
            for (String line; (line = r.readLine()) != null; ) {
                if (line.contains("libjavaProfiler")) {
                    System.out.println("mapped: " + line);
                    inodes.add(line.trim().split("\\s+")[4]);
                }
            }
        }
        return inodes;
    }
}
