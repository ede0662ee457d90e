package com.datadoghq.profiler.jfr;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.CpuBurner;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.ProfilerExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.openjdk.jmc.common.item.IItemCollection;
import org.openjdk.jmc.common.util.IPreferenceValueProvider;
import org.openjdk.jmc.flightrecorder.JfrLoaderToolkit;
import org.openjdk.jmc.flightrecorder.rules.IResult;
import org.openjdk.jmc.flightrecorder.rules.IRule;
import org.openjdk.jmc.flightrecorder.rules.RuleRegistry;
import org.openjdk.jmc.flightrecorder.rules.Severity;
import org.openjdk.jmc.flightrecorder.rules.util.RulesToolkit;

/**
 * JDK Mission Control's automated analysis (every rule of {@code flightrecorder.rules.jdk})
 * over one of our recordings completes without a rule throwing: a rule that finds an event
 * type declared but no event of it must not be handed one, so the recording declares only what
 * it writes (e.g. {@code jdk.CPULoad}, which the "High JVM CPU" rule reads).
 */
@ExtendWith(ProfilerExtension.class)
class JmcRulesTest {
    @TempDir
    Path dir;

    @Test
    void everyRuleCompletes(JavaProfiler profiler) throws Exception {
        Path jfr = dir.resolve("rules.jfr");
        profiler.execute("start,cpu=10ms,file=" + jfr);
        CpuBurner.burn(500);
        profiler.stop();

        IItemCollection events = JfrLoaderToolkit.loadEvents(jfr.toFile());
        Collection<IRule> rules = RuleRegistry.getRules();
        assertFalse(rules.isEmpty(), "JMC's rules are on the class path");
        int ran = 0;
        List<String> failures = new ArrayList<>();
        Severity highJvmCpu = null;
        // JMC's own runner: rules that build on other rules' results get them.
        Map<IRule, Future<IResult>> results =
                RulesToolkit.evaluateParallel(rules, events, IPreferenceValueProvider.DEFAULT_VALUES, 2);
        for (Map.Entry<IRule, Future<IResult>> e : results.entrySet()) {
            IRule rule = e.getKey();
            try {
                IResult result = e.getValue().get(5, TimeUnit.MINUTES);
                ran++;
                if (rule.getId().equals("HighJvmCpu")) {
                    highJvmCpu = result.getSeverity();
                }
            } catch (ExecutionException x) {
                StringWriter trace = new StringWriter();
                x.getCause().printStackTrace(new PrintWriter(trace));
                failures.add(rule.getId() + " (" + rule.getName() + "): " + trace);
            }
        }
        assertTrue(failures.isEmpty(), failures.size() + " of " + rules.size() + " rules threw:\n"
                + String.join("\n", failures));
        assertTrue(ran > 10, "rules run: " + ran);
        // It has jdk.CPULoad events to judge by, rather than "not applicable".
        assertTrue(highJvmCpu != null && highJvmCpu != Severity.NA, "High JVM CPU: " + highJvmCpu);
        assertFalse(JfrReader.events(jfr, "jdk.CPULoad").isEmpty(), "a declared jdk.CPULoad has events");
    }

    /** Each rule's severity over a recording (rules that threw are left out: the test above checks them). */
    static Map<String, Severity> severities(Path jfr) throws Exception {
        IItemCollection events = JfrLoaderToolkit.loadEvents(jfr.toFile());
        Map<String, Severity> out = new java.util.TreeMap<>();
        Map<IRule, Future<IResult>> results =
                RulesToolkit.evaluateParallel(RuleRegistry.getRules(), events, IPreferenceValueProvider.DEFAULT_VALUES, 2);
        for (Map.Entry<IRule, Future<IResult>> e : results.entrySet()) {
            try {
                out.put(e.getKey().getClass().getSimpleName(), e.getValue().get(5, TimeUnit.MINUTES).getSeverity());
            } catch (ExecutionException x) {
                // counted by everyRuleCompletes
            }
        }
        return out;
    }

    static long notApplicable(Map<String, Severity> s) {
        return s.values().stream().filter(v -> v == Severity.NA).count();
    }

    /**
     * {@code jdksamples}: the CPU samples also as {@code jdk.ExecutionSample}, which JMC's method
     * profiling rule reads (it is not applicable to a recording without them), and no rule becomes
     * not applicable that was applicable without the option. The counts are printed beside the JDK's
     * own recording of the same burn (docs/converters.md, "JDK Mission Control and other JDK tools").
     */
    @Test
    void jdkSamplesGiveTheMethodProfilingRuleSamplesToJudge(JavaProfiler profiler) throws Exception {
        Path plain = dir.resolve("plain.jfr");
        profiler.execute("start,cpu=10ms,file=" + plain);
        CpuBurner.burn(500);
        profiler.stop();
        Path copies = dir.resolve("jdksamples.jfr");
        profiler.execute("start,cpu=10ms,jdksamples,file=" + copies);
        CpuBurner.burn(500);
        profiler.stop();
        Path jdkFile = dir.resolve("jdk.jfr");
        try (jdk.jfr.Recording r = new jdk.jfr.Recording(jdk.jfr.Configuration.getConfiguration("profile"))) {
            r.start();
            CpuBurner.burn(500);
            r.stop();
            r.dump(jdkFile);
        }
        Map<String, Severity> withoutCopies = severities(plain);
        Map<String, Severity> withCopies = severities(copies);
        Map<String, Severity> jdkOwn = severities(jdkFile);
        System.out.println("JMC rules: " + withoutCopies.size() + " ran; not applicable: ddprof " + notApplicable(withoutCopies)
                + ", ddprof with jdksamples " + notApplicable(withCopies) + ", the JDK's own recording (profile settings) "
                + notApplicable(jdkOwn) + "; method profiling: " + withoutCopies.get("MethodProfilingRule") + ", "
                + withCopies.get("MethodProfilingRule") + ", " + jdkOwn.get("MethodProfilingRule"));
        assertTrue(withoutCopies.get("MethodProfilingRule") == Severity.NA,
                "without jdk.ExecutionSample the method profiling rule has nothing: " + withoutCopies.get("MethodProfilingRule"));
        assertTrue(withCopies.get("MethodProfilingRule") != null && withCopies.get("MethodProfilingRule") != Severity.NA,
                "method profiling with jdksamples: " + withCopies.get("MethodProfilingRule"));
        List<String> lost = new ArrayList<>();
        for (Map.Entry<String, Severity> e : withoutCopies.entrySet()) {
            if (e.getValue() != Severity.NA && withCopies.get(e.getKey()) == Severity.NA) {
                lost.add(e.getKey());
            }
        }
        assertTrue(lost.isEmpty(), "not applicable only with jdksamples: " + lost);
    }
}
