package com.datadoghq.profiler.vtable;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedMethod;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.TestEnv;
import com.datadoghq.profiler.testing.WalkerProfile;
import com.datadoghq.profiler.testing.WalkerProfile.Frame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Samples that land in a vtable or itable stub carry the receiver class the call dispatched on
 * (upstream's encoding): a frame {@code <vtable_receiver>} of the receiver class (type Native, bci
 * -21, line 0) above the {@code vtable stub} / {@code itable stub} frame, above the Java caller.
 * {@link MegamorphicMain} has one vtable call site over three classes and one itable call site over
 * three others; every receiver frame must name a class of the site below it. Floors scale with the
 * CPU time the worker got.
 */
class VtableReceiverFrameTest {
    private static final String WORKER = "vtable-worker";
    private static final Duration TIMEOUT = Duration.ofSeconds(90);
    private static final long MILLIS = 3000;
    private static final String RECEIVER = "<vtable_receiver>";
    private static final String UNRESOLVED = "<unresolved_vtable_receiver>";
    private static final String MAIN = MegamorphicMain.class.getName();
    private static final String METHOD_SAMPLE = "datadog.MethodSample";
    private static final Set<String> SHAPES = names("Circle", "Square", "Triangle");
    private static final Set<String> COLOURS = names("Red", "Green", "Blue");

    @TempDir
    Path dir;

    @Test
    void receiverFramesNameTheClassesOfTheirCallSite() throws Exception {
        WalkerProfile p = profile("cpu", "cpu=1ms,cstack=vm", null);
        Sites s = sites(p);
        long floor = floor(p);
        assertTrue(s.wrong.isEmpty(), "receiver frames naming a class their call site never sees: " + s.wrong + p.show());
        assertTrue(s.malformed.isEmpty(), "receiver frames not encoded as upstream's: " + s.malformed + p.show());
        assertTrue(sum(s.vtable) >= floor,
                "receivers at the vtable call site (floor " + floor + "): " + s.vtable + p.show());
        assertTrue(sum(s.itable) >= floor,
                "receivers at the itable call site (floor " + floor + "): " + s.itable + p.show());
        // C2 may test for one profiled receiver class ahead of the virtual call, so that class
        // reaches the vtable stub seldom (once in a run seen): at least two shapes, every colour.
        assertTrue(s.vtable.size() >= 2, "shapes dispatched on: " + s.vtable + p.show());
        assertEquals(COLOURS, s.itable.keySet(), "every colour is dispatched on" + p.show());
        // Live classes the walker read are named at the dump: at most a sliver of refusals (a
        // receiver caught while the GC moves it).
        int named = s.total();
        assertTrue(s.unresolved * 20 <= named, "unresolved receivers: " + s.unresolved + " of " + named + p.show());
        assertTrue(p.counter("walkvm_vtable_receivers") >= named, "counter walkvm_vtable_receivers" + p.show());
    }

    /**
     * Compact object headers (JDK 24+; a product flag from 25): the class is in the mark word, and an
     * inflated lock's mark points at the monitor (without the monitor table) or keeps the class bits
     * (with it, 25's default). Every receiver's monitor is kept inflated.
     */
    @Test
    void compactHeadersWithInflatedMonitors() throws Exception {
        assumeTrue(TestEnv.jdk() >= 25, "compact object headers are a product option from JDK 25");
        for (boolean table : new boolean[] {true, false}) {
            WalkerProfile p = profile(table ? "compact-table" : "compact-monitor", "cpu=1ms,cstack=vm", null,
                    "inflate", "-XX:+UseCompactObjectHeaders", "-XX:+UnlockDiagnosticVMOptions",
                    "-XX:" + (table ? "+" : "-") + "UseObjectMonitorTable");
            Sites s = sites(p);
            long floor = floor(p);
            assertTrue(s.wrong.isEmpty(), "wrong receivers: " + s.wrong + p.show());
            assertTrue(s.malformed.isEmpty(), "malformed receiver frames: " + s.malformed + p.show());
            assertTrue(sum(s.vtable) >= floor && sum(s.itable) >= floor, "receivers (floor " + floor
                    + " per site): vtable " + s.vtable + ", itable " + s.itable + p.show());
            assertTrue(s.unresolved * 20 <= s.total(), "unresolved receivers: " + s.unresolved + p.show());
        }
    }

