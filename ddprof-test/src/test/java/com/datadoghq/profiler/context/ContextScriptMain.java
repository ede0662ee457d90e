package com.datadoghq.profiler.context;

import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.TreeMap;

import com.datadoghq.profiler.ContextSetter;
import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.internal.Diagnostics;

/**
 * Runs one seeded sequence of every context write (new and released-tracer API, values of every
 * length up to past the record's limits, clears, a dictionary refilled by a second recording) on
 * the main thread, and prints after each call the thread's whole context as the native core and
 * an outside reader see it. {@link ContextWriterEquivalenceTest} runs it once per writer and
 * compares the transcripts. Args: a scratch directory, the number of calls.
 */
public final class ContextScriptMain {
    public static void main(String[] args) throws Exception {
        JavaProfiler p = JavaProfiler.getInstance();
        String file = Paths.get(args[0], "script.jfr").toString();
        int calls = Integer.parseInt(args[1]);
        p.execute("start,cpu=100ms,attributes=a;b;c;d;e;f;g;h;i;j,file=" + file);
        System.out.println("writer=" + Diagnostics.contextWriterKind());
        ContextSetter setter = new ContextSetter(p, java.util.Arrays.asList("a", "b", "c", "d", "e", "f", "g", "h", "i", "j"));
        Random r = new Random(42);
        List<String> values = new ArrayList<>();
        for (int n : new int[] {0, 1, 5, 16, 40, 100, 200, 254, 255, 256, 300}) {
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < n; i++) {
                sb.append((char) ('a' + (n + i) % 26));
            }
            values.add(sb.toString());
        }
        values.add("h\u00e9llo w\u00f6rld"); // multi-byte UTF-8
        values.add(null);
        for (int i = 0; i < calls; i++) {
            int op = r.nextInt(13);
            String v = values.get(r.nextInt(values.size()));
            int slot = r.nextInt(10);
            // Ids from a few values half the time, so that calls repeat what the record holds
            // (the writer's shortcuts: nothing changed, only the span changed).
            long span = r.nextInt(4) == 0 ? 0 : r.nextBoolean() ? 1 + r.nextInt(6) : r.nextLong();
            long root = r.nextInt(4) == 0 ? 0 : r.nextBoolean() ? 7 + r.nextInt(2) : r.nextLong();
            long traceHi = r.nextBoolean() ? 0 : r.nextLong();
            long traceLo = r.nextBoolean() ? 0x11 : r.nextLong();
            String what;
            switch (op) {
                case 0:
                case 1:
                    if (span == 0) {
                        span = 1;
                    }
                    p.setTraceContext(root, span, traceHi, traceLo, slot, v, r.nextInt(11) - 1,
                            values.get(r.nextInt(values.size())));
                    what = "setTraceContext";
                    break;
                case 2:
                    p.setTraceContext(root, span == 0 ? 3 : span, 0, traceLo, -1, null, -1, null);
                    what = "setTraceContext ids";
                    break;
                case 3:
                    p.clearTraceContext();
                    what = "clearTraceContext";
                    break;
                case 4:
                case 5:
                    what = "setContextValue " + p.setContextValue(slot, v);
                    break;
                case 6:
                    p.clearContextValue(slot);
                    what = "clearContextValue";
                    break;
                case 7:
                    p.setContext(span, root);
                    what = "setContext";
                    break;
                case 8:
                    p.clearContext();
                    what = "clearContext";
                    break;
                case 9:
                case 10:
                    what = "legacy value " + setter.setContextValue(r.nextInt(11), setter.encode(v));
                    break;
                case 11: {
                    int n = r.nextInt(4);
                    int[] slots = new int[n];
                    String[] vs = new String[n];
                    for (int k = 0; k < n; k++) {
                        slots[k] = r.nextInt(10);
                        vs[k] = values.get(r.nextInt(values.size()));
                    }
                    what = "setContextValues " + p.setContextValues(slots, vs, n);
                    break;
                }
                default:
                    if (r.nextInt(20) == 0) {
                        p.execute("stop");
                        p.execute("start,cpu=100ms,attributes=a;b;c;d;e;f;g;h;i;j,file=" + file);
                        what = "new recording";
                    } else {
                        setter.clearContextValue(slot);
                        what = "legacy clear";
                    }
            }
            System.out.println(i + " " + what + " -> " + state(p));
        }
        p.execute("stop");
        Files.deleteIfExists(Paths.get(file));
    }

    private static String state(JavaProfiler p) throws Exception {
        OtelRecordView rec = OtelRecordView.ofCurrentThread();
        int[] tags = new int[10];
        p.copyContextTags(tags);
        StringBuilder sb = new StringBuilder();
        if (rec == null) {
            sb.append("no record");
        } else {
            sb.append("valid=").append(rec.valid)
                    .append(" trace=").append(Long.toHexString(rec.traceHi)).append(':').append(Long.toHexString(rec.traceLo))
                    .append(" span=").append(Long.toHexString(rec.spanId))
                    .append(" attrs=").append(new TreeMap<>(rec.attrs));
        }
        sb.append(" root=").append(Long.toHexString((long) hook(p, "testGetRootSpanId")));
        sb.append(" tags=");
        for (int t : tags) {
            sb.append(t).append(',');
        }
        return sb.toString();
    }

    private static Object hook(JavaProfiler p, String name) throws Exception {
        Method m = JavaProfiler.class.getDeclaredMethod(name);
        m.setAccessible(true);
        return m.invoke(p);
    }
}
