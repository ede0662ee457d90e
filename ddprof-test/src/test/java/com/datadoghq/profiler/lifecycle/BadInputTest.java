package com.datadoghq.profiler.lifecycle;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.testing.CpuBurner;
import com.datadoghq.profiler.testing.JfrReader;
import com.datadoghq.profiler.testing.ProfilerExtension;
import com.datadoghq.profiler.testing.TestEnv;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Bad commands are refused with a message that names the option and the value, and leave the
 * profiler idle and usable; harmless oddities are accepted.
 */
@ExtendWith(ProfilerExtension.class)
class BadInputTest {
    @TempDir
    Path dir;

    private final JavaProfiler profiler;

    BadInputTest(JavaProfiler profiler) {
        this.profiler = profiler;
    }

    @ParameterizedTest(name = "{0}={1}")
    @CsvSource({
            "cpu, abc",                            // not a number
            "cpu, 99999999999999999999ms",         // overflows a long
            "cpu, 10xs",                           // unknown unit
            "wall, 5parsecs",                      // unknown unit
            "interval, 12q",                       // unknown unit
            "jstackdepth, -1",                     // negative depth
            "fjmethodid, maybe",                   // not true|false|lazy
    })
    void malformedOptionIsRefusedAndNamed(String option, String value) throws Exception {
        Path file = dir.resolve("bad.jfr");
        String command = option.equals("cpu") ? "start," + option + "=" + value + ",file=" + file
                : "start,cpu=10ms," + option + "=" + value + ",file=" + file;

        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> profiler.execute(command),
                "execute(\"" + command + "\") should be refused");
        String message = String.valueOf(e.getMessage());
        assertTrue(message.contains(option), "the message should name the option '" + option + "': " + message);
        assertTrue(message.contains(value), "the message should name the value '" + value + "': " + message);

        assertFalse(TestEnv.isRunning(profiler), "refused command left the profiler running:\n" + profiler.getStatus());
        assertFalse(Files.exists(file), "refused command created " + file);
        assertCorrectStartStillWorks();
    }

    @Test
    void unknownOptionOnlyWarns() throws Exception {
        Path file = dir.resolve("unknown.jfr");
        String reply = profiler.execute("start,cpu=10ms,foo=bar,file=" + file);
        assertTrue(TestEnv.isRunning(profiler), "an unknown option should not stop the start:\n" + profiler.getStatus());
        assertTrue(reply.contains("foo"), "the reply should warn about 'foo': " + reply);
        profiler.stop();
        assertTrue(Files.exists(file), "no recording at " + file);
    }

    @Test
    void unwritableFileIsRefusedAndNamed() throws Exception {
        String path = "/nonexistent-dir/x.jfr";
        Exception e = assertThrows(Exception.class, () -> profiler.execute("start,cpu=10ms,file=" + path));
        assertTrue(e instanceof IOException || e instanceof IllegalStateException || e instanceof IllegalArgumentException,
                "expected IOException, IllegalStateException or IllegalArgumentException, got " + e);
        assertTrue(String.valueOf(e.getMessage()).contains(path), "the message should name " + path + ": " + e.getMessage());
        assertFalse(TestEnv.isRunning(profiler), "profiler running without a file:\n" + profiler.getStatus());
        assertCorrectStartStillWorks();
    }

    @Test
    void lazyMethodIdsAreAccepted() throws Exception {
        Path file = dir.resolve("lazy.jfr");
        profiler.execute("start,cpu=10ms,fjmethodid=lazy,file=" + file);
        assertTrue(TestEnv.isRunning(profiler), profiler.getStatus());
        CpuBurner.burn(500);
        profiler.stop();
        assertFalse(JfrReader.executionSamples(file).isEmpty(), "fjmethodid=lazy recorded no samples");
    }

    private void assertCorrectStartStillWorks() throws Exception {
        Path good = dir.resolve("good.jfr");
        profiler.execute("start,cpu=10ms,file=" + good);
        assertTrue(TestEnv.isRunning(profiler), "a correct start after a refused one:\n" + profiler.getStatus());
        profiler.stop();
        assertTrue(Files.exists(good), "no recording at " + good);
        JfrReader.readAll(good);
    }
}
