package com.datadoghq.profiler.tracing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.ProfilerExtension;
import com.datadoghq.profiler.testing.TestEnv;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** {@code recordTraceRoot}: {@code datadog.Endpoint} rows, bounded by {@code sizeLimit}, one chunk each. */
@ExtendWith(ProfilerExtension.class)
class EndpointTest {
    @TempDir
    Path dir;

    private final JavaProfiler profiler;

    EndpointTest(JavaProfiler profiler) {
        this.profiler = profiler;
    }

    private static String operationOf(int i) {
        return i % 2 == 0 ? "op" + i : null;
    }

    @Test
    void endpointsAreBoundedBySizeLimitAndReadBackWithTheirFields() throws Exception {
        Path file = dir.resolve("endpoints.jfr");
        TestEnv.start(profiler, "start,cpu=10ms,file=" + file);
        int limit = 100;
        Instant before = Instant.now();
        // Up to the limit, then every known endpoint again: all accepted.
        for (int round = 0; round < 2; round++) {
            for (int i = 0; i < limit; i++) {
                assertTrue(profiler.recordTraceRoot(i, "/e" + i, operationOf(i), limit), "endpoint " + i + " round " + round);
            }
        }
        // A new endpoint over the limit is refused and writes nothing; a larger limit admits it.
        assertFalse(profiler.recordTraceRoot(1_000, "/over", "op", limit));
        assertFalse(profiler.recordTraceRoot(1_001, null, "op", limit), "null endpoint");
        Map<String, Long> counters = profiler.getDebugCounters();
        assertEquals(limit, counters.get("dictionary_endpoints_keys").longValue());
        long bytes = 0;
        for (int i = 0; i < limit; i++) {
            bytes += ("/e" + i).length() + 1;
        }
        assertEquals(bytes, counters.get("dictionary_endpoints_keys_bytes").longValue());
        Instant after = Instant.now();
        profiler.stop();

        List<RecordedEvent> events = TracingEvents.endpoints(file);
        assertEquals(2 * limit, events.size(), "one event per accepted call");
        int[] seen = new int[limit];
        String me = Thread.currentThread().getName();
        for (RecordedEvent e : events) {
            long root = e.getLong("localRootSpanId");
            assertTrue(root >= 0 && root < limit, "unexpected root span " + root + ": " + e);
            int i = (int) root;
            seen[i]++;
            assertEquals("/e" + i, e.getString("endpoint"), e.toString());
            assertEquals(operationOf(i), TracingEvents.attribute(e, "operation"), e.toString());
            assertEquals(me, TracingEvents.javaName(e.getThread("eventThread")), e.toString());
            assertNull(e.getStackTrace(), "Endpoint has no stack trace");
            assertEquals(0, e.getDuration().toNanos());
            assertFalse(e.getStartTime().isBefore(before.minusMillis(50)), e.getStartTime() + " < " + before);
            assertFalse(e.getStartTime().isAfter(after.plusMillis(50)), e.getStartTime() + " > " + after);
        }
        for (int i = 0; i < limit; i++) {
            assertEquals(2, seen[i], "events of endpoint " + i);
        }
    }

    /**
     * Upstream's {@code dictionary_endpoints_bytes} and {@code _pages} (its EndpointTest bounds them
     * for 1,000 endpoints: at most 4 MiB and 512 pages): the memory the endpoint dictionary holds,
     * as the counting allocator measures it, and those bytes in whole 4 KiB pages; nothing once a
     * new recording has emptied the dictionary.
     */
    @Test
    void theDictionaryStorageCountersMeasureWhatItHolds() throws Exception {
        TestEnv.start(profiler, "start,cpu=10ms,file=" + dir.resolve("storage.jfr"));
        long names = 0;
        long previous = 0;
        try {
            for (int i = 0; i < 1000; i++) {
                String endpoint = "/storage/endpoint/" + i;
                names += endpoint.length() + 1;
                assertTrue(profiler.recordTraceRoot(i, endpoint, "op", 1000), endpoint);
                if (i % 250 == 249) {
                    long bytes = storageCounters(names, i + 1);
                    assertTrue(bytes > previous, "bytes did not grow with the endpoints: " + previous + " -> " + bytes);
                    previous = bytes;
                }
            }
        } finally {
            profiler.stop();
        }
        TestEnv.start(profiler, "start,cpu=10ms,file=" + dir.resolve("empty.jfr"));
        profiler.stop();
        Map<String, Long> counters = profiler.getDebugCounters();
        assertEquals(0L, counters.get("dictionary_endpoints_bytes").longValue(), "a new recording's dictionary");
        assertEquals(0L, counters.get("dictionary_endpoints_pages").longValue(), "a new recording's dictionary");
    }

