package com.datadoghq.profiler;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * Finds the native library ({@code libjavaProfiler.so}) and loads it into this JVM, once.
 *
 * <p>Where the library comes from, first match wins:
 * <ol>
 *   <li>an explicit location passed to {@link Builder#withLibraryLocation(String)}
 *       (from {@link JavaProfiler#getInstance(String, String)});</li>
 *   <li>the system property {@value #LIBRARY_PATH_PROPERTY};</li>
 *   <li>a copy that is already mapped into this process, e.g. because the JVM was started with
 *       {@code -agentpath:/path/libjavaProfiler.so=...}, or because the Java API of another class
 *       loader loaded it. Loading that very file again makes {@code dlopen} hand back the
 *       existing mapping, so the agent and the Java API (or two class loaders) share one
 *       profiler instead of each running its own copy. A copy this loader extracted is deleted
 *       once loaded ({@code (deleted)} in {@code /proc/self/maps}); the library keeps a
 *       descriptor on its own file, and the same inode is loaded again through
 *       {@code /proc/self/fd/<n>};</li>
 *   <li>the copy bundled in the jar for this platform ({@value #BUNDLED_RESOURCE} on glibc Linux
 *       x86_64, the only build the jar carries), extracted into the scratch directory (or
 *       {@code java.io.tmpdir}) as a fresh {@code libjavaProfiler-<random>.so} readable only by
 *       its owner, and deleted as soon as {@code System.load} returns (the mapping stays valid),
 *       so that no copy is left behind by {@code Runtime.halt}, {@code kill -9} or a crash. A
 *       file the caller named (the first two cases) is never deleted.</li>
 * </ol>
 *
 * <p>The library is linked {@code -z nodelete}: once loaded it stays mapped for the life of the
 * process, even if the class loader that loaded it is collected (its signal handlers, JVMTI
 * callbacks and threads keep pointing into it).
 *
 * <p>Only one library is ever loaded per class loader of this class: once a load succeeded,
 * later calls report success without loading anything, whatever location they name. A failed
 * load may be retried.
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

    /**
     * The file the library was loaded from, or {@code null} while none is loaded. An extracted
     * copy no longer exists (it is deleted once loaded).
     */
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
                    // That name is bound to another class loader (the JDK allows a library name
                    // to one loader at a time): the same inode under a name of our own, else a
                    // private copy.
                    Result shared = loadThroughOwnDescriptor(mapped);
                    if (shared != null) {
                        return shared;
                    }
                }
            }
            Path extracted = extractBundled(scratchDir, false);
            try {
                return loadFrom(extracted);
            } finally {
                // Mapped now (or never will be): nothing needs the file any more, and a copy
                // left behind by a killed JVM would stay in the scratch directory for good.
                Files.deleteIfExists(extracted);
            }
        } catch (Throwable t) {
            return new Result(false, t);
        }
    }

    // A descriptor of this class loader's own on the mapped, deleted library (see
    // loadThroughOwnDescriptor); kept open as long as this class is loaded. Guarded by
    // LibraryLoader.class.
    private static InputStream ownDescriptor;

    /**
     * Loads the deleted library that {@code fdLink} (a {@code /proc/self/fd/<n>} link) reaches,
     * through a descriptor this class loader opens and keeps: its own {@code /proc/self/fd/<m>},
     * a name no other class loader holds. {@code null} if that fails.
     */
    private static Result loadThroughOwnDescriptor(Path fdLink) {
        if (!fdLink.startsWith("/proc/self/fd")) {
            return null; // a file with a name of its own: a second name would canonicalise to it
        }
        try {
            String target = Files.readSymbolicLink(fdLink).toString();
            Object inode = Files.getAttribute(fdLink, "unix:ino");
            List<Path> before = descriptorsOf(target, inode);
            InputStream held = Files.newInputStream(fdLink);
            for (Path fd : descriptorsOf(target, inode)) {
                if (!before.contains(fd)) {
                    try {
                        Result r = loadFrom(fd);
                        ownDescriptor = held;
                        return r;
                    } catch (UnsatisfiedLinkError e) {
                        break;
                    }
                }
            }
            held.close();
        } catch (IOException | RuntimeException e) {
            // give up: extract a private copy
        }
        return null;
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

    private static final String DELETED = " (deleted)";

    /**
     * A {@code libjavaProfiler*.so} file already mapped into this process (Linux only), or
     * {@code null}. A mapped file that was deleted (an extracted copy, see the class comment)
     * is reached through a {@code /proc/self/fd/<n>} descriptor open on the same inode (the
     * library keeps one); without one it is ignored.
     */
    static Path alreadyMappedCopy() {
        Path maps = Paths.get("/proc/self/maps");
        if (!Files.isReadable(maps)) {
            return null;
        }
        String deletedTarget = null;
        long deletedInode = -1;
        try (BufferedReader reader = Files.newBufferedReader(maps, StandardCharsets.ISO_8859_1)) {
            String line;
            while ((line = reader.readLine()) != null) {
                int slash = line.indexOf('/');
                if (slash < 0) {
                    continue;
                }
                String file = line.substring(slash);
                boolean deleted = file.endsWith(DELETED);
                if (deleted) {
                    file = file.substring(0, file.length() - DELETED.length());
                }
                String name = file.substring(file.lastIndexOf('/') + 1);
                if (!name.startsWith(LIBRARY_BASE_NAME) || !name.endsWith(".so")) {
                    continue;
                }
                if (!deleted) {
                    Path path = Paths.get(file);
                    if (Files.isRegularFile(path)) {
                        return path;
                    }
                } else if (deletedTarget == null) {
                    deletedTarget = line.substring(slash);
                    deletedInode = inodeField(line.substring(0, slash));
                }
            }
        } catch (IOException | RuntimeException e) {
            return null; // not fatal: fall back to extracting the bundled copy
        }
        if (deletedTarget == null) {
            return null;
        }
        List<Path> fds = descriptorsOf(deletedTarget, deletedInode < 0 ? null : deletedInode);
        return fds.isEmpty() ? null : fds.get(0);
    }

    /** The inode, the fifth field of a maps line (given up to its path); -1 if unreadable. */
    private static long inodeField(String fields) {
        String[] f = fields.trim().split("\\s+");
        try {
            return f.length >= 5 ? Long.parseLong(f[4]) : -1;
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /**
     * The {@code /proc/self/fd/<n>} links of this process that read {@code target} (a deleted
     * file: {@code "/path (deleted)"}) and open inode {@code inode} (any, if {@code null}), in
     * descriptor order.
     */
    private static List<Path> descriptorsOf(String target, Object inode) {
        List<Path> found = new ArrayList<>();
        Path fds = Paths.get("/proc/self/fd");
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(fds)) {
            for (Path fd : entries) {
                try {
                    if (target.equals(Files.readSymbolicLink(fd).toString())
                            && (inode == null || inode.equals(Files.getAttribute(fd, "unix:ino")))) {
                        found.add(fd);
                    }
                } catch (IOException | RuntimeException e) {
                    // closed meanwhile (the stream's own descriptor), or not ours to read
                }
            }
        } catch (IOException | RuntimeException e) {
            // no /proc/self/fd: extract a copy instead
        }
        found.sort(Comparator.comparingInt(p -> fdNumber(p)));
        return found;
    }

    private static int fdNumber(Path fd) {
        try {
            return Integer.parseInt(fd.getFileName().toString());
        } catch (NumberFormatException e) {
            return Integer.MAX_VALUE;
        }
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
        return extractBundled(scratchDir, true);
    }

    /** The bundled library of this platform, extracted; see {@link #extractBundledLibrary}. */
    private static Path extractBundled(String scratchDir, boolean deleteOnExit) throws IOException {
        OperatingSystem os = OperatingSystem.current();
        boolean musl = os == OperatingSystem.linux && os.isMusl();
        return extractBundledLibrary(scratchDir, bundledResource(os, Arch.current(), musl), deleteOnExit)
                .toAbsolutePath();
    }

    /**
     * Copies {@code resource} out of the class path into a new private file in
     * {@code scratchDir} (or {@code java.io.tmpdir}) and returns its path. With
     * {@code deleteOnExit} the file is marked for deletion at JVM exit. Does not load it.
     *
     * @throws IllegalStateException if the jar holds no such resource
     * @throws IOException if the copy fails
     */
    static Path extractBundledLibrary(String scratchDir, String resource, boolean deleteOnExit)
            throws IOException {
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
            if (deleteOnExit) {
                file.toFile().deleteOnExit();
            }
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