    /**
     * Receivers whose classes unload before the dump, while a new loader's classes may take their
     * memory: a sample taken before the unload names a class of the first loader or is unresolved,
     * never a class of the second (what a receiver keyed by its {@code Klass*} alone would give once
     * the address is reused); one taken after names a class of the second.
     */
    @Test
    void unloadedReceiversAreNeverNamedAfterTheirSuccessors() throws Exception {
        ChildJvm child = new ChildJvm().main(ReloadMain.class, "1500");
        WalkerProfile p = WalkerProfile.record(dir, "reload", "cpu=1ms,cstack=vm", "vm", child, "reload", TIMEOUT,
                WORKER, JfrReader.EXECUTION_SAMPLE);
        assertTrue(p.stdout.contains("unloaded=true"), "the first loader's classes did not unload" + p.show());
        Matcher m = Pattern.compile("phase2 ms: (\\d+)").matcher(p.stdout);
        assertTrue(m.find(), "no phase boundary" + p.show());
        long phase2 = Long.parseLong(m.group(1));
        Set<String> first = names(ReloadMain.class, "Moon", "Comet", "Rock");
        Set<String> second = names(ReloadMain.class, "Star", "Planet", "Dust");
        Map<String, Integer> before = new TreeMap<>();
        Map<String, Integer> after = new TreeMap<>();
        List<String> wrong = new java.util.ArrayList<>();
        for (RecordedEvent e : JfrReader.ofType(JfrReader.readAll(dir.resolve("reload.jfr")), JfrReader.EXECUTION_SAMPLE)) {
            if (!WORKER.equals(JfrReader.threadName(e)) || e.getStackTrace() == null) {
                continue;
            }
            List<RecordedFrame> frames = JfrReader.frames(e);
            if (!atReloadSite(frames)) {
                continue;
            }
            String owner = frames.get(0).getMethod().getType().getName();
            long t = e.getStartTime().toEpochMilli();
            // The boundary is printed after the unload wait: allow a little clock skew either way.
            if (t < phase2 - 50) {
                before.merge(owner, 1, Integer::sum);
                if (!first.contains(owner) && !UNRESOLVED.equals(owner)) {
                    wrong.add("before the unload: " + owner);
                }
            } else if (t > phase2 + 50) {
                after.merge(owner, 1, Integer::sum);
                if (!second.contains(owner) && !UNRESOLVED.equals(owner)) {
                    wrong.add("after the unload: " + owner);
                }
            }
        }
        System.out.println("reload: receivers before the unload " + before + ", after " + after);
        assertTrue(wrong.isEmpty(), "receivers named after a class that was not the receiver: " + wrong + p.show());
        long floor = floor(p) / 2;
        assertTrue(sum(before) >= floor, "receivers before the unload (floor " + floor + "): " + before + p.show());
        int named = after.entrySet().stream().filter(x -> second.contains(x.getKey())).mapToInt(Map.Entry::getValue).sum();
        assertTrue(named >= floor, "named receivers after the unload (floor " + floor + "): " + after + p.show());
    }

    /**
     * The same classes in two loaders one after the other, the first loader's unloaded before the second
     * round, one dump: the samples of both rounds carry receiver frames named after the classes (the first
     * round's were remembered while their classes lived) and, being equal frame for frame, share stack
     * traces; no sample names a class that was not the receiver.
     */
    @Test
    void aClassUnloadedAndReloadedKeepsOneTrace() throws Exception {
        ChildJvm child = new ChildJvm().main(ReloadMain.class, "1500", "same");
        WalkerProfile p = WalkerProfile.record(dir, "same", "cpu=1ms,cstack=vm", "vm", child, "reload", TIMEOUT,
                WORKER, JfrReader.EXECUTION_SAMPLE);
        assertOneTracePerClass("same", p.stdout, dir.resolve("same.jfr"), p.show());
    }

    /**
     * As {@link #aClassUnloadedAndReloadedKeepsOneTrace} with the first round's classes loaded before the
     * profiler starts (through the API): they are remembered at the start.
     */
    @Test
    void classesLoadedBeforeTheStartKeepOneTraceToo() throws Exception {
        Path jfr = dir.resolve("late.jfr");
        ChildJvm.Result r = new ChildJvm().classpath(TestEnv.libJar())
                .main(ReloadMain.class, "1500", "late", jfr.toString()).timeout(TIMEOUT).run(dir);
        assertEquals(0, r.exitCode, "child JVM failed:\n" + r.describe());
        assertTrue(r.stdout.contains("workload done: reload"), r.describe());
        assertOneTracePerClass("late", r.stdout, jfr, "\n" + r.describe());
    }