    /** Checks the two counters against the names' own bytes; returns the bytes. */
    private long storageCounters(long names, int count) {
        Map<String, Long> counters = profiler.getDebugCounters();
        long bytes = counters.get("dictionary_endpoints_bytes");
        long pages = counters.get("dictionary_endpoints_pages");
        String seen = count + " endpoints: bytes " + bytes + ", pages " + pages + ", names' bytes " + names;
        // Every name is a block of its own: its bytes, plus its reference counts (16 bytes) at least.
        assertTrue(bytes >= names + 16L * count, seen);
        assertTrue(bytes <= 4L << 20, seen);
        assertEquals((bytes + 4095) / 4096, pages, seen);
        assertTrue(pages <= 512, seen);
        return bytes;
    }

    @Test
    void theDictionaryIsPerRecordingAndIdleCallsWriteNothing() throws Exception {
        Path first = dir.resolve("first.jfr");
        TestEnv.start(profiler, "start,cpu=10ms,file=" + first);
        assertTrue(profiler.recordTraceRoot(1, "/a", null, 1));
        assertFalse(profiler.recordTraceRoot(2, "/b", null, 1), "limit 1 holds /a only");
        profiler.stop();
        // Idle: the answer is the dictionary's, nothing is recorded.
        assertTrue(profiler.recordTraceRoot(3, "/a", null, 1));
        assertFalse(profiler.recordTraceRoot(4, "/c", null, 0));
        // A new recording starts with an empty dictionary.
        Path second = dir.resolve("second.jfr");
        TestEnv.start(profiler, "start,cpu=10ms,file=" + second);
        assertTrue(profiler.recordTraceRoot(5, "/b", null, 1), "start empties the endpoint dictionary");
        profiler.stop();

        List<RecordedEvent> a = TracingEvents.endpoints(first);
        assertEquals(1, a.size(), a.toString());
        assertEquals(1, a.get(0).getLong("localRootSpanId"));
        List<RecordedEvent> b = TracingEvents.endpoints(second);
        assertEquals(1, b.size(), "idle calls leaked into the next recording: " + b);
        assertEquals(5, b.get(0).getLong("localRootSpanId"));
        assertEquals("/b", b.get(0).getString("endpoint"));
    }

