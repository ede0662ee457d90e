package com.datadoghq.profiler.walker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import com.datadoghq.profiler.testing.CLibrary;
import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.WalkerProfile;
import com.datadoghq.profiler.testing.WalkerProfile.Frame;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A JNI library extracted to a temporary file, loaded and deleted, as Netty (its epoll transport)
 * and zstd-jni load theirs: its file is gone, yet its frames are unwound by its DWARF rules, its
 * functions are named, and its {@code jdk.NativeLibrary} event carries its build id. Once as the
 * test runs (as root here: the profiler reads the mapped file through {@code /proc/self/map_files/},
 * symbol table included), once without CAP_SYS_ADMIN and CAP_CHECKPOINT_RESTORE (as any user, or
 * root in a container: the profiler reads the library as the loader mapped it, whose dynamic
 * symbols name the exported JNI entry point only; its static and hidden functions are then
 * {@code lib+0xaddress}, the address in the library's ELF file, for {@code addr2line}).
 */
class DeletedLibraryFramesTest {
    private static final String WORKER = "native-worker";
    private static final String JNI = "Java_com_datadoghq_profiler_walker_NativeFramesMain_deletedSpin";
    private static final String LEAF = "deleted_static_leaf";
    private static final String MIDDLE = "deleted_hidden_middle";
    /** Runs the child JVM without the capabilities that open /proc/self/map_files/. */
    private static final String[] WITHOUT_CAP_SYS_ADMIN = {"setpriv", "--bounding-set",
        "-sys_admin,-checkpoint_restore", "--"};

    @TempDir
    Path dir;

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void aJniLibraryDeletedOnceLoadedHasNamedFrames(boolean withoutCapSysAdmin) throws Exception {
        Path lib = CLibrary.compile(Files.createDirectories(dir.resolve("lib")), "walker/deleted_spin", "-O2",
                "-fomit-frame-pointer", "-Wl,--build-id");
        Assumptions.assumeTrue(lib != null, "no C compiler (cc) to build the test library");
        ChildJvm child = new ChildJvm().main(NativeFramesMain.class, "deletedjni", "2000");
        if (withoutCapSysAdmin) {
            Assumptions.assumeTrue(canDropCapSysAdmin(), "setpriv cannot drop CAP_SYS_ADMIN here");
            child.launcher(WITHOUT_CAP_SYS_ADMIN);
        }
        String name = "deleted-" + (withoutCapSysAdmin ? "nocap" : "asis");
        // cstack=vm, the default.
        WalkerProfile p = WalkerProfile.record(dir, name, "cpu=1ms", "vm", child, "deletedjni",
                Duration.ofSeconds(90), WORKER, JfrReader.EXECUTION_SAMPLE, "-Dlate.lib=" + lib);
        Matcher deleted = Pattern.compile("loaded and deleted: (\\S+)").matcher(p.stdout);
        assertTrue(deleted.find(), "the workload did not load a deleted copy:\n" + p.child);
        String copy = deleted.group(1);
        assertFalse(Files.exists(Path.of(copy)), copy + " still exists");
        boolean mapFiles = p.stdout.contains("map_files readable: true");
        if (withoutCapSysAdmin) {
            assertFalse(mapFiles, "the child could still open /proc/self/map_files/:\n" + p.child);
        }
        assertTrue(p.stacks.size() >= 50, "samples on " + WORKER + ": " + p.stacks.size() + "\n" + p.child);

        // Through map_files the static and hidden functions are named from .symtab; otherwise they are
        // the copy's name and the address in its ELF file, inside the function (by nm, where there is nm).
        String file = Path.of(copy).getFileName().toString();
        Predicate<Frame> leaf = function(mapFiles, file, LEAF, CLibrary.symbolRange(lib, LEAF));
        Predicate<Frame> middle = function(mapFiles, file, MIDDLE, CLibrary.symbolRange(lib, MIDDLE));
        long whole = p.stacks.stream().filter(s -> s.size() > 3 && leaf.test(s.get(0)) && middle.test(s.get(1))
                && s.get(2).is("", JNI) && s.get(3).is(NativeFramesMain.class.getName(), "deletedSpin")).count();
        // The library is found within a fraction of a second of its loading; the samples before
        // that keep the leaf alone, as for a library that stays on disk.
        assertTrue(whole * 10 >= p.stacks.size() * 7, "samples with " + LEAF + ", " + MIDDLE + " and " + JNI
                + " above NativeFramesMain.deletedSpin (map_files readable: " + mapFiles + "): " + whole + p.show());
        long bare = p.stacks.stream().filter(s -> s.stream().anyMatch(f -> f.isNative() && f.method.startsWith("0x")))
                .count();
        assertTrue(bare * 20 <= p.stacks.size(), "samples with a bare address frame: " + bare + p.show());

        // jdk.NativeLibrary names the copy by the path it was loaded from, with its build id (what
        // remote symbolication looks it up by).
        List<RecordedEvent> libraries = JfrReader.events(dir.resolve(name + ".jfr"), "jdk.NativeLibrary");
        RecordedEvent event = libraries.stream().filter(e -> copy.equals(e.getString("name"))).findFirst()
                .orElseThrow(() -> new AssertionError("no jdk.NativeLibrary event for " + copy + " among "
                        + libraries.stream().map(e -> e.getString("name")).collect(Collectors.toList())));
        String expected = buildId(lib);
        if (expected != null) {
            assertEquals(expected, event.getString("buildId"), "the build id of " + copy);
        } else {
            assertTrue(event.getString("buildId").matches("[0-9a-f]{16,}"), "build id: " + event.getString("buildId"));
        }
    }

    /**
     * A frame of {@code symbol}: by name where the library's file could be read, else
     * {@code file+0xaddress} with the address in {@code range} (any, without nm).
     */
    private static Predicate<Frame> function(boolean named, String file, String symbol, long[] range) {
        if (named) {
            return f -> f.is("", symbol);
        }
        String prefix = file + "+0x";
        return f -> {
            if (!f.owner.isEmpty() || !f.method.startsWith(prefix)) {
                return false;
            }
            long address = Long.parseLong(f.method.substring(prefix.length()), 16);
            return range == null || (address >= range[0] && address < range[1]);
        };
    }

    /** Whether {@code setpriv} can run a command without CAP_SYS_ADMIN here (it needs CAP_SETPCAP). */
    private static boolean canDropCapSysAdmin() throws Exception {
        List<String> command = new java.util.ArrayList<>(List.of(WITHOUT_CAP_SYS_ADMIN));
        command.add("true");
        Process p;
        try {
            p = new ProcessBuilder(command).redirectErrorStream(true).start();
        } catch (java.io.IOException noSetpriv) {
            return false;
        }
        p.getInputStream().readAllBytes();
        return p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0;
    }

    /** The GNU build id of {@code lib} by binutils' {@code readelf -n}; null without readelf. */
    private static String buildId(Path lib) throws Exception {
        Process readelf;
        try {
            readelf = new ProcessBuilder("readelf", "-n", lib.toString()).redirectErrorStream(true).start();
        } catch (java.io.IOException noReadelf) {
            return null;
        }
        String out = new String(readelf.getInputStream().readAllBytes());
        readelf.waitFor();
        Matcher m = Pattern.compile("Build ID: ([0-9a-f]+)").matcher(out);
        return m.find() ? m.group(1) : null;
    }
}
