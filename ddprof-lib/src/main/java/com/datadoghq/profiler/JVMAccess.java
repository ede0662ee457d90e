package com.datadoghq.profiler;

import java.lang.management.ManagementFactory;
import java.lang.management.PlatformManagedObject;
import java.lang.reflect.Method;
import java.util.function.Consumer;

/**
 * Reads and writes HotSpot's JVM flags, also those no public API may change.
 *
 * <p>Flags are found in place through the JVM's VMStructs flag table by the native library
 * (loaded as {@link LibraryLoader} says), and typed: a getter of the wrong type answers
 * {@code null}/{@code false}/0, as for a flag that does not exist, and never throws.
 * <ul>
 *   <li>{@code setStringFlag} writes {@code ccstr}/{@code ccstrlist} flags such as
 *       {@code OnError}, {@code OnOutOfMemoryError} or {@code ErrorFile}, which
 *       {@code HotSpotDiagnosticMXBean.setVMOption} refuses. The flag then points at a copy
 *       of the value that is never freed (HotSpot may read it at any time, e.g. while
 *       reporting a crash): set such flags once, not in a loop.</li>
 *   <li><em>Manageable</em> flags (those {@code setVMOption} accepts, e.g.
 *       {@code HeapDumpPath}) are set through {@code HotSpotDiagnosticMXBean}, HotSpot's own
 *       setter, which owns their memory.</li>
 *   <li>{@code setBooleanFlag} writes any bool flag. Numeric flags are read-only.</li>
 * </ul>
 * Where the native library cannot be loaded or this JVM has no VMStructs flag table (not
 * HotSpot), {@link #isActive()} is false, the error handler is told why, and flags go through
 * {@code HotSpotDiagnosticMXBean} if there is one: every flag can then be read (as text, so
 * without type checks), but only manageable flags can be written; writes to the others do
 * nothing. Without that MXBean either, {@link #flags()} is {@link Flags#NONE}.
 *
 * <p>Callers should read a flag back after setting it: a write that cannot be done is
 * skipped silently, as upstream's.
 */
public final class JVMAccess {
    private static final class SingletonHolder {
        static final JVMAccess INSTANCE = new JVMAccess(null, null, null);
    }

    /** JVM flags by name (as HotSpot spells them, case-sensitive). */
    public interface Flags {
        /** Reads nothing, writes nothing. */
        Flags NONE = new Flags() {
            @Override
            public String getStringFlag(String name) {
                return null;
            }

            @Override
            public void setStringFlag(String name, String value) {
            }

            @Override
            public boolean getBooleanFlag(String name) {
                return false;
            }

            @Override
            public void setBooleanFlag(String name, boolean value) {
            }

            @Override
            public long getIntFlag(String name) {
                return 0;
            }

            @Override
            public double getFloatFlag(String name) {
                return 0;
            }
        };

        /** A {@code ccstr}/{@code ccstrlist} flag's value; {@code null} if unset, absent or not a string flag. */
        String getStringFlag(String name);

        /** Sets a string flag; does nothing for a {@code null} name or value, or a flag that is absent or not a string. */
        void setStringFlag(String name, String value);

        /** A bool flag's value; {@code false} if absent or not a bool. */
        boolean getBooleanFlag(String name);

        /** Sets a bool flag; does nothing if it is absent or not a bool. */
        void setBooleanFlag(String name, boolean value);

        /** An integer flag (int, uint, intx, uintx, uint64_t, size_t); 0 if absent or not an integer. */
        long getIntFlag(String name);

        /** A double flag; 0 if absent or not a double. */
        double getFloatFlag(String name);
    }

    /** The shared instance (the library from the default location, problems printed to stderr). */
    public static JVMAccess getInstance() {
        return SingletonHolder.INSTANCE;
    }

