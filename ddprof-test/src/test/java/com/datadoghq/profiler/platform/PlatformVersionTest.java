package com.datadoghq.profiler.platform;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.stream.Stream;

import com.datadoghq.profiler.Platform;
import com.datadoghq.profiler.testing.TestEnv;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** {@link Platform.Version} parsing and comparison, {@link Platform.JvmRuntime}, and the static checks. */
class PlatformVersionTest {

    static Stream<Arguments> versions() {
        return Stream.of(
                // legacy 1.x
                Arguments.of("1.8.0_392", 8, 0, 392),
                Arguments.of("1.8.0_60", 8, 0, 60),
                Arguments.of("1.8.0", 8, 0, 0),
                Arguments.of("1.8", 8, 0, 0),
                Arguments.of("1.7.0_80", 7, 0, 80),
                Arguments.of("1", 1, 0, 0),
                // feature releases, with pre-release and build suffixes
                Arguments.of("25", 25, 0, 0),
                Arguments.of("21-ea", 21, 0, 0),
                Arguments.of("17.0.15", 17, 0, 15),
                Arguments.of("17.0.2+8", 17, 0, 2),
                Arguments.of("11.0.13", 11, 0, 13),
                Arguments.of("11.0.20.1", 11, 0, 20),
                Arguments.of("11.0.9.1+1", 11, 0, 9),
                Arguments.of("9.1.2", 9, 1, 2),
                Arguments.of("21.0.8-internal", 21, 0, 8),
                // anything else: 0.0.0
                Arguments.of("", 0, 0, 0),
                Arguments.of("x", 0, 0, 0),
                Arguments.of("17.0.x", 0, 0, 0),
                Arguments.of("1.8.0_b2", 0, 0, 0),
                Arguments.of("17 ", 0, 0, 0));
    }

    @ParameterizedTest
    @MethodSource("versions")
    void parses(String text, int major, int minor, int update) {
        Platform.Version v = Platform.parseJavaVersion(text);
        assertEquals(major, v.major, text);
        assertEquals(minor, v.minor, text);
        assertEquals(update, v.update, text);
        assertTrue(v.is(major) && v.is(major, minor) && v.is(major, minor, update), text);
        assertFalse(v.is(major + 1) || v.is(major, minor + 1) || v.is(major, minor, update + 1), text);
    }

    @Test
    void nullParsesAsZero() {
        Platform.Version v = Platform.parseJavaVersion(null);
        assertTrue(v.is(0, 0, 0));
    }

    @Test
    void comparisons() {
        Platform.Version v = new Platform.Version(17, 0, 5);
        assertTrue(v.isAtLeast(17, 0, 5));
        assertTrue(v.isAtLeast(17, 0, 4));
        assertTrue(v.isAtLeast(11, 9, 99));
        assertFalse(v.isAtLeast(17, 0, 6));
        assertFalse(v.isAtLeast(17, 1, 0));
        assertFalse(v.isAtLeast(18, 0, 0));
        // from inclusive, to exclusive
        assertTrue(v.isBetween(17, 0, 5, 17, 0, 6));
        assertTrue(v.isBetween(11, 0, 0, 21, 0, 0));
        assertFalse(v.isBetween(17, 0, 5, 17, 0, 5));
        assertFalse(v.isBetween(17, 0, 6, 21, 0, 0));
        assertFalse(v.isBetween(11, 0, 0, 17, 0, 5));
        // an empty (reversed) range holds nothing
        assertFalse(v.isBetween(21, 0, 0, 11, 0, 0));
        assertFalse(v.isBetween(17, 0, 5, 17, 0, 4));
        assertTrue(v.isBetween(17, 0, 5, Integer.MAX_VALUE, Integer.MAX_VALUE, Integer.MAX_VALUE));
    }

    @Test
    void runtimePatches() {
        Platform.JvmRuntime r = new Platform.JvmRuntime("1.8.0_392", "1.8.0_392-b08", "OpenJDK Runtime Environment", "Temurin");
        assertEquals("1.8.0_392", r.version);
        assertEquals("b08", r.patches);
        assertEquals("OpenJDK Runtime Environment", r.name);
        assertEquals("Temurin", r.vendor);
        assertEquals("8-LTS", new Platform.JvmRuntime("21.0.8", "21.0.8+8-LTS", null, null).patches);
        // A runtime version not longer than the version: no patches.
        assertEquals("", new Platform.JvmRuntime("1.8.0_392", "1.8-b08", "", "").patches);
        assertEquals("", new Platform.JvmRuntime("25", "25", "", "").patches);
        Platform.JvmRuntime missing = new Platform.JvmRuntime("17", null, null, null);
        assertEquals("17", missing.version);
        assertEquals("", missing.patches);
        assertEquals("", missing.name);
        assertEquals("", missing.vendor);
        Platform.JvmRuntime noVersion = new Platform.JvmRuntime(null, "17", null, null);
        assertEquals("", noVersion.version);
        assertEquals("", noVersion.patches);
    }

    @Test
    void theRunningJvm() {
        int jdk = TestEnv.jdk();
        assertTrue(Platform.isJavaVersion(jdk));
        assertEquals(jdk, Platform.javaMajorVersion());
        assertEquals(String.valueOf(jdk), Platform.getLangVersion());
        assertTrue(Platform.isJavaVersionAtLeast(8) && Platform.isJavaVersionAtLeast(jdk));
        assertFalse(Platform.isJavaVersionAtLeast(jdk + 1));
        assertTrue(Platform.isJavaVersionBetween(jdk, jdk + 1));
        assertFalse(Platform.isJavaVersionBetween(jdk + 1, jdk + 2));
        Runtime.Version rv = Runtime.version();
        assertTrue(Platform.isJavaVersion(rv.feature(), rv.interim(), rv.update()));
        assertEquals(System.getProperty("java.version"), Platform.getRuntimeVersion());
        assertEquals(System.getProperty("java.vm.vendor"), Platform.getRuntimeVendor());
        assertTrue(System.getProperty("java.runtime.version").endsWith(Platform.getRuntimePatches()));
        assertTrue(Platform.isLinux());
        assertFalse(Platform.isMac() || Platform.isWindows());
        assertFalse(Platform.isJ9() || Platform.isZing() || Platform.isGraal() || Platform.isOracleJDK8());
        assertFalse(Platform.isNativeImageBuilder());
        assertEquals("aarch64".equals(System.getProperty("os.arch")), Platform.isAarch64());
        assertTrue(Platform.hasJfr());
        assertFalse(Platform.isMusl());
        // G1 by default, Serial on a small machine: either way a known one.
        Platform.GC gc = Platform.activeGarbageCollector();
        assertTrue(gc == Platform.GC.G1 || gc == Platform.GC.SERIAL, gc.toString());
    }
}
