package com.datadoghq.profiler.vtable;

import com.datadoghq.profiler.JavaProfiler;

/**
 * {@link ReloadMain}'s mode {@code late}: the profiler started through the API after the first round's
 * classes were loaded (apart so that the other modes run without the library's jar).
 */
final class ReloadLateStart {
    private ReloadLateStart() {
    }

    static void start(String file) {
        try {
            System.out.print(JavaProfiler.getInstance().execute("start,cpu=1ms,cstack=vm,file=" + file));
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static void stop() {
        try {
            JavaProfiler.getInstance().stop();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
