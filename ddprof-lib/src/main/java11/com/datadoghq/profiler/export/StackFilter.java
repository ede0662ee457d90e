package com.datadoghq.profiler.export;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * {@code --include REGEX} / {@code --exclude REGEX}: which samples a conversion keeps, by their frames.
 * A sample is kept when every include pattern is found in at least one of its frames and no exclude
 * pattern in any. A pattern is a Java regular expression searched for ({@link java.util.regex.Matcher#find})
 * in a frame's name as the outputs print it: {@code java.util.HashMap.get} for a Java frame (class names
 * as {@code --raw-names} says), the symbol for a native one. Both may be given several times.
 */
public final class StackFilter {
    public static final StackFilter ALL = new StackFilter(List.of(), List.of());

    private final List<Pattern> include;
    private final List<Pattern> exclude;

    private StackFilter(List<Pattern> include, List<Pattern> exclude) {
        this.include = include;
        this.exclude = exclude;
    }

    /** A copy that also requires a frame matching {@code regex}; IllegalArgumentException if it is not one. */
    public StackFilter including(String regex) {
        List<Pattern> in = new ArrayList<>(include);
        in.add(compile("--include", regex));
        return new StackFilter(List.copyOf(in), exclude);
    }

    /** A copy that also drops samples with a frame matching {@code regex}. */
    public StackFilter excluding(String regex) {
        List<Pattern> ex = new ArrayList<>(exclude);
        ex.add(compile("--exclude", regex));
        return new StackFilter(include, List.copyOf(ex));
    }

    private static Pattern compile(String option, String regex) {
        try {
            return Pattern.compile(regex);
        } catch (PatternSyntaxException e) {
            throw new IllegalArgumentException(option + " '" + regex + "' is not a regular expression: "
                    + e.getDescription());
        }
    }

    public boolean keepsEverything() {
        return include.isEmpty() && exclude.isEmpty();
    }

    /** Whether a sample whose frames have these names (any order) is kept. */
    public boolean keeps(List<String> frameNames) {
        for (Pattern p : exclude) {
            for (String name : frameNames) {
                if (p.matcher(name).find()) {
                    return false;
                }
            }
        }
        for (Pattern p : include) {
            boolean found = false;
            for (String name : frameNames) {
                if (p.matcher(name).find()) {
                    found = true;
                    break;
                }
            }
            if (!found) {
                return false;
            }
        }
        return true;
    }
}
