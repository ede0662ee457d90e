package com.datadoghq.profiler;

import java.lang.management.ManagementFactory;
import java.lang.management.PlatformManagedObject;
import java.lang.reflect.Method;
import java.util.function.Consumer;

/**
 * Read (and, where the JVM allows it, write) JVM flags.
 *
 * <p>This is a deliberately minimal, pure-Java stand-in for upstream's {@code JVMAccess}, which
 * pokes flag storage through VMStructs from native code. Here flags go through the HotSpot
 * diagnostic MXBean ({@code com.sun.management.HotSpotDiagnosticMXBean}), so:
 * <ul>
 *   <li>every flag the JVM reports ({@code -XX:+PrintFlagsFinal}) can be read;</li>
 *   <li>only <em>manageable</em> flags can be written; writes to other flags are ignored;</li>
 *   <li>on a JVM without that MXBean (e.g. OpenJ9) {@link #isActive()} is {@code false} and
 *       {@link #flags()} is {@link Flags#NONE}.</li>
 * </ul>
 * It never loads the native library.
 */
public final class JVMAccess {
    private static final class SingletonHolder {
        static final JVMAccess INSTANCE = new JVMAccess(null, null, null);
    }

    /** JVM flags by name. Getters return {@code null}/{@code false}/0 for an unknown flag. */
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

        String getStringFlag(String name);

        void setStringFlag(String name, String value);

        boolean getBooleanFlag(String name);

        void setBooleanFlag(String name, boolean value);

        long getIntFlag(String name);

        double getFloatFlag(String name);
    }

    /** The shared instance. */
    public static JVMAccess getInstance() {
        return SingletonHolder.INSTANCE;
    }

    private final Flags flags;

    /**
     * Creates an instance. {@code libLocation} and {@code scratchDir} exist for upstream
     * compatibility and are unused (no native library is involved).
     *
     * @param errorHandler gets the reason when flag access is unavailable; {@code null}: stay quiet
     */
    public JVMAccess(String libLocation, String scratchDir, Consumer<Throwable> errorHandler) {
        Flags found = Flags.NONE;
        try {
            found = new MXBeanFlags();
        } catch (Throwable t) {
            if (errorHandler != null) {
                errorHandler.accept(t);
            }
        }
        this.flags = found;
    }

    /** The JVM's flags, or {@link Flags#NONE} if they cannot be reached. */
    public Flags flags() {
        return flags;
    }

    /** Whether flags can be read on this JVM. */
    public boolean isActive() {
        return flags != Flags.NONE;
    }

    /**
     * Flags through {@code HotSpotDiagnosticMXBean}, called reflectively so this class also loads
     * where {@code com.sun.management} is absent.
     */
    private static final class MXBeanFlags implements Flags {
        private final Object bean;
        private final Method getVMOption;
        private final Method setVMOption;
        private final Method getValue;

        @SuppressWarnings("unchecked")
        MXBeanFlags() throws ReflectiveOperationException {
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

        private String read(String name) {
            if (name == null) {
                return null;
            }
            try {
                return (String) getValue.invoke(getVMOption.invoke(bean, name));
            } catch (ReflectiveOperationException | RuntimeException e) {
                return null; // unknown flag
            }
        }

        private void write(String name, String value) {
            if (name == null || value == null) {
                return;
            }
            try {
                setVMOption.invoke(bean, name, value);
            } catch (ReflectiveOperationException | RuntimeException e) {
                // not a manageable flag, or a bad value: ignored, as documented
            }
        }

        @Override
        public String getStringFlag(String name) {
            return read(name);
        }

        @Override
        public void setStringFlag(String name, String value) {
            write(name, value);
        }

        @Override
        public boolean getBooleanFlag(String name) {
            return Boolean.parseBoolean(read(name));
        }

        @Override
        public void setBooleanFlag(String name, boolean value) {
            write(name, Boolean.toString(value));
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
}
