package com.datadoghq.profiler.testing;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;

/**
 * Defines its own copy of the named classes (child first, from the class files of the test
 * classes) and delegates everything else to its parent. Each loader makes a new, separately
 * unloadable class; dropping the loader and every instance lets the class unload.
 */
public final class IsolatingLoader extends ClassLoader {
    private final Set<String> own;

    public IsolatingLoader(String... names) {
        super(IsolatingLoader.class.getClassLoader());
        this.own = new HashSet<>(Arrays.asList(names));
    }

    /** A fresh copy of {@code type} in a new loader, instantiated with its no-arg constructor. */
    public static <T> T newInstance(Class<?> type, Class<T> as) {
        try {
            Class<?> c = new IsolatingLoader(type.getName()).loadClass(type.getName());
            return as.cast(c.getDeclaredConstructor().newInstance());
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
        if (!own.contains(name)) {
            return super.loadClass(name, resolve);
        }
        synchronized (getClassLoadingLock(name)) {
            Class<?> c = findLoadedClass(name);
            if (c == null) {
                byte[] b = classBytes(name);
                c = defineClass(name, b, 0, b.length);
            }
            if (resolve) {
                resolveClass(c);
            }
            return c;
        }
    }

    /** The class file of a test class. */
    public static byte[] classBytes(String name) {
        String resource = name.replace('.', '/') + ".class";
        try (InputStream in = IsolatingLoader.class.getClassLoader().getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException("no class file " + resource);
            }
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            byte[] buf = new byte[8192];
            for (int n; (n = in.read(buf)) > 0; ) {
                out.write(buf, 0, n);
            }
            return out.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
