import java.lang.instrument.Instrumentation;

/**
 * The -javaagent of the suite's {@code lazy} mode (scripts/arm64-smoke.sh packs it with
 * {@code Premain-Class} and {@code Can-Redefine-Classes}): keeps the Instrumentation for
 * ArmSuite, which redefines ArmSuiteRedefinable through it.
 */
public class ArmSuiteAgent {
    public static volatile Instrumentation instrumentation;

    public static void premain(String args, Instrumentation inst) {
        instrumentation = inst;
    }
}
