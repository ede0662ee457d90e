package com.datadoghq.profiler.tools.convert;

import com.datadoghq.profiler.export.Profile;

/**
 * How a frame is printed in collapsed stacks and flame graphs ({@code --simple}, {@code --lines},
 * {@code --bci}): {@code pkg.Class.method} by default, {@code Class.method} with the package left
 * out, then {@code :line} and {@code @bci} where the recording has them (a Java frame's line 0 is
 * unknown, its bytecode index 0 is the method's first instruction; a native frame has neither). The frame's identity is not changed: two frames that print alike are one box, one
 * collapsed frame.
 */
final class FrameNames {
    static final FrameNames DEFAULT = new FrameNames(false, false, false);

    final boolean simple;
    final boolean lines;
    final boolean bci;

    FrameNames(boolean simple, boolean lines, boolean bci) {
        this.simple = simple;
        this.lines = lines;
        this.bci = bci;
    }

    boolean isDefault() {
        return !simple && !lines && !bci;
    }

    String of(Profile.Frame f) {
        if (isDefault()) {
            return f.name();
        }
        String name = f.className.isEmpty() ? f.method : className(f.className) + "." + f.method;
        if (f.className.isEmpty()) {
            return name;
        }
        if (lines && f.line > 0) {
            name += ":" + f.line;
        }
        if (bci && f.bci >= 0) {
            name += "@" + f.bci;
        }
        return name;
    }

    /** The class name as printed: with {@code simple}, without its package. */
    String className(String className) {
        return simple ? simpleName(className) : className;
    }

    /**
     * {@code java.util.HashMap$Node} is {@code HashMap$Node}: the part after the last dot that
     * starts a name, so a hidden class kept with {@code --raw-names} keeps its address suffix
     * ({@code LambdaForm$MH.0x...}, {@code LambdaForm$MH/0x...}).
     */
    static String simpleName(String className) {
        int end = className.indexOf('/');
        end = end < 0 ? className.length() : end;
        for (int i = end - 2; i >= 0; i--) {
            if (className.charAt(i) == '.' && !Character.isDigit(className.charAt(i + 1))) {
                return className.substring(i + 1);
            }
        }
        return className;
    }
}