    /**
     * As upstream (its DictionaryRotationTest, and its dictionary's rotation, which starts each new
     * buffer as a copy of the old): a dump writes the endpoints recorded before it, restarts the count
     * of added endpoints ({@code dictionary_endpoints_keys[_bytes]}), and keeps the dictionary, so
     * {@code sizeLimit} still counts the endpoints since {@code start}.
     */
    @Test
    void aDumpWritesItsEndpointsRestartsTheCountAndKeepsTheDictionary() throws Exception {
        Path file = dir.resolve("main.jfr");
        Path dump = dir.resolve("dump.jfr");
        TestEnv.start(profiler, "start,cpu=10ms,file=" + file);
        int limit = 3;
        for (int i = 0; i < limit; i++) {
            assertTrue(profiler.recordTraceRoot(i, "/pre" + i, null, limit), "endpoint " + i);
        }
        assertFalse(profiler.recordTraceRoot(10, "/over", null, limit));
        assertEquals(limit, profiler.getDebugCounters().get("dictionary_endpoints_keys").longValue());
        profiler.dump(dump);
        Map<String, Long> afterDump = profiler.getDebugCounters();
        assertEquals(0, afterDump.get("dictionary_endpoints_keys").longValue(), afterDump.toString());
        assertEquals(0, afterDump.get("dictionary_endpoints_keys_bytes").longValue(), afterDump.toString());
        // Known endpoints are still accepted; a new one still counts against the recording's limit.
        assertTrue(profiler.recordTraceRoot(20, "/pre0", null, limit));
        assertFalse(profiler.recordTraceRoot(21, "/post0", null, limit), "the dictionary outlives the dump");
        assertTrue(profiler.recordTraceRoot(22, "/post0", null, limit + 2));
        assertTrue(profiler.recordTraceRoot(23, "/post1", null, limit + 2));
        Map<String, Long> live = profiler.getDebugCounters();
        assertEquals(2, live.get("dictionary_endpoints_keys").longValue(), live.toString());
        assertEquals(2 * ("/post0".length() + 1), live.get("dictionary_endpoints_keys_bytes").longValue());
        profiler.stop();

        Map<Long, String> before = new TreeMap<>();
        for (RecordedEvent e : TracingEvents.endpoints(dump)) {
            before.put(e.getLong("localRootSpanId"), e.getString("endpoint"));
        }
        Map<Long, String> expected = new TreeMap<>();
        for (int i = 0; i < limit; i++) {
            expected.put((long) i, "/pre" + i);
        }
        assertEquals(expected, before, "the dump holds the endpoints recorded before it, once each");
        Map<Long, String> after = new TreeMap<>();
        for (RecordedEvent e : TracingEvents.endpoints(file)) {
            after.put(e.getLong("localRootSpanId"), e.getString("endpoint"));
        }
        Map<Long, String> expectedAfter = new TreeMap<>();
        expectedAfter.put(20L, "/pre0");
        expectedAfter.put(22L, "/post0");
        expectedAfter.put(23L, "/post1");
        assertEquals(expectedAfter, after, "the main file holds those recorded after the dump");
    }

    @Test
    void everyEndpointLandsInExactlyOneChunk() throws Exception {
        Path file = dir.resolve("main.jfr");
        TestEnv.start(profiler, "start,cpu=10ms,file=" + file);
        AtomicBoolean done = new AtomicBoolean();
        long[] recorded = new long[1];
        Thread writer = new Thread(() -> {
            long root = 1;
            while (!done.get()) {
                if (profiler.recordTraceRoot(root, "/loop" + (root % 7), "loop", 16)) {
                    root++;
                }
                LockSupport.parkNanos(20_000);
            }
            recorded[0] = root - 1;
        }, "endpoint-writer");
        writer.start();
        List<Path> chunks = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            Thread.sleep(60);
            Path dump = dir.resolve("dump" + i + ".jfr");
            profiler.dump(dump);
            chunks.add(dump);
        }
        done.set(true);
        writer.join();
        profiler.stop();
        chunks.add(file);

        Map<Long, Path> where = new HashMap<>();
        int nonEmpty = 0;
        for (Path chunk : chunks) {
            List<RecordedEvent> events = TracingEvents.endpoints(chunk);
            if (!events.isEmpty()) {
                nonEmpty++;
            }
            for (RecordedEvent e : events) {
                long root = e.getLong("localRootSpanId");
                Path earlier = where.put(root, chunk);
                assertNull(earlier, "root span " + root + " in both " + earlier + " and " + chunk);
                assertEquals("/loop" + (root % 7), e.getString("endpoint"));
                assertEquals("endpoint-writer", TracingEvents.javaName(e.getThread("eventThread")));
            }
        }
        assertTrue(recorded[0] > 0, "the writer recorded nothing");
        for (long root = 1; root <= recorded[0]; root++) {
            assertTrue(where.containsKey(root), "root span " + root + " of " + recorded[0] + " is in no chunk");
        }
        assertEquals(recorded[0], where.size(), "events of calls never made");
        assertTrue(nonEmpty >= 3, "endpoints spread over only " + nonEmpty + " chunks");
    }
}