    private void assertOneTracePerClass(String name, String stdout, Path jfr, String show) throws Exception {
        assertTrue(stdout.contains("unloaded=true"), "the first loader's classes did not unload" + show);
        Matcher m = Pattern.compile("phase2 ms: (\\d+)").matcher(stdout);
        assertTrue(m.find(), "no phase boundary" + show);
        long phase2 = Long.parseLong(m.group(1));
        Set<String> classes = names(ReloadMain.class, "Moon", "Comet", "Rock");
        // Per class: the stacks (frame by frame) of each round, with their sample counts.
        Map<String, Map<String, Integer>> first = new TreeMap<>();
        Map<String, Map<String, Integer>> second = new TreeMap<>();
        Map<String, Integer> unresolved = new TreeMap<>();
        List<String> wrong = new java.util.ArrayList<>();
        for (RecordedEvent e : JfrReader.ofType(JfrReader.readAll(jfr), JfrReader.EXECUTION_SAMPLE)) {
            if (!WORKER.equals(JfrReader.threadName(e)) || e.getStackTrace() == null) {
                continue;
            }
            List<RecordedFrame> frames = JfrReader.frames(e);
            if (!atReloadSite(frames)) {
                continue;
            }
            String owner = frames.get(0).getMethod().getType().getName();
            long t = e.getStartTime().toEpochMilli();
            String round = t < phase2 - 50 ? "first" : t > phase2 + 50 ? "second" : null;
            if (round == null) {
                continue;
            }
            if (UNRESOLVED.equals(owner)) {
                unresolved.merge(round, 1, Integer::sum);
                continue;
            }
            if (!classes.contains(owner)) {
                wrong.add(round + " round: " + owner);
                continue;
            }
            StringBuilder key = new StringBuilder();
            for (RecordedFrame f : frames) {
                key.append(f.getMethod().getType().getName()).append('.').append(f.getMethod().getName())
                        .append(f.getMethod().getDescriptor()).append(':').append(f.getLineNumber()).append('@')
                        .append(f.getBytecodeIndex()).append(' ').append(f.getType()).append('\n');
            }
            (round.equals("first") ? first : second).computeIfAbsent(owner, k -> new TreeMap<>())
                    .merge(key.toString(), 1, Integer::sum);
        }
        System.out.println(name + ": receivers in the first round " + counts(first) + ", in the second "
                + counts(second) + ", unresolved " + unresolved);
        assertTrue(wrong.isEmpty(), "receivers named after a class that was not the receiver: " + wrong + show);
        long floor = floor(stdout, show) / 2;
        for (String c : classes) {
            Map<String, Integer> a = first.getOrDefault(c, Map.of());
            Map<String, Integer> b = second.getOrDefault(c, Map.of());
            int before = a.values().stream().mapToInt(Integer::intValue).sum();
            int after = b.values().stream().mapToInt(Integer::intValue).sum();
            long perClass = Math.max(3, floor / 3);
            assertTrue(before >= perClass && after >= perClass, c + ": named receivers per round (floor " + perClass
                    + "): " + before + ", " + after + "; unresolved " + unresolved + show);
            // The second round's commonest stack of this receiver is one the first round had too.
            String common = b.entrySet().stream().max(Map.Entry.comparingByValue()).get().getKey();
            assertTrue(a.containsKey(common), c + ": the second round's commonest stack is not one of the first's:\n"
                    + common + "first round's:\n" + String.join("--\n", a.keySet()));
        }
        int unresolvedFirst = unresolved.getOrDefault("first", 0);
        int namedFirst = first.values().stream().flatMap(x -> x.values().stream()).mapToInt(Integer::intValue).sum();
        assertTrue(unresolvedFirst * 10 <= namedFirst, "first-round receivers unresolved: " + unresolvedFirst
                + " against " + namedFirst + " named" + show);
    }

    private static Map<String, Integer> counts(Map<String, Map<String, Integer>> byClass) {
        Map<String, Integer> out = new TreeMap<>();
        byClass.forEach((c, m) -> out.put(c.substring(c.lastIndexOf('$') + 1), m.values().stream()
                .mapToInt(Integer::intValue).sum()));
        return out;
    }

