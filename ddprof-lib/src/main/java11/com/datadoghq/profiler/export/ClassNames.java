package com.datadoghq.profiler.export;

import java.util.regex.Pattern;

/**
 * Names of classes the JVM makes at run time, made stable across runs: a lambda's class is
 * {@code Demo$$Lambda$6/0x00007fd704006428} (or {@code .0x...}, {@code Demo$$Lambda/0x...} on JDK 21+,
 * {@code Demo$$Lambda$6/1234567} on JDK 11), a method handle's form {@code LambdaForm$MH/0x...}; the
 * counter and the address change from run to run, so two profiles of the same code could not be
 * compared or merged. By default the converters write {@code Demo$$Lambda} and {@code LambdaForm$MH}
 * (as async-profiler's converter does); {@code --raw-names} keeps the names as recorded.
 */
final class ClassNames {
    /** A hidden class's address suffix, or a VM-anonymous class's identity number (JDK 11). */
    private static final Pattern HIDDEN_SUFFIX = Pattern.compile("[./](0x[0-9a-fA-F]+|[0-9]+)$");
    /** The per-class counter of a lambda's class. */
    private static final Pattern LAMBDA_COUNTER = Pattern.compile("\\$\\$Lambda\\$[0-9]+");

    private ClassNames() {
    }

    static String normalize(String className) {
        if (className.indexOf("$$Lambda") < 0 && className.indexOf("LambdaForm$") < 0
                && className.indexOf("/0x") < 0 && className.indexOf(".0x") < 0) {
            return className;
        }
        String s = HIDDEN_SUFFIX.matcher(className).replaceFirst("");
        return LAMBDA_COUNTER.matcher(s).replaceAll("\\$\\$Lambda");
    }
}
