package com.datadoghq.profiler.testing;

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
import java.util.HashSet;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.TreeMap;
import java.util.function.Predicate;
import java.util.stream.Collectors;

import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedMethod;
import jdk.jfr.consumer.RecordedStackTrace;

/**
 * A walker test's recording as plain values: the worker thread's stacks (leaf first), every
 * sample by thread, and the {@code walkvm*}, {@code vtable*} and {@code native_pc*} counters. Built by {@link #record}, which runs a
 * workload main class in a child JVM under the agent with a given {@code cstack}.
 */
public final class WalkerProfile {
    /** A frame as plain values (the JFR objects are slow to query over and over). */
    public static final class Frame {
        public final String owner;
        public final String method;
        public final String type;
        public final int line;
        public final int bci;

        public Frame(RecordedFrame f) {
            RecordedMethod m = f.getMethod();
            this.owner = m == null || m.getType() == null ? "?" : m.getType().getName();
            this.method = m == null ? "?" : m.getName();
            this.type = f.getType();
            this.line = f.getLineNumber();
            this.bci = f.getBytecodeIndex();
        }

        public boolean of(Class<?> c) {
            return c.getName().equals(owner);
        }

        public boolean is(String owner, String method) {
            return owner.equals(this.owner) && method.equals(this.method);
        }

        /**
         * A native frame of the walker: class "" and type Native (a Java native method has its
         * class), and not where a walk stopped ({@code unknown}, typed Native too: it is no Java),
         * nor a JIT stub frame: {@code vtable stub}/{@code itable stub} are code-cache frames that
         * every {@code cstack} mode records below a receiver frame (upstream's encoding types them
         * Native too).
         */
        public boolean isNative() {
            return owner.isEmpty() && "Native".equals(type) && !"unknown".equals(method)
                    && !"vtable stub".equals(method) && !"itable stub".equals(method);
        }

        /** Named by a symbol rather than {@code lib+0xoffset} or a bare address. */
        public boolean isSymbol() {
            return !method.isEmpty() && !method.contains("+0x") && !method.startsWith("0x");
        }

        @Override
        public String toString() {
            return owner + "." + method + ":" + line + "@" + bci + "[" + type + "]";
        }
    }

    public final String name;
    /** The worker's stacks, one per sample. */
    public final List<List<Frame>> stacks = new ArrayList<>();
    /** The outermost frame of each non-empty worker stack. */
    public final List<Frame> roots = new ArrayList<>();
    public final Map<String, List<List<Frame>>> byThread = new TreeMap<>();
    public final Map<String, Long> counters;
    /** The child JVM's command and output, for assertion messages. */
    public final String child;
    /** The child JVM's standard output. */
    public final String stdout;

    private WalkerProfile(String name, List<RecordedEvent> samples, String worker, Map<String, Long> counters,
            String child, String stdout) {
        this.name = name;
        this.counters = counters;
        this.child = child;
        this.stdout = stdout;
        Map<RecordedStackTrace, List<Frame>> seen = new IdentityHashMap<>();
        for (RecordedEvent e : samples) {
            RecordedStackTrace st = e.getStackTrace();
            List<Frame> s = st == null ? new ArrayList<>() : seen.computeIfAbsent(st,
                    k -> k.getFrames().stream().map(Frame::new).collect(Collectors.toList()));
            String thread = String.valueOf(JfrReader.threadName(e));
            byThread.computeIfAbsent(thread, t -> new ArrayList<>()).add(s);
            if (worker.equals(thread)) {
                stacks.add(s);
                if (!s.isEmpty()) {
                    roots.add(s.get(s.size() - 1));
                }
            }
        }
    }

    /**
     * Runs {@code main mode millis} in a child JVM with {@code -agentpath:...=start,cpu=1ms,cstack=<cstack>},
     * checks that it finished and that the recording says the walker {@code cstack} ran, and reads it.
     */
    public static WalkerProfile record(Path dir, String name, String cstack, Class<?> main, String mode, long millis,
            Duration timeout, String worker, String... jvmOptions) throws Exception {
        return record(dir, name, "cpu=1ms,cstack=" + cstack, cstack, new ChildJvm().main(main, mode,
                Long.toString(millis)), mode, timeout, worker, JfrReader.EXECUTION_SAMPLE, jvmOptions);
    }

