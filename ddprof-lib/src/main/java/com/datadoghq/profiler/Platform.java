package com.datadoghq.profiler;

import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Locale;

/**
 * Facts about the running JVM and OS, from system properties (and, for musl, the process's
 * own memory map). All methods are static and cheap.
 */
public final class Platform {
    private static final int[] VERSION = parseJavaVersion(System.getProperty("java.version", ""));

    private Platform() {
    }

    /**
     * Splits a {@code java.version} string into {major, minor, update}.
     * Both styles are understood: {@code 1.8.0_392} gives {8, 0, 392} and {@code 17.0.15},
     * {@code 21-ea} or {@code 25} give {17, 0, 15}, {21, 0, 0}, {25, 0, 0}. Unparseable parts are 0.
     */
    static int[] parseJavaVersion(String version) {
        int[] numbers = new int[4];
        int count = 0;
        int i = 0;
        int n = version == null ? 0 : version.length();
        while (i < n && count < numbers.length) {
            char c = version.charAt(i);
            if (c >= '0' && c <= '9') {
                long value = 0;
                while (i < n && (c = version.charAt(i)) >= '0' && c <= '9') {
                    value = Math.min(Integer.MAX_VALUE, value * 10 + (c - '0'));
                    i++;
                }
                numbers[count++] = (int) value;
                // A '-' starts a pre-release/build tag ("21-ea", "17.0.2+8-LTS"): stop there.
                if (i < n && (version.charAt(i) == '-' || version.charAt(i) == '+')) {
                    break;
                }
            } else {
                i++;
            }
        }
        if (numbers[0] == 1 && count >= 2) {
            // Legacy "1.<major>.0_<update>".
            return new int[] {numbers[1], 0, count >= 4 ? numbers[3] : 0};
        }
        return new int[] {numbers[0], numbers[1], numbers[2]};
    }

    private static int compareVersion(int major, int minor, int update) {
        if (VERSION[0] != major) {
            return Integer.compare(VERSION[0], major);
        }
        if (VERSION[1] != minor) {
            return Integer.compare(VERSION[1], minor);
        }
        return Integer.compare(VERSION[2], update);
    }

    /** The running Java feature version: 8, 11, 17, 21, 25, ... */
    public static int javaMajorVersion() {
        return VERSION[0];
    }

    public static String getLangVersion() {
        return String.valueOf(VERSION[0]);
    }

    public static boolean isJavaVersion(int major) {
        return VERSION[0] == major;
    }

    public static boolean isJavaVersion(int major, int minor) {
        return VERSION[0] == major && VERSION[1] == minor;
    }

    public static boolean isJavaVersion(int major, int minor, int update) {
        return VERSION[0] == major && VERSION[1] == minor && VERSION[2] == update;
    }

    public static boolean isJavaVersionAtLeast(int major) {
        return VERSION[0] >= major;
    }

    public static boolean isJavaVersionAtLeast(int major, int minor) {
        return compareVersion(major, minor, 0) >= 0;
    }

    public static boolean isJavaVersionAtLeast(int major, int minor, int update) {
        return compareVersion(major, minor, update) >= 0;
    }

    /** {@code fromMajor <= version < toMajor}. */
    public static boolean isJavaVersionBetween(int fromMajor, int toMajor) {
        return isJavaVersionBetween(fromMajor, 0, 0, toMajor, 0, 0);
    }

    /** {@code fromMajor.fromMinor <= version < toMajor.toMinor}. */
    public static boolean isJavaVersionBetween(int fromMajor, int fromMinor, int toMajor, int toMinor) {
        return isJavaVersionBetween(fromMajor, fromMinor, 0, toMajor, toMinor, 0);
    }

    /** {@code from <= version < to}, comparing major, minor and update in turn. */
    public static boolean isJavaVersionBetween(int fromMajor, int fromMinor, int fromUpdate,
                                               int toMajor, int toMinor, int toUpdate) {
        return compareVersion(fromMajor, fromMinor, fromUpdate) >= 0
                && compareVersion(toMajor, toMinor, toUpdate) < 0;
    }

    /** Whether the {@code jdk.jfr} module / package is present. */
    public static boolean hasJfr() {
        try {
            Class.forName("jdk.jfr.Event", false, Platform.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    public static String getRuntimeVendor() {
        return property("java.vendor");
    }

    public static String getRuntimeVersion() {
        return property("java.runtime.version");
    }

    private static String property(String name) {
        String value = System.getProperty(name);
        return value == null ? "" : value;
    }

    public static boolean isLinux() {
        return property("os.name").toLowerCase(Locale.ROOT).contains("linux");
    }

    public static boolean isMac() {
        return property("os.name").toLowerCase(Locale.ROOT).contains("mac");
    }

    public static boolean isWindows() {
        return property("os.name").toLowerCase(Locale.ROOT).contains("win");
    }

    public static boolean isJ9() {
        return property("java.vm.name").contains("J9");
    }

    public static boolean isZing() {
        return property("java.vm.name").contains("Zing");
    }

    public static boolean isGraal() {
        return property("java.vendor.version").contains("GraalVM") || property("java.vm.name").contains("GraalVM");
    }

    public static boolean isAarch64() {
        return property("os.arch").toLowerCase(Locale.ROOT).contains("aarch64");
    }

    /** Whether this is Linux with the musl C library (Alpine and friends). */
    public static boolean isMusl() {
        return MuslHolder.IS_MUSL;
    }

    private static final class MuslHolder {
        static final boolean IS_MUSL = isLinux() && detectMusl();

        // The C library is mapped into every process: musl's is ld-musl-<arch>.so.1 (or
        // libc.musl-<arch>.so.1), glibc's is libc.so.6.
        private static boolean detectMusl() {
            Path maps = Paths.get("/proc/self/maps");
            try (BufferedReader reader = Files.newBufferedReader(maps, StandardCharsets.ISO_8859_1)) {
                String line;
                while ((line = reader.readLine()) != null) {
                    if (line.contains("/ld-musl-") || line.contains("/libc.musl-")) {
                        return true;
                    }
                }
            } catch (IOException | RuntimeException e) {
                // Unknown: assume glibc.
            }
            return false;
        }
    }
}
