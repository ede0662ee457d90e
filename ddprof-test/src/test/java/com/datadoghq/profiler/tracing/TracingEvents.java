package com.datadoghq.profiler.tracing;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import com.datadoghq.profiler.testing.JfrReader;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedObject;
import jdk.jfr.consumer.RecordedThread;

/** Reading the endpoint and queue-time events back with the JDK's parser. */
final class TracingEvents {
    static final String ENDPOINT = "datadog.Endpoint";
    static final String QUEUE_TIME = "datadog.QueueTime";

    private TracingEvents() {}

    static List<RecordedEvent> endpoints(Path... files) throws IOException {
        return of(ENDPOINT, files);
    }

    static List<RecordedEvent> queueTimes(Path... files) throws IOException {
        return of(QUEUE_TIME, files);
    }

    private static List<RecordedEvent> of(String type, Path... files) throws IOException {
        List<RecordedEvent> all = new ArrayList<>();
        for (Path f : files) {
            all.addAll(JfrReader.events(f, type));
        }
        return all;
    }

    /** A field of type {@code profiler.types.AttributeValue} (a one-field struct) as its string. */
    static String attribute(RecordedEvent e, String field) {
        Object v = e.getValue(field);
        if (v instanceof RecordedObject) {
            return ((RecordedObject) v).getString("value");
        }
        return (String) v;
    }

    static String javaName(RecordedThread t) {
        return t == null ? null : t.getJavaName();
    }
}
