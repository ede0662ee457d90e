package com.datadoghq.profiler.lazy;

import java.lang.instrument.ClassDefinition;
import java.lang.instrument.Instrumentation;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongUnaryOperator;
import java.util.function.Supplier;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.internal.Diagnostics;
import com.datadoghq.profiler.testing.IsolatingLoader;

/**
 * A child JVM's main and {@code -javaagent} (premain) for {@code LazyJvmtiEquivalenceTest}. Loads
 * the native core, redefines {@link RedefVersionTarget} (to its helper-swapped version 2) and
 * {@link EquivalenceFixture} (same bytes), then for classes of every kind prints what
 * {@code Diagnostics.compareMethodMetadata} returns: per method a line
 * {@code method <class>|<ours>|<jvmti>}. Ends with {@code workload done}.
 */
public final class LazyJvmtiEquivalenceMain {
    private static volatile Instrumentation inst;

    public static void premain(String args, Instrumentation i) {
        inst = i;
    }

    public static void main(String[] args) throws Exception {
        if (inst == null) {
            throw new IllegalStateException("run with -javaagent (Premain-Class "
                    + LazyJvmtiEquivalenceMain.class.getName() + ")");
        }
        JavaProfiler.getInstance();
        // Used before the redefinition so that the old methods have run (and may be kept
        // as obsolete versions); then redefined: the current methods are new Method*s.
        EquivalenceFixture fixture = new EquivalenceFixture();
        fixture.lambdas();
        byte[] v1 = IsolatingLoader.classBytes(RedefVersionTarget.class.getName());
        inst.redefineClasses(new ClassDefinition(RedefVersionTarget.class, RedefVersionsMain.swapHelpers(v1)),
                new ClassDefinition(EquivalenceFixture.class,
                        IsolatingLoader.classBytes(EquivalenceFixture.class.getName())));

        List<Class<?>> classes = new ArrayList<>();
        classes.add(EquivalenceFixture.class);
        for (Class<?> nested : EquivalenceFixture.class.getDeclaredClasses()) {
            // Linked and initialized: GetClassMethods refuses a class not yet prepared.
            classes.add(Class.forName(nested.getName(), true, nested.getClassLoader()));
        }
        classes.add(EquivalenceFixture.Color.GREEN.getClass());
        classes.add(RedefVersionTarget.class);
        // Lambda classes (hidden on JDK 15+, VM-anonymous before).
        Runnable r = () -> { };
        Supplier<String> s = fixture::get;
        classes.add(r.getClass());
        classes.add(s.getClass());
        // A hidden class (defineHiddenClass on 15+) and a custom loader's class.
        classes.add(LazyMain.hiddenInstance().getClass());
        classes.add(IsolatingLoader.newInstance(LazySpin.class, LongUnaryOperator.class).getClass());
        // JDK classes with many methods, overloads, bridges and long line tables.
        for (Class<?> c : new Class<?>[] {String.class, StringBuilder.class, java.util.HashMap.class,
            java.util.ArrayList.class, java.util.concurrent.ConcurrentHashMap.class, Thread.class,
            Integer.class, java.util.Collections.class}) {
            classes.add(c);
        }
        for (Class<?> c : classes) {
            String[] pairs = Diagnostics.compareMethodMetadata(c);
            for (int i = 0; i + 1 < pairs.length; i += 2) {
                System.out.println("method " + c.getName() + "|" + pairs[i] + "|" + pairs[i + 1]);
            }
        }
        System.out.println("workload done");
    }
}
