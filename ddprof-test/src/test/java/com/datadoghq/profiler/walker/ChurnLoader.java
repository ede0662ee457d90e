package com.datadoghq.profiler.walker;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import com.datadoghq.profiler.testing.IsolatingLoader;

/**
 * Defines its own copy of every class whose name starts with {@link #PREFIX} (child first, from
 * the parent's class files), and delegates everything else. Dropping the loader lets its classes
 * and their compiled code unload.
 */
public final class ChurnLoader extends ClassLoader {
    public static final String PREFIX = StressChurn.class.getName();
    public static final AtomicLong DEFINED = new AtomicLong();
    private static final Map<String, byte[]> BYTES = new ConcurrentHashMap<>();

    static {
        registerAsParallelCapable();
    }

    public ChurnLoader(ClassLoader parent) {
        super(parent);
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
        if (!name.startsWith(PREFIX)) {
            return super.loadClass(name, resolve);
        }
        synchronized (getClassLoadingLock(name)) {
            Class<?> c = findLoadedClass(name);
            if (c == null) {
                byte[] b = BYTES.computeIfAbsent(name, IsolatingLoader::classBytes);
                c = defineClass(name, b, 0, b.length);
                DEFINED.incrementAndGet();
            }
            if (resolve) {
                resolveClass(c);
            }
            return c;
        }
    }
}
