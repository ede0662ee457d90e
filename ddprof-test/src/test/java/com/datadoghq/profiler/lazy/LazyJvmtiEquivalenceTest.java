package com.datadoghq.profiler.lazy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.TestEnv;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the lazy mode names a frame with equals what JVMTI reports for the same method: name,
 * descriptor, modifiers and line number table, for every method of a few dozen classes (several
 * hundred methods): overloads, varargs, constructors, {@code <clinit>}, bridges, synthetic lambda
 * bodies, native and abstract methods, enum constant bodies, lambda classes, a hidden class, a
 * custom loader's class, and two redefined classes (one with a changed constant pool).
 *
 * <p>Which path is compared: not sampled frames (sampling hundreds of methods, most of them never
 * run, is impractical) but the production function itself. {@code Diagnostics.compareMethodMetadata}
 * takes each method's {@code Method*} and runs on it {@code methods::raw::method_parts}, the function
 * the dump names every accepted lazily tagged frame with (name and descriptor from the constant
 * pool, modifiers from {@code Method::_access_flags}, the compressed line table). It finds the
 * methods with JVMTI {@code GetClassMethods}, which makes jmethodIDs, so it runs in its own child
 * JVM ({@link LazyJvmtiEquivalenceMain}) with no lazy recording whose counters could be affected.
 * That frames in a real lazy recording get these parts is what {@code LazyJmethodIdTest} and
 * {@code LazyZgcTest} check.
 */
class LazyJvmtiEquivalenceTest {
    @TempDir
    static Path dir;

    /** One method: its class, what our reader says, what JVMTI says. */
    private static final class Row {
        final String owner;
        final String ours;
        final String jvmti;

        Row(String owner, String ours, String jvmti) {
            this.owner = owner;
            this.ours = ours;
            this.jvmti = jvmti;
        }

        String name() {
            return jvmti.substring(0, jvmti.indexOf(' '));
        }

        int modifiers() {
            String m = jvmti.substring(jvmti.indexOf("modifiers=") + 10);
            return Integer.parseInt(m.substring(0, m.indexOf(' ')));
        }

        boolean hasLines() {
            return !jvmti.endsWith("lines=[]");
        }

        @Override
        public String toString() {
            return owner + "\n  ours:  " + ours + "\n  jvmti: " + jvmti;
        }
    }

    private static List<Row> rows;
    private static ChildJvm.Result result;

    @BeforeAll
    static void run() throws Exception {
        Path agent = LazyRedefinitionStressTest.agentJar(dir, LazyJvmtiEquivalenceMain.class);
        result = new ChildJvm()
                .classpath(TestEnv.libJar())
                .jvmArgs("-javaagent:" + agent, "-Xmx256m")
                .main(LazyJvmtiEquivalenceMain.class)
                .timeout(Duration.ofSeconds(90))
                .run(dir);
        assertFalse(result.timedOut, "child JVM hung:\n" + result.describe());
        assertEquals(0, result.exitCode, "child JVM failed:\n" + result.describe());
        assertTrue(result.stdout.contains("workload done"), result.describe());
        rows = new ArrayList<>();
        for (String line : result.stdout.split("\n")) {
            if (line.startsWith("method ")) {
                String[] p = line.substring(7).split("\\|", 3);
                rows.add(new Row(p[0], p[1], p[2]));
            }
        }
    }

    @Test
    void everyMethodReadsAsJvmtiReportsIt() {
        assertTrue(rows.size() >= 300, "only " + rows.size() + " methods compared\n" + result.describe());
        List<Row> differ = new ArrayList<>();
        for (Row r : rows) {
            if (!r.ours.equals(r.jvmti)) {
                differ.add(r);
            }
        }
        StringBuilder sb = new StringBuilder();
        differ.stream().limit(20).forEach(r -> sb.append('\n').append(r));
        assertTrue(differ.isEmpty(), differ.size() + " of " + rows.size() + " methods differ:" + sb);
    }

    @Test
    void theComparisonCoversEveryKindOfMethod() {
        String fixture = EquivalenceFixture.class.getName();
        require("<clinit>", r -> r.owner.equals(fixture) && r.name().equals("<clinit>"));
        require("three constructors", r -> r.owner.equals(fixture) && r.name().equals("<init>"), 3);
        require("six overloads of m", r -> r.owner.equals(fixture) && r.name().equals("m"), 6);
        require("a varargs method", r -> (r.modifiers() & 0x80) != 0);
        require("bridge methods", r -> (r.modifiers() & 0x40) != 0 && r.owner.startsWith(fixture), 3);
        require("synthetic lambda bodies", r -> r.owner.equals(fixture) && r.name().startsWith("lambda$")
                && (r.modifiers() & 0x1000) != 0, 3);
        require("a native method without lines", r -> (r.modifiers() & 0x100) != 0 && !r.hasLines());
        require("an abstract method", r -> (r.modifiers() & 0x400) != 0 && r.owner.startsWith(fixture));
        require("methods of lambda classes", r -> r.owner.contains("$$Lambda"), 2);
        require("methods of the hidden class", r -> r.owner.startsWith(LazyHiddenSpin.class.getName()), 2);
        require("the redefined class's methods with lines",
                r -> r.owner.equals(RedefVersionTarget.class.getName()) && r.hasLines(), 4);
        require("a method of thirty lines", r -> r.owner.equals(fixture) && r.name().equals("longMethod")
                && r.jvmti.split(",").length > 30);
        // The JDK's own classes have line tables only in some builds (JDK 11's here has none).
        require("JDK methods", r -> r.owner.equals("java.util.concurrent.ConcurrentHashMap"), 50);
    }

    private static void require(String what, Predicate<Row> p) {
        require(what, p, 1);
    }

    private static void require(String what, Predicate<Row> p, int atLeast) {
        long n = rows.stream().filter(p).count();
        assertTrue(n >= atLeast, "compared " + n + " (need " + atLeast + "): " + what);
    }
}