    /** A receiver recorded with a trace ID its class does not have must not be named after it. */
    @Test
    void receiverThatFailsTheDumpCheckIsUnresolved() throws Exception {
        WalkerProfile p = profile("misrecord", "cpu=1ms,cstack=vm", "DDPROF_TEST_MISRECORD_VTABLE_RECEIVERS");
        Sites s = sites(p);
        long floor = floor(p);
        assertEquals(0, s.total(), "receivers named despite a trace ID mismatch: vtable " + s.vtable + ", itable "
                + s.itable + ", wrong " + s.wrong + p.show());
        assertTrue(s.unresolved >= 2 * floor, "unresolved receiver frames (floor " + 2 * floor + "): " + s.unresolved
                + p.show());
        assertTrue(p.counter("vtable_receiver_resolve_failed") > 0, "counter vtable_receiver_resolve_failed" + p.show());
    }

    /**
     * CPU samples without a {@code cpu} key have no receiver frames unless {@code features=vtable} asks.
     * The stub frame itself is recorded either way (a sample's leaf stub is named, as upstream does).
     */
    @Test
    void featuresVtableTurnsThemOnWithoutTheCpuKey() throws Exception {
        WalkerProfile off = profile("event-cpu", "event=cpu,interval=1ms,cstack=vm", null);
        long receivers = off.frames(f -> RECEIVER.equals(f.method)).size();
        assertEquals(0, receivers, "receiver frames without cpu= or features=vtable" + off.show());
        WalkerProfile on = profile("features", "event=cpu,interval=1ms,cstack=vm,features=vtable", null);
        Sites s = sites(on);
        long floor = floor(on);
        assertTrue(s.wrong.isEmpty(), "wrong receivers: " + s.wrong + on.show());
        assertTrue(s.total() >= 2 * floor, "receivers with features=vtable (floor " + 2 * floor + "): vtable "
                + s.vtable + ", itable " + s.itable + on.show());
    }

    /**
     * Wall-clock samples walk the same way: with {@code features=vtable} they carry receiver frames too
     * (upstream's flag is global as well), and without it (no {@code cpu} key) none.
     */
    @Test
    void wallSamplesWithFeaturesVtable() throws Exception {
        WalkerProfile off = profileOf("wall-off", "wall=1ms,filter=,cstack=vm", null, "plain", METHOD_SAMPLE);
        long receivers = off.frames(f -> RECEIVER.equals(f.method)).size();
        assertEquals(0, receivers, "receiver frames in wall samples without features=vtable" + off.show());
        WalkerProfile on = profileOf("wall-on", "wall=1ms,filter=,cstack=vm,features=vtable", null, "plain",
                METHOD_SAMPLE);
        Sites s = sites(on);
        long floor = floor(on);
        assertTrue(s.wrong.isEmpty(), "wrong receivers: " + s.wrong + on.show());
        assertTrue(s.malformed.isEmpty(), "malformed receiver frames: " + s.malformed + on.show());
        assertTrue(s.total() >= 2 * floor, "receivers in wall samples (floor " + 2 * floor + "): vtable " + s.vtable
                + ", itable " + s.itable + on.show());
    }

    /** Receiver frames per call site, and whatever breaks the rules. */
    private static final class Sites {
        final Map<String, Integer> vtable = new TreeMap<>();
        final Map<String, Integer> itable = new TreeMap<>();
        final List<String> wrong = new java.util.ArrayList<>();
        final List<String> malformed = new java.util.ArrayList<>();
        int unresolved;

        int total() {
            return sum(vtable) + sum(itable);
        }
    }

    private static Sites sites(WalkerProfile p) {
        Sites out = new Sites();
        for (List<Frame> s : p.stacks) {
            for (int i = 0; i < s.size(); i++) {
                Frame f = s.get(i);
                if (!RECEIVER.equals(f.method)) {
                    continue;
                }
                if (i != 0 || s.size() < 3 || !"Native".equals(f.type) || f.bci != -21 || f.line != 0
                        || !s.get(1).owner.isEmpty() || !"Native".equals(s.get(1).type)
                        || !s.get(1).method.endsWith("table stub")) {
                    out.malformed.add(s.subList(0, Math.min(4, s.size())).toString());
                    continue;
                }
                if (UNRESOLVED.equals(f.owner)) {
                    out.unresolved++;
                    continue;
                }
                Frame stub = s.get(1);
                Frame caller = s.get(2);
                boolean vsite = caller.is(MAIN, "callArea");
                boolean isite = caller.is(MAIN, "callColour");
                if (vsite && "vtable stub".equals(stub.method) && SHAPES.contains(f.owner)) {
                    out.vtable.merge(f.owner, 1, Integer::sum);
                } else if (isite && "itable stub".equals(stub.method) && COLOURS.contains(f.owner)) {
                    out.itable.merge(f.owner, 1, Integer::sum);
                } else if (vsite || isite || SHAPES.contains(f.owner) || COLOURS.contains(f.owner)) {
                    out.wrong.add(s.subList(0, Math.min(4, s.size())).toString());
                }
            }
        }
        return out;
    }

