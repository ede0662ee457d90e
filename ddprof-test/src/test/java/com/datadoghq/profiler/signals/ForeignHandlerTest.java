package com.datadoghq.profiler.signals;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;

import com.datadoghq.profiler.testing.CLibrary;
import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.TestEnv;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Another library's SIGPROF/SIGVTALRM handler, installed after the profiler's and not passing
 * its signals on, takes the samples: the profiler says so (a warning naming the library, the
 * {@code signal_handler_replaced} counter, a {@code status} line) and installs its handlers
 * again at the next start (docs/engines.md, "Foreign signal handlers"). And a start under
 * the JDK's libjsig makes no {@code signal()}/{@code sigset()} call it would warn about.
 */
class ForeignHandlerTest {
    @TempDir
    Path dir;

    private Path library() throws Exception {
        Path lib = CLibrary.compile(Files.createDirectories(dir.resolve("lib")), "signals/foreign_handler");
        assumeTrue(lib != null, "no C compiler (cc) to build the test library");
        return lib;
    }

    private static long value(String stdout, String key) {
        for (String line : stdout.split("\n")) {
            if (line.startsWith(key + "=")) {
                return Long.parseLong(line.substring(key.length() + 1).trim());
            }
        }
        throw new AssertionError("no " + key + " in\n" + stdout);
    }

    @Test
    void aForeignHandlerIsReportedAndReplacedAtTheNextStart() throws Exception {
        ChildJvm.Result r = new ChildJvm()
                .classpath(TestEnv.libJar())
                .main(ForeignHandlerMain.class, "foreign", dir.toString(), library().toString())
                .timeout(Duration.ofSeconds(120))
                .run(dir);
        assertFalse(r.timedOut, r.describe());
        assertEquals(0, r.exitCode, r.describe());
        String out = r.stdout;
        assertEquals(0, value(out, "install.sigprof"), r.describe());
        assertEquals(0, value(out, "install.sigvtalrm"), r.describe());

        // Said once per signal: a warning naming the library, the counter, and status.
        for (String sig : new String[] {"SIGPROF", "SIGVTALRM"}) {
            String warning = "another library replaced the profiler's " + sig + " handler";
            int at = r.stderr.indexOf(warning);
            assertTrue(at >= 0, r.describe());
            assertEquals(at, r.stderr.lastIndexOf(warning), "one warning per intruder:\n" + r.describe());
            assertTrue(r.stderr.substring(at).split("\n")[0].contains("libforeign_handler.so"), r.describe());
            assertTrue(out.contains("status.replaced:  Signal Handler   : " + sig + " replaced by another library"),
                    r.describe());
            assertTrue(out.contains("getstatus.replaced:  Signal Handler   : " + sig + " replaced by another library"),
                    r.describe());
            assertTrue(out.contains("restart: WARNING: another library had replaced the profiler's " + sig
                    + " handler"), r.describe());
        }
        assertEquals(2, value(out, "counter.signal_handler_replaced"), r.describe());

        // Replaced: the other library gets the CPU signals (one per interval of this thread's CPU
        // time alone), the profiler none.
        long expected = value(out, "replaced.cpu_ms") / ForeignHandlerMain.INTERVAL_MS;
        assertTrue(value(out, "replaced.foreign") >= expected / 4, r.describe());
        assertTrue(value(out, "replaced.own") <= 2, r.describe());
        assertTrue(value(out, "replaced.wall_foreign") > 0, r.describe());

        // Started again: the profiler's handlers are back, the other library gets none.
        long expected2 = value(out, "restarted.cpu_ms") / ForeignHandlerMain.INTERVAL_MS;
        assertTrue(value(out, "restarted.own") >= expected2 / 4, r.describe());
        assertTrue(value(out, "restarted.wall_own") > 0, r.describe());
        assertTrue(value(out, "restarted.foreign") <= 2, r.describe());
        assertTrue(value(out, "restarted.wall_foreign") <= 2, r.describe());
        assertFalse(out.contains("status.restarted:  Signal Handler"), r.describe());
        assertFalse(out.contains("getstatus.restarted:  Signal Handler"), r.describe());
        assertEquals(0, value(out, "counter.restarted.signal_handler_replaced"), r.describe());
    }

    @Test
    void aStartUnderLibjsigCallsNoDeprecatedSignalFunction() throws Exception {
        Path home = Paths.get(TestEnv.javaExecutable()).toAbsolutePath().getParent().getParent();
        Path jsig = home.resolve("lib").resolve("libjsig.so");
        assumeTrue(Files.exists(jsig), "no libjsig.so in " + home);
        ChildJvm.Result r = new ChildJvm()
                .classpath(TestEnv.libJar())
                .env("LD_PRELOAD", jsig.toString())
                .main(ForeignHandlerMain.class, "jsig", dir.toString(), library().toString())
                .timeout(Duration.ofSeconds(60))
                .run(dir);
        assertFalse(r.timedOut, r.describe());
        assertEquals(0, r.exitCode, r.describe());
        String warning = "use of signal() and sigset() for signal chaining was deprecated";
        int started = r.stderr.indexOf("MARK profiler started and stopped");
        int control = r.stderr.indexOf("MARK control done");
        assertTrue(started >= 0 && control > started, r.describe());
        assertFalse(r.stderr.substring(0, started).contains(warning) || r.stdout.contains(warning),
                "the profiler's start or stop called signal() or sigset():\n" + r.describe());
        // The control: libjsig (16 on) warns once per process, at the first signal()/sigset() for a
        // signal the JVM has not taken (17, 21) or for one it has (25); the test library calls both
        // kinds, so the warning comes here only if nothing before made such a call.
        if (TestEnv.jdk() >= 16) {
            assertTrue(r.stderr.substring(started, control).contains(warning),
                    "libjsig did not warn about signal(): the check above proves nothing\n" + r.describe());
        }
    }
}
