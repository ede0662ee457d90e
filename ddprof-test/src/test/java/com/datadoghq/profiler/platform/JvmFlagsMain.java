package com.datadoghq.profiler.platform;

import java.lang.management.ManagementFactory;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;

import com.datadoghq.profiler.JVMAccess;
import com.sun.management.HotSpotDiagnosticMXBean;
import com.sun.management.VMOption;

/**
 * Child JVM of {@link JvmFlagsTest}: uses {@link JVMAccess} as a tracer does and prints what
 * it sees as {@code key=value} lines, values read back both through {@code JVMAccess} and
 * through {@code HotSpotDiagnosticMXBean} (HotSpot's own view of the flag).
 *
 * <ul>
 *   <li>{@code flags}: every read, write and refusal the test checks;</li>
 *   <li>{@code oome DIR}: sets {@code OnOutOfMemoryError} to create {@code DIR/oome-%p}, then
 *       runs out of heap;</li>
 *   <li>{@code crash DIR}: sets {@code OnError} to create {@code DIR/crash-%p}, then crashes
 *       the JVM.</li>
 * </ul>
 */
public final class JvmFlagsMain {
    private static final HotSpotDiagnosticMXBean MX =
            ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class);

    private JvmFlagsMain() {
    }

    public static void main(String[] args) throws Exception {
        JVMAccess access = new JVMAccess(null, null, t -> print("error", String.valueOf(t)));
        JVMAccess.Flags flags = access.flags();
        print("pid", String.valueOf(ProcessHandle.current().pid()));
        print("active", String.valueOf(access.isActive()));
        switch (args[0]) {
            case "flags":
                flags(flags);
                break;
            case "oome":
                flags.setStringFlag("OnOutOfMemoryError", "touch " + args[1] + "/oome-%p");
                print("OnOutOfMemoryError.mx", mx("OnOutOfMemoryError"));
                List<long[]> hog = new ArrayList<>();
                try {
                    while (true) {
                        hog.add(new long[1 << 18]);
                    }
                } catch (OutOfMemoryError e) {
                    hog.clear();
                    print("oome", "thrown");
                }
                break;
            case "crash":
                flags.setStringFlag("OnError", "touch " + args[1] + "/crash-%p");
                print("OnError.mx", mx("OnError"));
                System.out.flush();
                crash();
                print("crash", "survived");
                break;
            default:
                throw new IllegalArgumentException(args[0]);
        }
        System.out.flush();
    }

    private static void flags(JVMAccess.Flags flags) {
        // Non-manageable string flags: the point of native access.
        print("OnError.before", flags.getStringFlag("OnError"));
        flags.setStringFlag("OnError", "echo ddprof-on-error %p");
        print("OnError.flags", flags.getStringFlag("OnError"));
        print("OnError.mx", mx("OnError"));
        flags.setStringFlag("OnOutOfMemoryError", "echo ddprof-oome %p");
        print("OnOutOfMemoryError.flags", flags.getStringFlag("OnOutOfMemoryError"));
        print("OnOutOfMemoryError.mx", mx("OnOutOfMemoryError"));
        flags.setStringFlag("ErrorFile", "/tmp/ddprof-hs_err_%p.log");
        print("ErrorFile.flags", flags.getStringFlag("ErrorFile"));
        print("ErrorFile.mx", mx("ErrorFile"));
        // Set twice: the second write replaces the first.
        flags.setStringFlag("OnError", "echo second");
        print("OnError.second", mx("OnError"));

        // A manageable string flag goes through HotSpot's setter (origin MANAGEMENT), also
        // when HotSpot's own setter ran in between.
        flags.setStringFlag("HeapDumpPath", "/tmp/ddprof-a.hprof");
        MX.setVMOption("HeapDumpPath", "/tmp/ddprof-b.hprof");
        flags.setStringFlag("HeapDumpPath", "/tmp/ddprof-c.hprof");
        print("HeapDumpPath.flags", flags.getStringFlag("HeapDumpPath"));
        print("HeapDumpPath.mx", mx("HeapDumpPath"));
        print("HeapDumpPath.origin", MX.getVMOption("HeapDumpPath").getOrigin().toString());

        // Bool flags: non-manageable written in place, manageable through HotSpot.
        print("PrintWarnings.before", String.valueOf(flags.getBooleanFlag("PrintWarnings")));
        flags.setBooleanFlag("PrintWarnings", false);
        print("PrintWarnings.flags", String.valueOf(flags.getBooleanFlag("PrintWarnings")));
        print("PrintWarnings.mx", mx("PrintWarnings"));
        flags.setBooleanFlag("PrintWarnings", true);
        print("PrintWarnings.restored", mx("PrintWarnings"));
        flags.setBooleanFlag("PrintConcurrentLocks", true);
        print("PrintConcurrentLocks.mx", mx("PrintConcurrentLocks"));
        print("PrintConcurrentLocks.origin", MX.getVMOption("PrintConcurrentLocks").getOrigin().toString());

        // Numbers, compared with HotSpot's own text.
        for (String name : new String[] {"MaxHeapSize", "ConcGCThreads", "CICompilerCount", "MaxRAMPercentage"}) {
            print(name + ".int", String.valueOf(flags.getIntFlag(name)));
            print(name + ".float", String.valueOf(flags.getFloatFlag(name)));
            print(name + ".mx", mx(name));
        }

        // Unknown names and wrong types: nothing, and no exception.
        print("unknown.string", flags.getStringFlag("NoSuchFlagDdprof"));
        print("unknown.bool", String.valueOf(flags.getBooleanFlag("NoSuchFlagDdprof")));
        print("unknown.int", String.valueOf(flags.getIntFlag("NoSuchFlagDdprof")));
        print("unknown.float", String.valueOf(flags.getFloatFlag("NoSuchFlagDdprof")));
        flags.setStringFlag("NoSuchFlagDdprof", "x");
        flags.setBooleanFlag("NoSuchFlagDdprof", true);
        flags.setStringFlag("onerror", "x");
        print("null.string", flags.getStringFlag(null));
        flags.setStringFlag(null, "x");
        flags.setStringFlag("OnError", null);
        print("OnError.afterNulls", mx("OnError"));
        print("mismatch.string", flags.getStringFlag("ResizeTLAB"));
        print("mismatch.bool", String.valueOf(flags.getBooleanFlag("ErrorFile")));
        print("mismatch.float", String.valueOf(flags.getFloatFlag("MaxHeapSize")));
        print("mismatch.int", String.valueOf(flags.getIntFlag("ErrorFile")));
        String maxHeap = mx("MaxHeapSize");
        flags.setStringFlag("MaxHeapSize", "1");
        flags.setBooleanFlag("ErrorFile", true);
        print("mismatch.MaxHeapSize.unchanged", String.valueOf(maxHeap.equals(mx("MaxHeapSize"))));
        print("mismatch.ErrorFile.after", mx("ErrorFile"));
        print("done", "true");
    }

    private static String mx(String name) {
        VMOption option = MX.getVMOption(name);
        return option.getValue();
    }

    /** A store to address 0: HotSpot reports a crash (hs_err), running {@code OnError}. */
    private static void crash() throws Exception {
        Class<?> type = Class.forName("sun.misc.Unsafe");
        Field field = type.getDeclaredField("theUnsafe");
        field.setAccessible(true);
        Object unsafe = field.get(null);
        Method putAddress = type.getMethod("putAddress", long.class, long.class);
        putAddress.invoke(unsafe, 0L, 42L);
    }

    private static void print(String key, String value) {
        System.out.println(key + "=" + value);
    }
}