    /**
     * What each call site must give at the least: one receiver frame per 400 ms of the worker's CPU
     * time. It spends its time in the two sites; at a 1 ms interval even a 250 Hz kernel gives 100
     * samples in 400 ms, of which the stubs got a quarter on every JDK, the vtable stub (the shorter)
     * at least a tenth.
     */
    private static long floor(WalkerProfile p) {
        return floor(p.stdout, p.show());
    }

    private static long floor(String stdout, String show) {
        Matcher m = Pattern.compile("worker cpu ms: (\\d+)").matcher(stdout);
        assertTrue(m.find(), "no worker CPU time in the output" + show);
        long cpuMs = Long.parseLong(m.group(1));
        assertTrue(cpuMs >= MILLIS / 2, "the worker got " + cpuMs + " ms of CPU" + show);
        return Math.max(3, cpuMs / 400);
    }

    private WalkerProfile profile(String name, String agentOptions, String misrecordEnv) throws Exception {
        return profile(name, agentOptions, misrecordEnv, "plain");
    }

    private WalkerProfile profile(String name, String agentOptions, String misrecordEnv, String mode,
            String... jvmOptions) throws Exception {
        return profileOf(name, agentOptions, misrecordEnv, mode, JfrReader.EXECUTION_SAMPLE, jvmOptions);
    }

    private WalkerProfile profileOf(String name, String agentOptions, String misrecordEnv, String mode,
            String sampleType, String... jvmOptions) throws Exception {
        ChildJvm child = new ChildJvm().main(MegamorphicMain.class, Long.toString(MILLIS), mode);
        if (misrecordEnv != null) {
            child.env(misrecordEnv, "1");
        }
        WalkerProfile p = WalkerProfile.record(dir, name, agentOptions, "vm", child, "megamorphic", TIMEOUT, WORKER,
                sampleType, jvmOptions);
        assertTrue(p.stacks.size() >= 50, "samples on " + WORKER + ": " + p.stacks.size() + "\n" + p.child);
        System.out.println(name + ": receivers " + p.names(f -> RECEIVER.equals(f.method)) + ", classes "
                + count(p));
        return p;
    }

    private static int sum(Map<String, Integer> m) {
        return m.values().stream().mapToInt(Integer::intValue).sum();
    }

    private static Map<String, Integer> count(WalkerProfile p) {
        Map<String, Integer> out = new TreeMap<>();
        p.frames(f -> RECEIVER.equals(f.method)).forEach(f -> out.merge(f.owner, 1, Integer::sum));
        return out;
    }

    private static Set<String> names(String... simple) {
        return names(MegamorphicMain.class, simple);
    }

    private static Set<String> names(Class<?> outer, String... simple) {
        Set<String> out = new HashSet<>();
        Arrays.stream(simple).forEach(n -> out.add(outer.getName() + "$" + n));
        return out;
    }

    /**
     * A receiver frame whose stub was called from {@link ReloadMain#callMass}, the site whose receivers
     * the reload tests know. The worker thread makes other megamorphic calls too (loading the classes
     * runs the JDK's own collections: one sample named a {@code java.util.HashMap} receiver, rightly),
     * and a vtable stub is shared by every site calling through the same vtable index.
     */
    private static boolean atReloadSite(List<RecordedFrame> frames) {
        if (frames.size() < 3 || !RECEIVER.equals(frames.get(0).getMethod().getName())) {
            return false;
        }
        RecordedMethod site = frames.get(2).getMethod();
        return site != null && "callMass".equals(site.getName()) && site.getType() != null
                && ReloadMain.class.getName().equals(site.getType().getName());
    }
}
