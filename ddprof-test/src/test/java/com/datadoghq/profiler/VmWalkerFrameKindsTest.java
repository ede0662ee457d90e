package com.datadoghq.profiler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.Predicate;
import java.util.stream.Collectors;

import com.datadoghq.profiler.workload.CpuBurner;
import com.datadoghq.profiler.workload.FrameKindsMain;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedMethod;
import jdk.jfr.consumer.RecordedStackTrace;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The VMStructs walker ({@code cstack=vm}, started with {@code -agentpath} in a fresh JVM) gives
 * each kind of Java frame its JFR frame type: interpreted ({@code -Xint}), C2-compiled with
 * inlined callees (default options), C1-compiled ({@code -XX:TieredStopAtLevel=1}) and native
 * methods of the JDK ({@code java.util.zip.Deflater}).
 */
class VmWalkerFrameKindsTest {
    private static final String WORKER = "kinds-worker";
    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    private static final List<String> CHAIN = Arrays.asList("run", "chainA", "chainB", "chainC");

    @TempDir
    Path dir;

    @Test
    void interpreterOnlyGivesInterpretedFrames() throws Exception {
        Profile p = profile("xint", "chain", 2000, "-Xint");
        List<Frame> chain = p.frames(f -> f.of(CpuBurner.class) && CHAIN.contains(f.method));
        assertTrue(p.samplesWith(CpuBurner.class, "chainC") >= 50,
                "samples in chainC under -Xint: " + p.samplesWith(CpuBurner.class, "chainC") + p.show());
        List<Frame> other = chain.stream().filter(f -> !"Interpreted".equals(f.type)).collect(Collectors.toList());
        assertTrue(other.isEmpty(), "under -Xint every frame of the chain is Interpreted; " + other.size() + " of "
                + chain.size() + " are not, e.g. " + other.subList(0, Math.min(5, other.size())) + p.show());
        assertTrue(p.typesOf(f -> true).keySet().stream().noneMatch(t -> t.contains("compiled") || t.equals("Inlined")),
                "no compiled or inlined frame can exist under -Xint: " + p.typesOf(f -> true) + p.show());
    }

    @Test
    void defaultOptionsGiveJitCompiledAndInlinedFrames() throws Exception {
        Profile p = profile("default", "chain", 3000);
        Map<String, Integer> types = p.typesOf(f -> f.of(CpuBurner.class) && CHAIN.contains(f.method));
        assertTrue(types.getOrDefault("JIT compiled", 0) >= 20,
                "frames of the hot chain compiled by C2 (JIT compiled): " + types + p.show());
        assertTrue(types.getOrDefault("Inlined", 0) >= 20, "inlined frames of the hot chain: " + types + p.show());
        // chainC called by chainB, inlined into chainA: the C2 code of the steady state.
        long inlinedLeaf = p.frames(f -> f.of(CpuBurner.class) && "chainC".equals(f.method) && "Inlined".equals(f.type))
                .size();
        assertTrue(inlinedLeaf >= 20, "samples with chainC inlined: " + inlinedLeaf + "; chain types " + types + p.show());
        // An inlined frame is never the outermost frame of a sample.
        List<String> inlinedRoots = p.roots.stream().filter(f -> "Inlined".equals(f.type)).map(Frame::toString)
                .collect(Collectors.toList());
        assertTrue(inlinedRoots.isEmpty(), "stacks ending with an Inlined frame: " + inlinedRoots + p.show());
        assertOrderKept(p);
    }

    @Test
    void tieredStopAtLevel1GivesC1CompiledFrames() throws Exception {
        Profile p = profile("c1", "chain", 2000, "-XX:TieredStopAtLevel=1");
        Map<String, Integer> types = p.typesOf(f -> f.of(CpuBurner.class) && CHAIN.contains(f.method));
        assertTrue(types.getOrDefault("C1 compiled", 0) >= 20, "C1 compiled frames of the hot chain: " + types + p.show());
        assertEquals(0, (int) types.getOrDefault("JIT compiled", 0),
                "no C2 code exists with -XX:TieredStopAtLevel=1, yet frames are 'JIT compiled': " + types + p.show());
        assertOrderKept(p);
    }