    /**
     * As {@link #record(Path, String, String, Class, String, long, Duration, String, String...)} with the
     * profiler options {@code agentOptions} (besides {@code start} and {@code file}), a child prepared by
     * the caller (main class and arguments, environment) that prints {@code workload done: <mode>}, reading
     * the samples of event type {@code sampleType} ({@code datadog.MethodSample} for wall-clock samples).
     */
    public static WalkerProfile record(Path dir, String name, String agentOptions, String cstack, ChildJvm child,
            String mode, Duration timeout, String worker, String sampleType, String... jvmOptions) throws Exception {
        Path file = dir.resolve(name + ".jfr");
        List<String> options = new ArrayList<>(Arrays.asList(jvmOptions));
        options.add("-agentpath:" + TestEnv.nativeLib() + "=start," + agentOptions + ",file=" + file);
        ChildJvm.Result r = child
                .jvmArgs(options.toArray(new String[0]))
                .timeout(timeout)
                .run(dir);
        assertFalse(r.timedOut, "child JVM hung:\n" + r.describe());
        assertEquals(0, r.exitCode, "child JVM failed:\n" + r.describe());
        assertTrue(r.stdout.contains("workload done: " + mode), "workload did not finish:\n" + r.describe());
        assertTrue(Files.isRegularFile(file), "no recording at " + file + ":\n" + r.describe());

        List<RecordedEvent> events = JfrReader.readAll(file);
        Optional<RecordedEvent> walker = JfrReader.ofType(events, JfrReader.ACTIVE_SETTING).stream()
                .filter(e -> "stackwalker".equals(e.getString("name"))).findFirst();
        assertTrue(walker.isPresent(), "no stackwalker setting in the recording");
        assertEquals(cstack, walker.get().getString("value"), "the walker that ran under cstack=" + cstack);

        Map<String, Long> counters = JfrReader.ofType(events, JfrReader.PROFILER_COUNTER).stream()
                .filter(e -> e.getString("name").startsWith("walkvm") || e.getString("name").startsWith("vtable")
                        || e.getString("name").startsWith("native_pc"))
                .collect(Collectors.toMap(e -> e.getString("name"), e -> e.getLong("count"), (a, b) -> b, TreeMap::new));
        WalkerProfile p = new WalkerProfile(name, JfrReader.ofType(events, sampleType), worker,
                counters, r.describe(), r.stdout);
        System.out.println(name + ": " + p.stacks.size() + " worker samples; counters " + counters);
        return p;
    }

    /**
     * The names of the code-cache entries the child's perf map lists (option {@code perfmap}): its
     * stubs, adapters and blobs, as the JVM reported them, which is how stub frames are named. A stub
     * frame and a C function's frame are encoded alike (class "", type Native), so a test that must
     * tell them apart asks the map. Deletes the map.
     */
    public Set<String> codeCacheNames() throws java.io.IOException {
        Matcher m = Pattern.compile("pid: (\\d+)").matcher(stdout);
        assertTrue(m.find(), "the workload printed no pid:\n" + child);
        Path map = Path.of("/tmp/perf-" + m.group(1) + ".map");
        assertTrue(Files.isRegularFile(map), "no perf map at " + map + ":\n" + child);
        Set<String> names = new HashSet<>();
        for (String line : Files.readAllLines(map)) {
            String[] f = line.split(" ", 3);
            if (f.length == 3) {
                names.add(f[2]);
            }
        }
        Files.deleteIfExists(map);
        return names;
    }

    public long counter(String name) {
        return counters.getOrDefault(name, -1L);
    }

    public List<List<Frame>> stacksOf(Predicate<String> thread) {
        return byThread.entrySet().stream().filter(e -> thread.test(e.getKey()))
                .flatMap(e -> e.getValue().stream()).collect(Collectors.toList());
    }

    /** Frames of the worker matching {@code which}, over all its samples (once per sample it is in). */
    public List<Frame> frames(Predicate<Frame> which) {
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

    public Map<String, Integer> typesOf(Predicate<Frame> which) {
        return count(which, f -> f.type);
    }

    public Map<String, Integer> methodsOf(Predicate<Frame> which) {
        return count(which, f -> f.owner + "." + f.method + "[" + f.type + "]");
    }

    public Map<String, Integer> names(Predicate<Frame> which) {
        return count(which, f -> f.method);
    }

    private Map<String, Integer> count(Predicate<Frame> which, java.util.function.Function<Frame, String> key) {
        Map<String, Integer> out = new TreeMap<>();
        frames(which).forEach(f -> out.merge(key.apply(f), 1, Integer::sum));
        return out;
    }

    public long samplesWith(Class<?> owner, String method) {
        return stacks.stream().filter(s -> s.stream().anyMatch(f -> f.of(owner) && method.equals(f.method))).count();
    }

    /** For assertion messages: the counters, threads and the commonest worker stacks. */
    public String show() {
        Map<String, Integer> common = new TreeMap<>();
        for (List<Frame> s : stacks) {
            common.merge(s.subList(0, Math.min(10, s.size())).toString(), 1, Integer::sum);
        }
        String top = common.entrySet().stream()
                .sorted(Map.Entry.<String, Integer>comparingByValue().reversed())
                .limit(8)
                .map(e -> e.getValue() + " x " + e.getKey())
                .collect(Collectors.joining("\n  ", "\n  ", ""));
        Map<String, Integer> threads = new TreeMap<>();
        byThread.forEach((t, l) -> threads.put(t, l.size()));
        return "\n[" + name + "] " + stacks.size() + " worker samples; threads " + threads + "; counters "
                + counters + "; commonest worker stacks (leaf first):" + top;
    }
}
