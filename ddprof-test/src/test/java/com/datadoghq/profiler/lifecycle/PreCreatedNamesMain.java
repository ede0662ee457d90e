package com.datadoghq.profiler.lifecycle;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.CpuBurner;

/**
 * A child JVM's main for {@link OutputFileTest}: as another local user could (pids are public), it
 * first creates in the output directory every temporary name the earlier, predictable scheme
 * ({@code .<name>.<pid>.<n>.tmp}, n counting from 0 in a fresh process) would use for this process's
 * first 400 writes, then starts, dumps and stops three times. Args: the output directory.
 */
public final class PreCreatedNamesMain {
    static final int NAMES = 400;

    private PreCreatedNamesMain() {
    }

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        long pid = ProcessHandle.current().pid();
        for (int n = 0; n < NAMES; n++) {
            Files.write(dir.resolve(".pre.jfr." + pid + "." + n + ".tmp"), new byte[] {7});
        }
        JavaProfiler profiler = JavaProfiler.getInstance();
        for (int round = 0; round < 3; round++) {
            profiler.execute("start,cpu=1ms,file=" + dir.resolve("pre.jfr"));
            CpuBurner.burn(50);
            profiler.dump(dir.resolve("dump.jfr"));
            profiler.stop();
        }
        System.out.println("workload done");
    }
}
