package com.datadoghq.profiler.testing;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Test libraries written in C, kept as test resources and built with the system's compiler. */
public final class CLibrary {
    private CLibrary() {}

    /**
     * Compiles the resource {@code /DIR/NAME.c} into {@code dir/libNAME.so} with {@code flags}
     * (besides {@code -shared -fPIC}); null without a C compiler ({@code cc}).
     */
    public static Path compile(Path dir, String resource, String... flags) throws IOException, InterruptedException {
        String name = resource.substring(resource.lastIndexOf('/') + 1);
        Path source = dir.resolve(name + ".c");
        try (InputStream in = CLibrary.class.getResourceAsStream("/" + resource + ".c")) {
            if (in == null) {
                throw new IOException("no test resource /" + resource + ".c");
            }
            Files.copy(in, source, StandardCopyOption.REPLACE_EXISTING);
        }
        Path lib = dir.resolve("lib" + name + ".so");
        List<String> command = new ArrayList<>(Arrays.asList("cc", "-shared", "-fPIC"));
        command.addAll(Arrays.asList(flags));
        command.addAll(Arrays.asList("-o", lib.toString(), source.toString()));
        Process cc;
        try {
            cc = new ProcessBuilder(command).redirectErrorStream(true).start();
        } catch (IOException noCompiler) {
            return null;
        }
        if (!cc.waitFor(60, TimeUnit.SECONDS) || cc.exitValue() != 0) {
            throw new IOException("cc failed: " + new String(cc.getInputStream().readAllBytes()));
        }
        return lib;
    }

    /** [start, end) of {@code symbol} in {@code lib} by binutils' {@code nm -S}; null without nm. */
    public static long[] symbolRange(Path lib, String symbol) throws Exception {
        Process nm;
        try {
            nm = new ProcessBuilder("nm", "-S", "--defined-only", lib.toString()).redirectErrorStream(true).start();
        } catch (java.io.IOException noNm) {
            return null;
        }
        String out = new String(nm.getInputStream().readAllBytes());
        nm.waitFor();
        for (String line : out.split("\n")) {
            String[] f = line.trim().split("\\s+");
            if (f.length == 4 && f[3].equals(symbol)) {
                long start = Long.parseLong(f[0], 16);
                return new long[] {start, start + Long.parseLong(f[1], 16)};
            }
        }
        throw new AssertionError("no " + symbol + " in nm's output:\n" + out);
    }
}