    @Test
    void jdkNativeMethodGivesNativeFrames() throws Exception {
        Profile p = profile("deflate", "deflate", 2000);
        Map<String, Integer> types = p.typesOf(VmWalkerFrameKindsTest::isDeflateNative);
        assertTrue(types.getOrDefault("Native", 0) >= 20,
                "frames of java.util.zip.Deflater.deflateBytes* (the native method) typed Native: " + types + p.show());
        System.out.println("Deflater native methods seen: " + p.methodsOf(VmWalkerFrameKindsTest::isDeflateNative));
        // The native method's caller is Deflater.deflate, as a Java frame.
        long withCaller = p.stacks.stream().filter(s -> {
            for (int i = 0; i + 1 < s.size(); i++) {
                if (isDeflateNative(s.get(i)) && "java.util.zip.Deflater".equals(s.get(i + 1).owner)
                        && "deflate".equals(s.get(i + 1).method)
                        && JfrReader.JAVA_FRAME_TYPES.contains(s.get(i + 1).type)) {
                    return true;
                }
            }
            return false;
        }).count();
        assertTrue(withCaller > 0, "no stack with Deflater.deflate calling the native method" + p.show());
    }

    /**
     * A native method run by the interpreter's native entry (here: always, under {@code -Xint};
     * with default options, until its native wrapper is compiled) is still a native method:
     * JFR's own stack traces type every frame of a native method Native, and so does the
     * AsyncGetCallTrace walker of this profiler (bci -3).
     */
    @Test
    void nativeMethodCalledByTheInterpreterIsNative() throws Exception {
        Profile p = profile("deflate-xint", "deflate", 1500, "-Xint");
        Map<String, Integer> types = p.typesOf(VmWalkerFrameKindsTest::isDeflateNative);
        int all = types.values().stream().mapToInt(Integer::intValue).sum();
        assertTrue(all >= 20, "frames of java.util.zip.Deflater.deflateBytes* under -Xint: " + types + p.show());
        assertEquals(all, (int) types.getOrDefault("Native", 0),
                "every frame of the native method java.util.zip.Deflater.deflateBytes* should be typed Native; got "
                        + types + p.show());
    }

    private static boolean isDeflateNative(Frame f) {
        return "java.util.zip.Deflater".equals(f.owner) && f.method.startsWith("deflateBytes");
    }

    /** chainC, chainB, chainA stand leaf first wherever all three are sampled. */
    private static void assertOrderKept(Profile p) {
        int full = 0;
        for (List<Frame> s : p.stacks) {
            int c = index(s, "chainC");
            int b = index(s, "chainB");
            int a = index(s, "chainA");
            if (c >= 0 && b >= 0 && a >= 0) {
                full++;
                assertTrue(c < b && b < a, "chainC < chainB < chainA expected, leaf first: " + s);
            }
        }
        assertTrue(full * 2 >= p.stacks.size(), "samples holding chainA, chainB and chainC: " + full + " of "
                + p.stacks.size() + p.show());
    }

    private static int index(List<Frame> s, String method) {
        for (int i = 0; i < s.size(); i++) {
            if (s.get(i).of(CpuBurner.class) && method.equals(s.get(i).method)) {
                return i;
            }
        }
        return -1;
    }

    /** Runs FrameKindsMain {@code mode} under the agent with cstack=vm, and reads the worker's samples. */
    private Profile profile(String name, String mode, long millis, String... jvmOptions) throws Exception {
        Path file = dir.resolve(name + ".jfr");
        List<String> options = new ArrayList<>(Arrays.asList(jvmOptions));
        options.add("-agentpath:" + TestEnv.nativeLib() + "=start,cpu=1ms,cstack=vm,file=" + file);
        ChildJvm.Result r = new ChildJvm()
                .jvmArgs(options.toArray(new String[0]))
                .main(FrameKindsMain.class, mode, Long.toString(millis))
                .timeout(TIMEOUT)
                .run(dir);
        assertFalse(r.timedOut, "child JVM hung:\n" + r.describe());
        assertEquals(0, r.exitCode, "child JVM failed:\n" + r.describe());
        assertTrue(r.stdout.contains("workload done: " + mode), "workload did not finish:\n" + r.describe());
        assertTrue(Files.isRegularFile(file), "no recording at " + file + ":\n" + r.describe());

        List<RecordedEvent> events = JfrReader.readAll(file);
        Optional<RecordedEvent> walker = JfrReader.ofType(events, JfrReader.ACTIVE_SETTING).stream()
                .filter(e -> "stackwalker".equals(e.getString("name"))).findFirst();
        assertTrue(walker.isPresent(), "no stackwalker setting in the recording");
        assertEquals("vm", walker.get().getString("value"), "the walker that ran under cstack=vm");

        List<RecordedEvent> samples = JfrReader.onThread(JfrReader.ofType(events, JfrReader.EXECUTION_SAMPLE), WORKER);
        assertTrue(samples.size() >= 50, "samples on " + WORKER + ": " + samples.size() + "\n" + r.describe());
        Map<String, Long> counters = JfrReader.ofType(events, JfrReader.PROFILER_COUNTER).stream()
                .filter(e -> e.getString("name").startsWith("walkvm"))
                .collect(Collectors.toMap(e -> e.getString("name"), e -> e.getLong("count"), (a, b) -> b, TreeMap::new));
        Profile p = new Profile(name, samples, counters);
        System.out.println(name + ": " + samples.size() + " samples; worker frame types " + p.typesOf(f -> true)
                + "; counters " + counters);
        return p;
    }

