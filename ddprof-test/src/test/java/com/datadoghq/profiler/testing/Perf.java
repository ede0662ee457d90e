package com.datadoghq.profiler.testing;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/** Running Linux {@code perf} (Debian's linux-perf) from the code-map tests. */
public final class Perf {
    private Perf() {
    }

    /**
     * Whether {@code perf record} can take user-space samples here (of {@code true}), with the
     * extra {@code recordOptions} a test will use (a clock, for instance). A test skips when not.
     */
    public static boolean works(Path dir, String... recordOptions) {
        try {
            Path probe = dir.resolve("probe.data");
            String[] cmd = new String[recordOptions.length + 9];
            cmd[0] = "perf";
            cmd[1] = "record";
            System.arraycopy(recordOptions, 0, cmd, 2, recordOptions.length);
            int i = 2 + recordOptions.length;
            for (String s : new String[] {"-q", "-e", "cpu-clock:u", "-o", probe.toString(), "--", "true"}) {
                cmd[i++] = s;
            }
            exec(dir, 120, cmd);
            return Files.isRegularFile(probe);
        } catch (Exception e) {
            return false;
        }
    }

    /** Runs {@code cmd} in {@code dir}, stdin from /dev/null; its output, or an exception if it fails. */
    public static String exec(Path dir, long timeoutSeconds, String... cmd) throws Exception {
        Path out = Files.createTempFile(dir, "exec", ".out");
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true)
                .redirectOutput(out.toFile()).redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                .start();
        if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException(String.join(" ", cmd) + " hung");
        }
        String text = new String(Files.readAllBytes(out), StandardCharsets.UTF_8);
        if (p.exitValue() != 0) {
            throw new IllegalStateException(String.join(" ", cmd) + " failed: " + text);
        }
        return text;
    }
}
