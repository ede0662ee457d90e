package com.datadoghq.profiler.walker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import com.datadoghq.profiler.testing.CpuBurner;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.WalkerProfile;
import com.datadoghq.profiler.testing.WalkerProfile.Frame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The VMStructs walker ({@code cstack=vm}, started with {@code -agentpath} in a fresh JVM) gives
 * each kind of Java frame its JFR frame type: interpreted ({@code -Xint}), C2-compiled with
 * inlined callees (default options, and only those with {@code -XX:-TieredCompilation}), C1-compiled
 * ({@code -XX:TieredStopAtLevel=1}) and native
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
        WalkerProfile p = profile("xint", "chain", 2000, "-Xint");
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
        WalkerProfile p = profile("default", "chain", 3000);
        Map<String, Integer> types = p.typesOf(f -> f.of(CpuBurner.class) && CHAIN.contains(f.method));
        assertTrue(types.getOrDefault("JIT compiled", 0) >= 20,
                "frames of the hot chain compiled by C2 (JIT compiled): " + types + p.show());
        assertTrue(types.getOrDefault("Inlined", 0) >= 20, "inlined frames of the hot chain: " + types + p.show());
        // Which callee C2 inlines where is the JIT's choice, not ours: a chainC already compiled into a
        // big method is not inlined into chainA (seen on JDK 11), and C1 inlines too. What the walker owes
        // is that an inlined frame belongs to compiled code: toward the root, the first frame that is not
        // Inlined is a compiled one, never an interpreted or native frame.
        List<String> orphans = p.stacks.stream().filter(VmWalkerFrameKindsTest::hasInlinedWithoutCompiledHost)
                .limit(5).map(Object::toString).collect(Collectors.toList());
        assertTrue(orphans.isEmpty(), "Inlined frames whose host is not compiled code: " + orphans + p.show());
        // An inlined frame is never the outermost frame of a sample.
        List<String> inlinedRoots = p.roots.stream().filter(f -> "Inlined".equals(f.type)).map(Frame::toString)
                .collect(Collectors.toList());
        assertTrue(inlinedRoots.isEmpty(), "stacks ending with an Inlined frame: " + inlinedRoots + p.show());
        assertOrderKept(p);
    }

    @Test
    void tieredStopAtLevel1GivesC1CompiledFrames() throws Exception {
        WalkerProfile p = profile("c1", "chain", 2000, "-XX:TieredStopAtLevel=1");
        Map<String, Integer> types = p.typesOf(f -> f.of(CpuBurner.class) && CHAIN.contains(f.method));
        assertTrue(types.getOrDefault("C1 compiled", 0) >= 20, "C1 compiled frames of the hot chain: " + types + p.show());
        assertEquals(0, (int) types.getOrDefault("JIT compiled", 0),
                "no C2 code exists with -XX:TieredStopAtLevel=1, yet frames are 'JIT compiled': " + types + p.show());
        assertOrderKept(p);
    }

    /** Without tiered compilation only C2 compiles: no frame may claim C1 code. */
    @Test
    void c2OnlyGivesNoC1CompiledFrames() throws Exception {
        WalkerProfile p = profile("c2", "chain", 2000, "-XX:-TieredCompilation");
        Map<String, Integer> types = p.typesOf(f -> f.of(CpuBurner.class) && CHAIN.contains(f.method));
        assertTrue(types.getOrDefault("JIT compiled", 0) >= 20, "C2 compiled frames of the hot chain: " + types + p.show());
        Map<String, Integer> all = p.typesOf(f -> true);
        assertEquals(0, (int) all.getOrDefault("C1 compiled", 0),
                "no C1 code exists with -XX:-TieredCompilation, yet frames are 'C1 compiled': " + all + p.show());
        assertOrderKept(p);
    }

    @Test
    void jdkNativeMethodGivesNativeFrames() throws Exception {
        WalkerProfile p = profile("deflate", "deflate", 2000);
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
        WalkerProfile p = profile("deflate-xint", "deflate", 1500, "-Xint");
        Map<String, Integer> types = p.typesOf(VmWalkerFrameKindsTest::isDeflateNative);
        int all = types.values().stream().mapToInt(Integer::intValue).sum();
        assertTrue(all >= 20, "frames of java.util.zip.Deflater.deflateBytes* under -Xint: " + types + p.show());
        assertEquals(all, (int) types.getOrDefault("Native", 0),
                "every frame of the native method java.util.zip.Deflater.deflateBytes* should be typed Native; got "
                        + types + p.show());
    }

    /** Whether some run of Inlined frames in {@code s} (leaf first) ends in a frame that is not compiled. */
    private static boolean hasInlinedWithoutCompiledHost(List<Frame> s) {
        for (int i = 0; i < s.size(); i++) {
            if ("Inlined".equals(s.get(i).type)) {
                int host = i;
                while (host < s.size() && "Inlined".equals(s.get(host).type)) {
                    host++;
                }
                if (host < s.size() && !s.get(host).type.contains("compiled")) {
                    return true;
                }
                i = host;
            }
        }
        return false;
    }

    private static boolean isDeflateNative(Frame f) {
        return "java.util.zip.Deflater".equals(f.owner) && f.method.startsWith("deflateBytes");
    }

    /** chainC, chainB, chainA stand leaf first wherever all three are sampled. */
    private static void assertOrderKept(WalkerProfile p) {
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
    private WalkerProfile profile(String name, String mode, long millis, String... jvmOptions) throws Exception {
        WalkerProfile p = WalkerProfile.record(dir, name, "vm", FrameKindsMain.class, mode, millis, TIMEOUT, WORKER,
                jvmOptions);
        assertTrue(p.stacks.size() >= 50, "samples on " + WORKER + ": " + p.stacks.size() + "\n" + p.child);
        System.out.println(name + ": worker frame types " + p.typesOf(f -> true));
        return p;
    }
}
