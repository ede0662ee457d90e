package com.datadoghq.profiler.lifecycle;

import java.io.BufferedReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.LibraryLoader;
import com.datadoghq.profiler.testing.CpuBurner;

/**
 * A child JVM's main (class path: the ddprof jar, no library named) that loads the bundled
 * library, profiles, writes one dump, reports what it loaded and prints {@code READY}; then, by
 * its first argument, {@code wait}s to be killed or {@code halt}s. Args: mode, recording file.
 */
public final class ExtractedLibraryMain {
    public static void main(String[] args) throws Exception {
        String mode = args[0];
        String file = args[1];
        JavaProfiler profiler = JavaProfiler.getInstance();
        System.out.println("loaded=" + LibraryLoader.loadedLibraryPath());
        profiler.execute("start,cpu=10ms,file=" + file);
        Thread worker = new Thread(new CpuBurner(), "cpu-worker");
        worker.setDaemon(true);
        worker.start();
        Thread.sleep(300);
        profiler.dump(Paths.get(file + ".dump.jfr"));
        printMappings();
        System.out.println("READY");
        System.out.flush();
        if (mode.equals("halt")) {
            Runtime.getRuntime().halt(0);
        }
        Thread.sleep(Long.MAX_VALUE);
    }

    /** The /proc/self/maps lines of the library, each as "mapped: <line>". */
    static void printMappings() throws Exception {
        try (BufferedReader r = Files.newBufferedReader(Paths.get("/proc/self/maps"), StandardCharsets.ISO_8859_1)) {
            for (String line; (line = r.readLine()) != null; ) {
                if (line.contains("libjavaProfiler")) {
                    System.out.println("mapped: " + line);
                }
            }
        }
    }
}
