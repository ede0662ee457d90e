package com.datadoghq.profiler.convert;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.TestEnv;
import com.datadoghq.profiler.export.EventKind;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The jar's command line as a user meets it ({@code java -jar ddprof.jar ...} in a child JVM):
 * asking for help succeeds and prints to stdout; a usage error exits 2 with one line on stderr
 * that names what is wrong (and, for a format or an event kind, the known ones); the top-level
 * help lists every command, format and event kind.
 */
class CliUsageTest {
    static final List<String> FORMATS = Arrays.asList("collapsed", "pprof", "otlp", "html", "heatmap");

    @TempDir
    Path dir;

    private ChildJvm.Result jar(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(Arrays.asList("-jar", TestEnv.toolsJar().toString()));
        cmd.addAll(Arrays.asList(args));
        ChildJvm.Result r = new ChildJvm().jvmArgs(cmd.toArray(new String[0])).timeout(Duration.ofMinutes(1)).run(dir);
        assertFalse(r.timedOut, r.describe());
        return r;
    }

    @Test
    void helpExitsZeroOnStdout() throws Exception {
        String[][] asks = {
            {"help"}, {"--help"}, {"-h"},
            {"report", "--help"}, {"convert", "--help"}, {"convert", "-h"}, {"attach", "--help"}, {"demo", "--help"},
        };
        for (String[] ask : asks) {
            ChildJvm.Result r = jar(ask);
            String what = String.join(" ", ask) + "\n" + r.describe();
            assertEquals(0, r.exitCode, what);
            assertTrue(r.stdout.startsWith("Usage: "), what);
            assertTrue(r.stderr.isEmpty(), what);
        }
    }

    @Test
    void topLevelHelpListsEveryCommandFormatAndKind() throws Exception {
        String help = jar("help").stdout;
        for (String command : new String[] {"demo", "report", "convert", "attach", "version", "help", "PROFILER-COMMAND"}) {
            assertTrue(help.contains("\n  " + command + " "), "command " + command + ":\n" + help);
        }
        // Both report and convert take --event: the list is EventKind's, in full.
        String kinds = "--event " + EventKind.optionList("|");
        assertTrue(help.indexOf(kinds) >= 0 && help.indexOf(kinds) != help.lastIndexOf(kinds),
                "report's and convert's " + kinds + ":\n" + help);
        assertTrue(help.contains("--to " + String.join("|", FORMATS)), help);
        String convertHelp = jar("convert", "--help").stdout;
        assertTrue(convertHelp.contains(kinds) && convertHelp.contains("--to " + String.join("|", FORMATS)), convertHelp);
        assertTrue(jar("report", "--help").stdout.contains(kinds), "report --help");
    }

    /** Each: the arguments, then what the one line on stderr must say. */
    @Test
    void usageErrorsAreOneLineNamingTheProblem() throws Exception {
        String kinds = EventKind.optionList(", ");
        String[][] cases = {
            {"convert --to foo rec.jfr", "unknown format 'foo' (known: " + String.join(", ", FORMATS) + ")"},
            {"convert rec.jfr", "--to FORMAT is required (known: " + String.join(", ", FORMATS) + ")"},
            {"convert --to html --event nope rec.jfr", "unknown event kind 'nope' (known: " + kinds + ")"},
            {"convert --to html --bogus rec.jfr", "unknown option '--bogus'"},
            {"convert --to html --event cpu --leak rec.jfr", "--leak applies to --event malloc only"},
            {"convert --to pprof --bci rec.jfr", "--bci names frames in collapsed, html and heatmap; pprof has no"
                    + " place for a bytecode index"},
            {"convert --to otlp --simple rec.jfr", "--simple applies to collapsed, html, heatmap and pprof"},
            {"convert --to heatmap --diff base.jfr rec.jfr", "--diff draws a differential flame graph: it needs --to html"},
            {"report rec.jfr --event nope", "unknown event kind 'nope' (known: " + kinds + ")"},
            {"report rec.jfr --event", "--event needs a value"},
            {"report rec.jfr --bogus", "unknown option '--bogus'"},
            {"report a.jfr b.jfr", "unexpected argument 'b.jfr'"},
            {"report --event cpu", "no recording given"},
            {"report rec.jfr --memory --event cpu", "--memory and --event do not go together"},
            {"attach 12x start", "not a process id: '12x'"},
            {"attach 123", "no command given after the process id"},
            {"demo 0", "seconds must be a positive integer"},
            {"frobnicate", "Unknown command: frobnicate"},
            {"status now", "A profiler command is a single argument"},
        };
        for (String[] c : cases) {
            ChildJvm.Result r = jar(c[0].split(" "));
            String what = c[0] + "\n" + r.describe();
            assertEquals(2, r.exitCode, what);
            assertEquals(1, r.stderr.strip().lines().count(), "one line: " + what);
            assertTrue(r.stderr.contains(c[1]), what);
            assertTrue(r.stdout.isEmpty(), what);
        }
    }
}
