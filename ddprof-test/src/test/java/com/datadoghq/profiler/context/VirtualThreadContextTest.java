package com.datadoghq.profiler.context;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

import com.datadoghq.profiler.testing.ChildJvm;
import com.datadoghq.profiler.testing.TestEnv;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Virtual threads (JDK 21+): initialising the profiler from one fails with an
 * {@code IOException}, as upstream; context writes from one go through the JNI writer (the
 * native record belongs to the carrier, which a virtual thread may leave) and still land.
 */
class VirtualThreadContextTest {
    @Test
    void virtualThreadsCannotInitialiseAndWriteThroughJni(@TempDir Path dir) throws Exception {
        assumeTrue(TestEnv.jdk() >= 21, "virtual threads need JDK 21");
        ChildJvm.Result r = new ChildJvm().classpath(TestEnv.libJar()).timeout(Duration.ofSeconds(60))
                .main(VirtualThreadContextMain.class).run(dir);
        assertEquals(0, r.exitCode, r.describe());
        Map<String, String> seen = new HashMap<>();
        for (String line : r.stdout.split("\n")) {
            int eq = line.indexOf('=');
            if (eq > 0) {
                seen.put(line.substring(0, eq), line.substring(eq + 1));
            }
        }
        assertEquals("IOException: Cannot initialize profiler on a virtual thread", seen.get("first"), r.describe());
        assertEquals("direct", seen.get("main"), r.describe());
        assertEquals("jni span=77 cleared=0", seen.get("virtual"), r.describe());
    }
}
