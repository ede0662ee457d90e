package com.datadoghq.profiler;

import java.io.IOException;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Facts about the running JVM and OS, from system properties (and, for musl, the launcher
 * binary or the process's memory map). All methods are static. Nothing here touches JMX
 * unless {@link #activeGarbageCollector()} is called.
 */
public final class Platform {
    private static final Version JAVA_VERSION = parseJavaVersion(System.getProperty("java.version"));
    private static final JvmRuntime RUNTIME = new JvmRuntime();

    private Platform() {
    }

    /** The garbage collector in use, told from the GC MXBeans' names. */
    public enum GC {
        SERIAL("marksweep"),
        PARALLEL("ps"),
        CMS("concurrentmarksweep"),
        G1("g1"),
        SHENANDOAH("shenandoah"),
        Z("z"),
        UNKNOWN("");

        /** Start of a lower-cased collector MXBean name ("G1 Old Generation" -> "g1"). */
        private final String namePrefix;

        GC(String namePrefix) {
            this.namePrefix = namePrefix;
        }

        static GC current() {
            for (GarbageCollectorMXBean bean : ManagementFactory.getGarbageCollectorMXBeans()) {
                if (!bean.isValid()) {
                    continue;
                }
                String name = bean.getName().toLowerCase(Locale.ROOT);
                for (GC gc : values()) {
                    if (gc != UNKNOWN && name.startsWith(gc.namePrefix)) {
                        return gc;
                    }
                }
            }
            return UNKNOWN;
        }
    }

    /** A Java version as {@code major.minor.update}. */
    public static final class Version {
        public final int major;
        public final int minor;
        public final int update;

        public Version(int major, int minor, int update) {
            this.major = major;
            this.minor = minor;
            this.update = update;
        }

        public boolean is(int major) {
            return this.major == major;
        }

        public boolean is(int major, int minor) {
            return this.major == major && this.minor == minor;
        }

        public boolean is(int major, int minor, int update) {
            return this.major == major && this.minor == minor && this.update == update;
        }

        /** {@code this >= major.minor.update}. */
        public boolean isAtLeast(int major, int minor, int update) {
            return compare(this.major, this.minor, this.update, major, minor, update) >= 0;
        }

        /**
         * {@code from <= this < to}; false when {@code to < from}.
         */
        public boolean isBetween(int fromMajor, int fromMinor, int fromUpdate,
                                 int toMajor, int toMinor, int toUpdate) {
            return compare(toMajor, toMinor, toUpdate, fromMajor, fromMinor, fromUpdate) >= 0
                    && isAtLeast(fromMajor, fromMinor, fromUpdate)
                    && !isAtLeast(toMajor, toMinor, toUpdate);
        }

        private static int compare(int aMajor, int aMinor, int aUpdate, int bMajor, int bMinor, int bUpdate) {
            if (aMajor != bMajor) {
                return Integer.compare(aMajor, bMajor);
            }
            if (aMinor != bMinor) {
                return Integer.compare(aMinor, bMinor);
            }
            return Integer.compare(aUpdate, bUpdate);
        }

        @Override
        public String toString() {
            return major + "." + minor + "." + update;
        }
    }

    /**
     * The runtime's name, vendor, version and the patch suffix of its runtime version, e.g.
     * {@code java.version} "1.8.0_265" with {@code java.runtime.version} "1.8.0_265-b01":
     * version "1.8.0_265", patches "b01". Missing properties read as "".
     */
    public static final class JvmRuntime {
        public final String name;
        public final String vendor;
        public final String version;
        public final String patches;

        /** The running JVM's. */
        public JvmRuntime() {
            this(System.getProperty("java.version"), System.getProperty("java.runtime.version"),
                    System.getProperty("java.runtime.name"), System.getProperty("java.vm.vendor"));
        }

        /**
         * From the values of {@code java.version}, {@code java.runtime.version},
         * {@code java.runtime.name} and {@code java.vm.vendor}. {@code patches} is what
         * follows {@code javaVersion} and one separator in {@code runtimeVersion}.
         */
        public JvmRuntime(String javaVersion, String runtimeVersion, String name, String vendor) {
            this.name = name == null ? "" : name;
            this.vendor = vendor == null ? "" : vendor;
            this.version = javaVersion == null ? "" : javaVersion;
            String full = this.version.isEmpty() || runtimeVersion == null ? this.version : runtimeVersion;
            int patchStart = this.version.length() + 1;
            this.patches = patchStart < full.length() ? full.substring(patchStart) : "";
        }
    }

    /**
     * Parses a {@code java.version} value. A {@code -} ends it ("9-ea", "17.0.4-x"); the rest
     * is numbers separated by {@code .}, {@code _} or {@code +}. Legacy "1.x" versions map
     * to {@code x}: "1.8.0_292" is 8.0.292. Numbers the string does not have are 0; any other
     * character makes the whole version 0.0.0.
     */
    public static Version parseJavaVersion(String javaVersion) {
        if (javaVersion == null) {
            return new Version(0, 0, 0);
        }
        int dash = javaVersion.indexOf('-');
        List<Integer> numbers = numbers(dash >= 0 ? javaVersion.substring(0, dash) : javaVersion);
        if (numbers == null) {
            return new Version(0, 0, 0);
        }
        // Legacy "1.<major>.<minor>_<update>": the first number is skipped, if a second follows.
        int first = numbers.get(0) == 1 && numbers.size() > 1 ? 1 : 0;
        return new Version(at(numbers, first), at(numbers, first + 1), at(numbers, first + 2));
    }

    private static int at(List<Integer> numbers, int index) {
        return index < numbers.size() ? numbers.get(index) : 0;
    }

    /** The numbers between separators ("" counts as 0), or null for any other character. */
    private static List<Integer> numbers(String text) {
        List<Integer> numbers = new ArrayList<>();
        int value = 0;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c >= '0' && c <= '9') {
                value = value * 10 + (c - '0');
            } else if (c == '.' || c == '_' || c == '+') {
                numbers.add(value);
                value = 0;
            } else {
                return null;
            }
        }
        numbers.add(value);
        return numbers;
    }

    /** The running Java feature version: 8, 11, 17, 21, 25, ... */
    public static int javaMajorVersion() {
        return JAVA_VERSION.major;
    }

    public static String getLangVersion() {
        return String.valueOf(JAVA_VERSION.major);
    }

    public static boolean isJavaVersion(int major) {
        return JAVA_VERSION.is(major);
    }

    public static boolean isJavaVersion(int major, int minor) {
        return JAVA_VERSION.is(major, minor);
    }

    public static boolean isJavaVersion(int major, int minor, int update) {
        return JAVA_VERSION.is(major, minor, update);
    }

    public static boolean isJavaVersionAtLeast(int major) {
        return JAVA_VERSION.isAtLeast(major, 0, 0);
    }

    public static boolean isJavaVersionAtLeast(int major, int minor) {
        return JAVA_VERSION.isAtLeast(major, minor, 0);
    }

    public static boolean isJavaVersionAtLeast(int major, int minor, int update) {
        return JAVA_VERSION.isAtLeast(major, minor, update);
    }

    /** {@code fromMajor <= version < toMajor}. */
    public static boolean isJavaVersionBetween(int fromMajor, int toMajor) {
        return JAVA_VERSION.isBetween(fromMajor, 0, 0, toMajor, 0, 0);
    }

    /** {@code fromMajor.fromMinor <= version < toMajor.toMinor}. */
    public static boolean isJavaVersionBetween(int fromMajor, int fromMinor, int toMajor, int toMinor) {
        return JAVA_VERSION.isBetween(fromMajor, fromMinor, 0, toMajor, toMinor, 0);
    }

    /** {@code from <= version < to}, comparing major, minor and update in turn. */
    public static boolean isJavaVersionBetween(int fromMajor, int fromMinor, int fromUpdate,
                                               int toMajor, int toMinor, int toUpdate) {
        return JAVA_VERSION.isBetween(fromMajor, fromMinor, fromUpdate, toMajor, toMinor, toUpdate);
    }

    /** The collector in use (asks the GC MXBeans once, at the first call). */
    public static GC activeGarbageCollector() {
        return GcHolder.GC;
    }

    private static final class GcHolder {
        static final GC GC = Platform.GC.current();
    }

    /** Whether the OpenJDK JFR ({@code jdk.jfr.Event}) is on the system class path. */
    public static boolean hasJfr() {
        return JfrHolder.HAS_JFR;
    }

    private static final class JfrHolder {
        static final boolean HAS_JFR = checkForJfr();

        private static boolean checkForJfr() {
            try {
                return ClassLoader.getSystemClassLoader().getResource("jdk/jfr/Event.class") != null;
            } catch (Throwable t) {
                return false;
            }
        }
    }

    /** Whether this JVM is GraalVM's native-image builder. */
    public static boolean isNativeImageBuilder() {
        return "org.graalvm.nativeimage.builder".equals(System.getProperty("jdk.module.main"));
    }

    /** {@code java.vm.vendor}. */
    public static String getRuntimeVendor() {
        return RUNTIME.vendor;
    }

    /** {@code java.version}. */
    public static String getRuntimeVersion() {
        return RUNTIME.version;
    }

    /** What {@code java.runtime.version} has after {@code java.version} ("b01", "12-LTS"). */
    public static String getRuntimePatches() {
        return RUNTIME.patches;
    }

    private static String lowerProperty(String name) {
        return property(name).toLowerCase(Locale.ROOT);
    }

    private static String property(String name) {
        String value = System.getProperty(name);
        return value == null ? "" : value;
    }

    public static boolean isLinux() {
        return lowerProperty("os.name").contains("linux");
    }

    public static boolean isMac() {
        return lowerProperty("os.name").contains("mac");
    }

    public static boolean isWindows() {
        return lowerProperty("os.name").contains("win");
    }

    /** Oracle's (not OpenJDK's) JDK 8. */
    public static boolean isOracleJDK8() {
        return isJavaVersion(8) && RUNTIME.vendor.contains("Oracle") && !RUNTIME.name.contains("OpenJDK");
    }

    public static boolean isJ9() {
        return property("java.vm.name").contains("J9");
    }

    public static boolean isZing() {
        return property("java.vm.name").contains("Zing");
    }

    /** GraalVM, by its {@code java.vendor.version} (e.g. "Oracle GraalVM 21.0.1+12.1"). */
    public static boolean isGraal() {
        return property("java.vendor.version").contains(" GraalVM ");
    }

    public static boolean isAarch64() {
        return lowerProperty("os.arch").contains("aarch64");
    }

    // Set once a detection succeeded; the C library does not change under a running JVM.
    private static volatile Boolean musl;

    /**
     * Whether this is Linux with the musl C library (Alpine and friends), as
     * {@link OperatingSystem#isMusl()} says.
     *
     * @throws RuntimeException wrapping the {@link IOException} if neither the launcher nor
     *     {@code /proc/self/maps} could be read
     */
    public static boolean isMusl() {
        Boolean known = musl;
        if (known == null) {
            OperatingSystem os = OperatingSystem.current();
            try {
                known = os == OperatingSystem.linux && os.isMusl();
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
            musl = known;
        }
        return known;
    }
}
