package com.datadoghq.profiler;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * Finds the native library ({@code libjavaProfiler.so}) and loads it into this JVM, once.
 *
 * <p>Where the library comes from, first match wins:
 * <ol>
 *   <li>an explicit location passed to {@link Builder#withLibraryLocation(String)}
 *       (from {@link JavaProfiler#getInstance(String, String)});</li>
 *   <li>the system property {@value #LIBRARY_PATH_PROPERTY};</li>
 *   <li>a copy that is already mapped into this process, e.g. because the JVM was started with
 *       {@code -agentpath:/path/libjavaProfiler.so=...}. Loading that very file again makes
 *       {@code dlopen} hand back the existing mapping, so the agent and the Java API share one
 *       profiler instead of each running its own copy;</li>
 *   <li>the copy bundled in the jar for this platform ({@link #resolveLibraryPath(String)}:
 *       {@value #BUNDLED_RESOURCE} on glibc Linux x86_64, the only build the jar carries),
 *       extracted into the scratch directory (or {@code java.io.tmpdir}) as a fresh
 *       {@code libjavaProfiler-<random>.so} readable only by its owner and deleted when the JVM
 *       exits.</li>
 * </ol>
 *
 * <p>Only one library is ever loaded per JVM: once a load succeeded, later calls report success
 * without loading anything, whatever location they name. A failed load may be retried.
 */
public final class LibraryLoader {
    /** Path of the bundled library inside the jar (glibc Linux on x86_64). */
    public static final String BUNDLED_RESOURCE = "/META-INF/native-libs/linux-x64/libjavaProfiler.so";
    /** Folder of the bundled libraries: one {@code <os>-<arch>[-musl]} folder per build. */
    private static final String NATIVE_LIBS = "/META-INF/native-libs";
    /** System property naming the library file to load instead of the bundled one. */
    public static final String LIBRARY_PATH_PROPERTY = "ddprof.native.lib";

    private static final String LIBRARY_BASE_NAME = "libjavaProfiler";

    /** The outcome of {@link Builder#load()}. */
    public static final class Result {
        public static final Result SUCCESS = new Result(true, null);
        public static final Result UNAVAILABLE = new Result(false, null);

        public final boolean succeeded;
        public final Throwable error;

        public Result(boolean succeeded, Throwable error) {
            this.succeeded = succeeded;
            this.error = error;
        }

        @Override
        public String toString() {
            return succeeded ? "loaded" : "not loaded" + (error == null ? "" : ": " + error);
        }
    }

    /** Collects the options of one load request. */
    public static final class Builder {
        private String libraryLocation;
        private String scratchDir;

        private Builder() {
        }

        /** An explicit library file; {@code null} means: find it (see the class comment). */
        public Builder withLibraryLocation(String libraryLocation) {
            this.libraryLocation = libraryLocation;
            return this;
        }

        /** Where to extract the bundled library; {@code null} means {@code java.io.tmpdir}. */
        public Builder withScratchDir(String scratchDir) {
            this.scratchDir = scratchDir;
            return this;
        }

        /** Loads the library unless one is loaded already. Never throws. */
        public Result load() {
            return loadLibrary(libraryLocation, scratchDir);
        }
    }

    // Guarded by LibraryLoader.class.
    private static String loadedFrom;

    private LibraryLoader() {
    }

    public static Builder builder() {
        return new Builder();
    }

    /** The file the library was loaded from, or {@code null} while none is loaded. */
    public static synchronized String loadedLibraryPath() {
        return loadedFrom;
    }

    private static synchronized Result loadLibrary(String libraryLocation, String scratchDir) {
        if (loadedFrom != null) {
            return Result.SUCCESS;
        }
        try {
            Path explicit = explicitLocation(libraryLocation);
            if (explicit != null) {
                return loadFrom(explicit);
            }
            Path mapped = alreadyMappedCopy();
            if (mapped != null) {
                try {
                    return loadFrom(mapped);
                } catch (UnsatisfiedLinkError e) {
                    // e.g. that file is already bound to another class loader: use a private copy.
                }
            }
            return loadFrom(resolveLibraryPath(scratchDir));
        } catch (Throwable t) {
            return new Result(false, t);
        }
    }

    private static Result loadFrom(Path path) {
        String absolute = path.toAbsolutePath().toString();
        System.load(absolute);
        loadedFrom = absolute;
        return Result.SUCCESS;
    }

    private static Path explicitLocation(String libraryLocation) {
        if (libraryLocation != null && !libraryLocation.isEmpty()) {
            return Paths.get(libraryLocation);
        }
        String fromProperty = System.getProperty(LIBRARY_PATH_PROPERTY);
        if (fromProperty != null && !fromProperty.trim().isEmpty()) {
            return Paths.get(fromProperty.trim());
        }
        return null;
    }

    /**
     * A {@code libjavaProfiler*.so} file already mapped into this process (Linux only), or
     * {@code null}. A file that was deleted after it was mapped cannot be opened again and is
     * ignored.
     */
    static Path alreadyMappedCopy() {
        Path maps = Paths.get("/proc/self/maps");
        if (!Files.isReadable(maps)) {
            return null;
        }
        try (BufferedReader reader = Files.newBufferedReader(maps, StandardCharsets.ISO_8859_1)) {
            String line;
            while ((line = reader.readLine()) != null) {
                int slash = line.indexOf('/');
                if (slash < 0 || line.endsWith("(deleted)")) {
                    continue;
                }
                String file = line.substring(slash);
                String name = file.substring(file.lastIndexOf('/') + 1);
                if (name.startsWith(LIBRARY_BASE_NAME) && name.endsWith(".so")) {
                    Path path = Paths.get(file);
                    if (Files.isRegularFile(path)) {
                        return path;
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            // Not fatal: fall back to extracting the bundled copy.
        }
        return null;
    }

    /**
     * The jar path of the library built for {@code os} and {@code arch}:
     * {@code /META-INF/native-libs/<os>-<arch>[-musl]/libjavaProfiler.<so|dylib>}.
     */
    static String bundledResource(OperatingSystem os, Arch arch, boolean musl) {
        return NATIVE_LIBS + "/" + os.name() + "-" + arch.name() + (musl ? "-musl" : "") + "/"
                + LIBRARY_BASE_NAME + (os == OperatingSystem.macos ? ".dylib" : ".so");
    }

    /**
     * Extracts the library bundled for this OS, architecture and C library (musl or not) into
     * a new private file in {@code scratchDir} (or {@code java.io.tmpdir}) and returns its
     * absolute path, without loading it: e.g. to start another JVM with
     * {@code -agentpath:<path>}. The file is deleted when this JVM exits; each call makes a
     * new one.
     *
     * @param scratchDir where to put the file; {@code null}: {@code java.io.tmpdir}
     * @throws IllegalStateException if the jar holds no library for this platform
     * @throws IOException if the platform's C library cannot be told or the copy fails
     */
    public static Path resolveLibraryPath(String scratchDir) throws IOException {
        OperatingSystem os = OperatingSystem.current();
        boolean musl = os == OperatingSystem.linux && os.isMusl();
        return extractBundledLibrary(scratchDir, bundledResource(os, Arch.current(), musl)).toAbsolutePath();
    }

    /**
     * Copies {@code resource} out of the class path into a new private file in
     * {@code scratchDir} (or {@code java.io.tmpdir}) and returns its path. The file is marked for
     * deletion at JVM exit. Does not load it.
     *
     * @throws IllegalStateException if the jar holds no such resource
     * @throws IOException if the copy fails
     */
    static Path extractBundledLibrary(String scratchDir, String resource) throws IOException {
        Path dir = Paths.get(scratchDir != null ? scratchDir : System.getProperty("java.io.tmpdir"));
        try (InputStream in = LibraryLoader.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException(resource + " not found on the class path; pass the library "
                        + "location explicitly or set -D" + LIBRARY_PATH_PROPERTY + "=<path>");
            }
            Files.createDirectories(dir);
            Path file;
            try {
                file = Files.createTempFile(dir, LIBRARY_BASE_NAME + "-", ".so",
                        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            } catch (UnsupportedOperationException notPosix) {
                file = Files.createTempFile(dir, LIBRARY_BASE_NAME + "-", ".so");
            }
            file.toFile().deleteOnExit();
            // Write into the file just created (Files.copy with REPLACE_EXISTING would replace it
            // by a new file with default permissions).
            try (OutputStream out = Files.newOutputStream(file, StandardOpenOption.WRITE,
                    StandardOpenOption.TRUNCATE_EXISTING)) {
                byte[] buffer = new byte[64 * 1024];
                int n;
                while ((n = in.read(buffer)) > 0) {
                    out.write(buffer, 0, n);
                }
            } catch (IOException e) {
                Files.deleteIfExists(file);
                throw e;
            }
            return file;
        }
    }
}