    // flagInfo0: the flag's JVMFlag type number in the low byte, MANAGEABLE above.
    private static final int INFO_NOT_FOUND = -1;
    private static final int INFO_TYPE_MASK = 0xff;
    private static final int INFO_MANAGEABLE = 0x100;
    private static final int TYPE_CCSTR = 8;
    private static final int TYPE_CCSTRLIST = 9;
    private static final int TYPE_BOOL = 0;

    private final Flags flags;
    private final boolean active;

    /**
     * Loads the native library (or uses the one already loaded) and reaches the JVM's flags.
     *
     * @param libLocation the library file, or {@code null} for the default (see {@link LibraryLoader})
     * @param scratchDir where the bundled library may be extracted, or {@code null}
     * @param errorHandler told why flags cannot be written natively; {@code null}: a warning on stderr
     */
    public JVMAccess(String libLocation, String scratchDir, Consumer<Throwable> errorHandler) {
        Throwable problem = null;
        boolean nativeFlags = false;
        LibraryLoader.Result loaded = LibraryLoader.builder()
                .withLibraryLocation(libLocation)
                .withScratchDir(scratchDir)
                .load();
        if (loaded.succeeded) {
            try {
                nativeFlags = healthCheck0();
                if (!nativeFlags) {
                    problem = new IllegalStateException("this JVM exposes no VMStructs flag table: "
                            + "only manageable flags can be written");
                }
            } catch (Throwable t) {
                problem = t; // e.g. UnsatisfiedLinkError: a library without these natives
            }
        } else {
            problem = loaded.error != null ? loaded.error
                    : new IllegalStateException("the native library is not available");
        }
        Flags found;
        if (nativeFlags) {
            found = new NativeFlags();
        } else {
            found = Flags.NONE;
            try {
                found = new MXBeanFlags(Diagnostic.bean());
            } catch (Throwable t) {
                if (problem == null) {
                    problem = t;
                }
            }
        }
        if (problem != null) {
            if (errorHandler != null) {
                errorHandler.accept(problem);
            } else {
                System.err.println("[ddprof] [WARNING] JVM flag access is limited: " + problem);
            }
        }
        this.flags = found;
        this.active = nativeFlags;
    }

    /** The JVM's flags (see the class comment for what each mode can do). */
    public Flags flags() {
        return flags;
    }

    /** Whether flags are reached natively, so non-manageable string flags can be written. */
    public boolean isActive() {
        return active;
    }

    /** Flags through the VMStructs flag table (the natives of {@code api/jvm_flags.rs}). */
    private final class NativeFlags implements Flags {
        @Override
        public String getStringFlag(String name) {
            return name == null ? null : findStringJVMFlag0(name);
        }

        @Override
        public void setStringFlag(String name, String value) {
            if (name == null || value == null) {
                return;
            }
            int info = flagInfo0(name);
            int type = info & INFO_TYPE_MASK;
            if (info <= INFO_NOT_FOUND || (type != TYPE_CCSTR && type != TYPE_CCSTRLIST)) {
                return;
            }
            if ((info & INFO_MANAGEABLE) != 0) {
                Diagnostic.set(name, value);
            } else {
                setStringJVMFlag0(name, value);
            }
        }

        @Override
        public boolean getBooleanFlag(String name) {
            return name != null && findBooleanJVMFlag0(name);
        }

        @Override
        public void setBooleanFlag(String name, boolean value) {
            if (name == null) {
                return;
            }
            int info = flagInfo0(name);
            if (info <= INFO_NOT_FOUND || (info & INFO_TYPE_MASK) != TYPE_BOOL) {
                return;
            }
            if ((info & INFO_MANAGEABLE) != 0) {
                // HotSpot's setter also records the origin and checks the flag's constraints.
                Diagnostic.set(name, Boolean.toString(value));
            } else {
                setBooleanJVMFlag0(name, value);
            }
        }

        @Override
        public long getIntFlag(String name) {
            return name == null ? 0 : findIntJVMFlag0(name);
        }

        @Override
        public double getFloatFlag(String name) {
            return name == null ? 0 : findFloatJVMFlag0(name);
        }
    }

