package com.datadoghq.profiler.tracer;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.jar.JarFile;
import java.util.zip.Deflater;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import java.util.zip.ZipOutputStream;

/**
 * Builds a copy of dd-java-agent whose embedded java-profiler is ours.
 *
 * <p>The agent keeps java-profiler in its {@code shared} directory: every class as
 * {@code <shared>/com/datadoghq/profiler/X.classdata} and the native library as
 * {@code <shared>/META-INF/native-libs/<platform>/libjavaProfiler.so} (linux-x64, linux-x64-musl,
 * linux-arm64, linux-arm64-musl in 1.56.0). Its class loader finds entries through
 * {@code dd-java-agent.index}, a prefix trie of package names; {@code com.datadoghq.profiler.} (and
 * so every subpackage) and {@code META-INF.native-libs.} map to the {@code shared} directory, so the index stays as
 * it is as long as our files live under those prefixes, which {@link #verifyIndex} checks with the
 * agent's own {@code AgentJarIndex}.
 *
 * <p>The copy drops every file under {@code <shared>/com/datadoghq/profiler/} and every
 * {@code libjavaProfiler.so} (all platforms: on a platform we do not ship, loading fails instead of
 * quietly running the tracer's profiler), then adds everything our jar (com.datadoghq:ddprof) has under
 * {@code com/datadoghq/profiler/} ({@code .class} renamed {@code .classdata}, other resources as they
 * are) and under {@code META-INF/native-libs/}, all below the {@code shared} directory.
 */
final class TracerAgentJar {
    /** The agent's directory for classes it loads apart from the application's. */
    static final String SECTION = "shared";
    static final String PROFILER_DIR = SECTION + "/com/datadoghq/profiler/";
    static final String NATIVE_DIR = SECTION + "/META-INF/native-libs/";
    static final String LIBRARY = "libjavaProfiler.so";

    /** What {@link #patch} did, for the test's report. */
    static final class Patch {
        final List<String> removed = new ArrayList<>();
        final List<String> kept = new ArrayList<>();
        /** Entry written into the agent -> entry of our jar it came from. */
        final Map<String, String> added = new LinkedHashMap<>();

        String describe() {
            return "removed " + removed.size() + " tracer entries (" + removed.stream().filter(n -> n.endsWith(".so")).count()
                    + " libraries), added " + added.size() + " of ours" + (kept.isEmpty() ? "" : ", KEPT " + kept);
        }
    }

    private TracerAgentJar() {}

    /**
     * @param keep names of tracer classes to leave in (e.g. {@code ContextSetter}), for trying the
     *     harness on a mixed jar; empty for the real test
     */
    static Patch patch(Path agentJar, Path libJar, Path out, java.util.Set<String> keep) throws IOException {
        Patch patch = new Patch();
        Files.createDirectories(out.getParent());
        Path tmp = out.resolveSibling(out.getFileName() + ".tmp");
        try (ZipFile agent = new ZipFile(agentJar.toFile());
             ZipFile lib = new ZipFile(libJar.toFile());
             ZipOutputStream zos = new ZipOutputStream(Files.newOutputStream(tmp))) {
            zos.setLevel(Deflater.BEST_SPEED);
            for (Enumeration<? extends ZipEntry> en = agent.entries(); en.hasMoreElements(); ) {
                ZipEntry e = en.nextElement();
                String name = e.getName();
                boolean ours = !e.isDirectory()
                        && (name.startsWith(PROFILER_DIR) || (name.startsWith(NATIVE_DIR) && name.endsWith("/" + LIBRARY)));
                String simple = name.substring(name.lastIndexOf('/') + 1).replace(".classdata", "");
                if (ours && keep.contains(simple.contains("$") ? simple.substring(0, simple.indexOf('$')) : simple)) {
                    patch.kept.add(name);
                } else if (ours) {
                    patch.removed.add(name);
                    continue;
                }
                copy(agent, e, name, zos);
            }
            for (Enumeration<? extends ZipEntry> en = lib.entries(); en.hasMoreElements(); ) {
                ZipEntry e = en.nextElement();
                String name = e.getName();
                if (e.isDirectory()) {
                    continue;
                }
                String target;
                if (name.startsWith("com/datadoghq/profiler/")) {
                    target = SECTION + "/" + (name.endsWith(".class") ? name + "data" : name);
                } else if (name.startsWith("META-INF/native-libs/")) {
                    target = SECTION + "/" + name;
                } else {
                    continue;
                }
                copy(lib, e, target, zos);
                patch.added.put(target, name);
            }
        }
        Files.move(tmp, out, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        if (patch.added.keySet().stream().noneMatch(n -> n.endsWith("/" + LIBRARY))) {
            throw new IllegalStateException(libJar + " has no META-INF/native-libs/*/" + LIBRARY);
        }
        if (patch.removed.stream().noneMatch(n -> n.endsWith("JavaProfiler.classdata"))) {
            throw new IllegalStateException(agentJar + " has no " + PROFILER_DIR + "JavaProfiler.classdata: its layout changed");
        }
        return patch;
    }

    private static void copy(ZipFile from, ZipEntry e, String name, ZipOutputStream zos) throws IOException {
        ZipEntry n = new ZipEntry(name);
        n.setTime(e.getTime());
        zos.putNextEntry(n);
        if (!e.isDirectory()) {
            try (InputStream in = from.getInputStream(e)) {
                transfer(in, zos);
            }
        }
        zos.closeEntry();
    }

    private static void transfer(InputStream in, OutputStream out) throws IOException {
        byte[] buf = new byte[1 << 16];
        int n;
        while ((n = in.read(buf)) > 0) {
            out.write(buf, 0, n);
        }
    }

    /**
     * Asks the agent's own index ({@code datadog.trace.bootstrap.AgentJarIndex}, loaded from the
     * patched jar) where it would look for each file we added; returns the mismatches (empty when
     * the agent finds every one of our classes and resources).
     */
    static List<String> verifyIndex(Path patchedJar, Patch patch) throws Exception {
        List<String> problems = new ArrayList<>();
        try (URLClassLoader cl = new URLClassLoader(new URL[] {patchedJar.toUri().toURL()}, ClassLoader.getPlatformClassLoader());
             JarFile jar = new JarFile(patchedJar.toFile())) {
            Class<?> indexClass = Class.forName("datadog.trace.bootstrap.AgentJarIndex", true, cl);
            Object index = indexClass.getMethod("readIndex", JarFile.class).invoke(null, jar);
            Method classEntry = indexClass.getMethod("classEntryName", String.class);
            Method resourceEntry = indexClass.getMethod("resourceEntryName", String.class);
            for (Map.Entry<String, String> a : patch.added.entrySet()) {
                String source = a.getValue();
                Object found = source.endsWith(".class")
                        ? classEntry.invoke(index, source.substring(0, source.length() - ".class".length()).replace('/', '.'))
                        : resourceEntry.invoke(index, source);
                if (!a.getKey().equals(found)) {
                    problems.add(source + ": the agent's index looks for " + found + ", we wrote " + a.getKey());
                }
            }
        }
        return problems.isEmpty() ? Collections.emptyList() : problems;
    }
}
