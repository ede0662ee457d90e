package com.datadoghq.profiler.lazy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongUnaryOperator;

import com.datadoghq.profiler.internal.Diagnostics;
import com.datadoghq.profiler.testing.IsolatingLoader;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedClass;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The trace ID the lazy mode reads through the calibrated {@code Klass} offset (its frame tags)
 * is JFR's own class ID: for classes defined while a JFR recording runs, it equals the id of
 * {@code definedClass} in their {@code jdk.ClassDefine} events.
 */
class LazyTraceIdJfrValidationTest {
    @TempDir
    Path dir;

    @Test
    void calibratedTraceIdEqualsJfrClassId() throws Exception {
        TestEnv.profiler(); // loads the native library
        List<Class<?>> defined = new ArrayList<>();
        Path file = dir.resolve("jfr.jfr");
        try (Recording r = new Recording()) {
            r.enable("jdk.ClassDefine");
            r.start();
            for (int i = 0; i < 20; i++) {
                Class<?> type = i % 2 == 0 ? LazySpin.class : LazyReload.class;
                defined.add(IsolatingLoader.newInstance(type, LongUnaryOperator.class).getClass());
            }
            r.stop();
            r.dump(file);
        }
        Map<Class<?>, Long> expected = new HashMap<>();
        for (Class<?> c : defined) {
            long id = Diagnostics.getClassTraceId(c);
            assertTrue(id > 0, "no trace ID read for " + c + " (calibration failed?)");
            expected.put(c, id);
        }
        // Each copy has its own ID, though they share names.
        assertEquals(defined.size(), expected.values().stream().distinct().count(), "trace IDs " + expected.values());

        Map<Long, String> jfrIds = new HashMap<>();
        for (RecordedEvent e : JfrReader.events(file, "jdk.ClassDefine")) {
            RecordedClass c = e.getValue("definedClass");
            jfrIds.put(c.getId(), c.getName());
        }
        for (Map.Entry<Class<?>, Long> e : expected.entrySet()) {
            String jfrName = jfrIds.get(e.getValue());
            assertEquals(e.getKey().getName(), jfrName, "JFR has no class " + e.getKey().getName() + " with id "
                    + e.getValue() + "; its ClassDefine ids: " + jfrIds);
        }
        // Array and primitive classes: an array class has an ID too, a primitive one none.
        assertTrue(Diagnostics.getClassTraceId(String[].class) > 0, "String[] trace ID");
        assertEquals(-1, Diagnostics.getClassTraceId(int.class), "int.class has no Klass");
    }
}