    /**
     * {@code HotSpotDiagnosticMXBean}, reached reflectively (so this class also loads where
     * {@code com.sun.management} is absent) and only when first needed (JMX is not started
     * just because a JVMAccess exists).
     */
    private static final class Diagnostic {
        private static volatile Diagnostic instance;

        final Object bean;
        final Method getVMOption;
        final Method setVMOption;
        final Method getValue;

        @SuppressWarnings("unchecked")
        private Diagnostic() throws ReflectiveOperationException {
            Class<? extends PlatformManagedObject> type = (Class<? extends PlatformManagedObject>)
                    Class.forName("com.sun.management.HotSpotDiagnosticMXBean");
            bean = ManagementFactory.getPlatformMXBean(type);
            if (bean == null) {
                throw new IllegalStateException("HotSpotDiagnosticMXBean is not available");
            }
            getVMOption = type.getMethod("getVMOption", String.class);
            setVMOption = type.getMethod("setVMOption", String.class, String.class);
            getValue = Class.forName("com.sun.management.VMOption").getMethod("getValue");
        }

        static Diagnostic bean() throws ReflectiveOperationException {
            Diagnostic d = instance;
            if (d == null) {
                synchronized (Diagnostic.class) {
                    d = instance;
                    if (d == null) {
                        d = new Diagnostic();
                        instance = d;
                    }
                }
            }
            return d;
        }

        /** The flag's value as text, or null if unknown. */
        String read(String name) {
            try {
                return (String) getValue.invoke(getVMOption.invoke(bean, name));
            } catch (ReflectiveOperationException | RuntimeException e) {
                return null;
            }
        }

        /** Sets a manageable flag; anything else (or a bad value) is ignored. */
        static void set(String name, String value) {
            try {
                Diagnostic d = bean();
                d.setVMOption.invoke(d.bean, name, value);
            } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
                // not manageable after all, a bad value, or no MXBean: skipped, as documented
            }
        }
    }

    /** Flags through {@code HotSpotDiagnosticMXBean} only: the fallback without VMStructs. */
    private static final class MXBeanFlags implements Flags {
        private final Diagnostic diagnostic;

        MXBeanFlags(Diagnostic diagnostic) {
            this.diagnostic = diagnostic;
        }

        private String read(String name) {
            return name == null ? null : diagnostic.read(name);
        }

        @Override
        public String getStringFlag(String name) {
            return read(name);
        }

        @Override
        public void setStringFlag(String name, String value) {
            if (name != null && value != null) {
                Diagnostic.set(name, value);
            }
        }

        @Override
        public boolean getBooleanFlag(String name) {
            return Boolean.parseBoolean(read(name));
        }

        @Override
        public void setBooleanFlag(String name, boolean value) {
            if (name != null) {
                Diagnostic.set(name, Boolean.toString(value));
            }
        }

        @Override
        public long getIntFlag(String name) {
            String value = read(name);
            if (value == null) {
                return 0;
            }
            try {
                return Long.parseLong(value);
            } catch (NumberFormatException e) {
                try {
                    // uintx/size_t flags above Long.MAX_VALUE
                    return Long.parseUnsignedLong(value);
                } catch (NumberFormatException e2) {
                    return 0;
                }
            }
        }

        @Override
        public double getFloatFlag(String name) {
            String value = read(name);
            if (value == null) {
                return 0;
            }
            try {
                return Double.parseDouble(value);
            } catch (NumberFormatException e) {
                return 0;
            }
        }
    }

    /** Whether the library is loaded and found the VMStructs flag table. */
    private native boolean healthCheck0();

    /** -2: no flag table; -1: no such flag; else the type number, | 0x100 when manageable. */
    private native int flagInfo0(String name);

    private native String findStringJVMFlag0(String name);

    private native void setStringJVMFlag0(String name, String value);

    private native boolean findBooleanJVMFlag0(String name);

    private native void setBooleanJVMFlag0(String name, boolean value);

    private native long findIntJVMFlag0(String name);

    private native double findFloatJVMFlag0(String name);
}