    /** A frame as plain values (the JFR objects are slow to query over and over). */
    private static final class Frame {
        final String owner;
        final String method;
        final String type;
        final int line;
        final int bci;

        Frame(RecordedFrame f) {
            RecordedMethod m = f.getMethod();
            this.owner = m == null || m.getType() == null ? "?" : m.getType().getName();
            this.method = m == null ? "?" : m.getName();
            this.type = f.getType();
            this.line = f.getLineNumber();
            this.bci = f.getBytecodeIndex();
        }

        boolean of(Class<?> c) {
            return c.getName().equals(owner);
        }

        @Override
        public String toString() {
            return owner + "." + method + ":" + line + "@" + bci + "[" + type + "]";
        }
    }

    /** The worker's samples, one stack (leaf first) per sample. */
    private static final class Profile {
        final String name;
        final List<List<Frame>> stacks = new ArrayList<>();
        final List<Frame> roots = new ArrayList<>();
        final Map<String, Long> counters;

        Profile(String name, List<RecordedEvent> samples, Map<String, Long> counters) {
            this.name = name;
            this.counters = counters;
            Map<RecordedStackTrace, List<Frame>> seen = new IdentityHashMap<>();
            for (RecordedEvent e : samples) {
                RecordedStackTrace st = e.getStackTrace();
                List<Frame> s = st == null ? new ArrayList<>() : seen.computeIfAbsent(st,
                        k -> k.getFrames().stream().map(Frame::new).collect(Collectors.toList()));
                stacks.add(s);
                if (!s.isEmpty()) {
                    roots.add(s.get(s.size() - 1));
                }
            }
        }

        /** Frames matching {@code which}, over all samples (a frame counts once per sample it is in). */
        List<Frame> frames(Predicate<Frame> which) {
            List<Frame> out = new ArrayList<>();
            for (List<Frame> s : stacks) {
                for (Frame f : s) {
                    if (which.test(f)) {
                        out.add(f);
                    }
                }
            }
            return out;
        }

        Map<String, Integer> typesOf(Predicate<Frame> which) {
            Map<String, Integer> types = new TreeMap<>();
            frames(which).forEach(f -> types.merge(f.type, 1, Integer::sum));
            return types;
        }

        Map<String, Integer> methodsOf(Predicate<Frame> which) {
            Map<String, Integer> methods = new TreeMap<>();
            frames(which).forEach(f -> methods.merge(f.owner + "." + f.method + "[" + f.type + "]", 1, Integer::sum));
            return methods;
        }

        long samplesWith(Class<?> owner, String method) {
            return stacks.stream().filter(s -> s.stream().anyMatch(f -> f.of(owner) && method.equals(f.method))).count();
        }

        /** For assertion messages: the counters and the commonest stacks. */
        String show() {
            Map<String, Integer> common = new TreeMap<>();
            for (List<Frame> s : stacks) {
                common.merge(s.subList(0, Math.min(6, s.size())).toString(), 1, Integer::sum);
            }
            String top = common.entrySet().stream()
                    .sorted(Map.Entry.<String, Integer>comparingByValue().reversed())
                    .limit(8)
                    .map(e -> e.getValue() + " x " + e.getKey())
                    .collect(Collectors.joining("\n  ", "\n  ", ""));
            return "\n[" + name + "] " + stacks.size() + " samples; counters " + counters + "; commonest stacks (leaf first):" + top;
        }
    }
}
