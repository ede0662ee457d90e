package com.datadoghq.profiler.attach;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

import com.datadoghq.profiler.testing.CpuBurner;

/**
 * A JVM to attach to: prints "ready", then waits for files in the directory {@code args[0]}:
 * for each {@code burn-N} it burns 800 ms of CPU on the thread "cpu-worker" and then creates
 * {@code burned-N}; {@code exit} ends it. No profiler until someone attaches one.
 */
public final class AttachTargetMain {
    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        System.out.println("ready");
        System.out.flush();
        int next = 1;
        while (!Files.exists(dir.resolve("exit"))) {
            if (Files.exists(dir.resolve("burn-" + next))) {
                Thread worker = new Thread(new CpuBurner(800), "cpu-worker");
                worker.start();
                worker.join();
                Files.createFile(dir.resolve("burned-" + next));
                next++;
            }
            Thread.sleep(20);
        }
    }
}
