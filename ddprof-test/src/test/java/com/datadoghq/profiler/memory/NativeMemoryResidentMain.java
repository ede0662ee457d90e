package com.datadoghq.profiler.memory;

import java.nio.file.Paths;
import java.util.Map;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.CpuBurner;

/**
 * A fresh JVM (so that every page of the profiler's mappings was touched by this session
 * only) that prints, right after {@code start} and after a short workload and a dump, the
 * gauges that bound how much of the trace table can have been written. Args: the recording
 * file, the dump file, the workload milliseconds. Output lines:
 * {@code <phase> resident=N traces=N bytes=N}.
 */
public final class NativeMemoryResidentMain {
    public static void main(String[] args) throws Exception {
        JavaProfiler profiler = JavaProfiler.getInstance();
        System.out.println(profiler.execute("start,cpu=1ms,file=" + args[0]));
        print("after-start", profiler.getDebugCounters());
        Thread worker = new Thread(new CpuBurner(Long.parseLong(args[2])), "resident-worker");
        worker.start();
        worker.join();
        profiler.dump(Paths.get(args[1]));
        print("after-dump", profiler.getDebugCounters());
        profiler.stop();
    }

    private static void print(String phase, Map<String, Long> c) {
        System.out.println(phase + " resident=" + c.get("native_mem_resident_bytes.calltrace")
                + " traces=" + c.get("calltrace_storage_inserts")
                + " bytes=" + c.get("calltrace_storage_inserted_bytes"));
    }
}
