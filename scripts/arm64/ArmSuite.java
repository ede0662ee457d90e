import com.datadoghq.profiler.ContextSetter;
import com.datadoghq.profiler.JavaProfiler;
import com.datadoghq.profiler.LibraryLoader;
import com.datadoghq.profiler.internal.Diagnostics;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.RandomAccessFile;
import java.lang.instrument.ClassDefinition;
import java.lang.instrument.Instrumentation;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.lang.ref.WeakReference;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongUnaryOperator;
import java.util.zip.Deflater;

/**
 * The aarch64 suite's workload (scripts/arm64-smoke.sh), run under qemu-user on each aarch64 JDK:
 * what an application with the tracer does, in one recording. It loads the jar's library the way
 * an application does ({@code JavaProfiler.getInstance()}, no explicit path), starts
 * {@code cpu}, {@code wall} with the thread filter, {@code memory} (allocations and live heap),
 * {@code nativemem} and {@code attributes}, then in turn:
 * <ul>
 *   <li>burns CPU in {@link #burnArmSuiteHot} under the tracer's context (the legacy
 *       {@code setContext} / {@code setContextValue} calls released tracers make);</li>
 *   <li>burns CPU in C, in the JNI library the script built ({@code -Darmsuite.jni=PATH}, loaded
 *       after the start), through {@link #jniArmSuite} and the native method
 *       {@link #nativeArmSuite} (C: {@code chainArmSuiteA -> chainArmSuiteB -> burnArmSuiteC});</li>
 *   <li>burns CPU in ArmSuiteUnloadable, loaded from {@code -Darmsuite.unload=DIR} by a class
 *       loader of its own ({@link #unloadableArmSuite}, under span 3005), then drops the loader and
 *       collects until the class is unloaded (printed: {@code unloaded=1});</li>
 *   <li>with {@code -Darmsuite.redefine=CLASS_FILE} (and the script's -javaagent): burns CPU in
 *       ArmSuiteRedefinable under span 3006, redefines it with the class file's bytes (its hot
 *       method then calls the other spin) and burns again under span 3007
 *       ({@link #redefineArmSuite}; printed: {@code redefined=1});</li>
 *   <li>retains byte arrays allocated in {@link #allocArmSuite};</li>
 *   <li>deflates with {@code java.util.zip.Deflater} in {@link #deflateArmSuite} (zlib's
 *       mallocs);</li>
 *   <li>sends {@link #SOCKET_ROUNDS} messages of {@link #SOCKET_BYTES} bytes over loopback TCP to an
 *       echo server of its own and reads each back, in {@link #socketArmSuite} (the server,
 *       thread {@code arm-echo}, listens before the start, so the JDK's socket libraries are
 *       loaded and hooked when {@code natsock} starts);</li>
 *   <li>makes crash-protected loads of a mapped and then unmapped page (internal Diagnostics);</li>
 * </ul>
 * while thread {@code arm-parked}, added to the filter, parks in {@link #parkArmSuite} and
 * {@code arm-unfiltered}, not added, sleeps. Then dumps and stops. The recording is checked on
 * the host by ArmSuiteCheck; this prints what the checks need ({@code key=value} lines): the CPU
 * time the burning thread got and the bytes it allocated (expected counts scale with them), the
 * protected loads' results, and the profiler's debug counters after the dump
 * ({@code counter.NAME=value}).
 *
 *   java ArmSuite JFR_PATH BURN_MILLIS [EXTRA_START_OPTIONS]
 */
public class ArmSuite {
    static final long SPAN_ID = 3003;
    static final long ROOT_SPAN_ID = 303;
    static final String OP = "arm-burn";
    static final int RETAINED = 4096;
    static final int CHUNK = 4096;
    static final int SOCKET_ROUNDS = 200;
    static final int SOCKET_BYTES = 4096;

    static volatile long sink;
    static volatile boolean done;
    static final List<byte[]> KEPT = new ArrayList<>(RETAINED);

    static long burnArmSuiteHot(long n) {
        long x = 1;
        for (long i = 0; i < n; i++) {
            x = mixArmSuite(x, i);
        }
        return x;
    }

    /** Small enough for C1 and C2 to inline into burnArmSuiteHot (an Inlined frame). */
    static long mixArmSuite(long x, long i) {
        x = x * 6364136223846793005L + i;
        return x ^ (x >>> 17);
    }

    /** In the JNI library (scripts/arm64/armsuite_jni.c): C frames above this one. */
    static native long nativeArmSuite(long n);

    static long jniArmSuite(long n) {
        return nativeArmSuite(n) + 1;
    }

    /** The return address as a C function's frame record holds it (signed in mode pac). */
    static native long savedReturnArmSuite();

    /**
     * Echoes every connection, one at a time, on thread {@code arm-echo}, until the socket
     * closes.
     */
    static ServerSocket echoServer() throws IOException {
        ServerSocket server = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"));
        Thread t = new Thread(() -> {
            byte[] buf = new byte[64 * 1024];
            while (!server.isClosed()) {
                try (Socket s = server.accept()) {
                    s.setTcpNoDelay(true);
                    InputStream in = s.getInputStream();
                    OutputStream out = s.getOutputStream();
                    for (int n; (n = in.read(buf)) > 0; ) {
                        out.write(buf, 0, n);
                    }
                } catch (IOException e) {
                    // closed
                }
            }
        }, "arm-echo");
        t.setDaemon(true);
        t.start();
        return server;
    }

    /**
     * {@code rounds} messages of {@code size} bytes to the echo server on {@code port}, each read
     * back whole (the Java caller natsock's stacks must show). Returns the client's local port.
     */
    static int socketArmSuite(int port, int rounds, int size) throws IOException {
        byte[] message = new byte[size];
        byte[] back = new byte[size];
        try (Socket s = new Socket(InetAddress.getByName("127.0.0.1"), port)) {
            s.setTcpNoDelay(true);
            InputStream in = s.getInputStream();
            OutputStream out = s.getOutputStream();
            for (int i = 0; i < rounds; i++) {
                message[i % size] = (byte) i;
                out.write(message);
                for (int got = 0; got < size; ) {
                    int n = in.read(back, got, size - got);
                    if (n < 0) {
                        throw new IOException("the echo server closed after " + i + " rounds");
                    }
                    got += n;
                }
            }
            return s.getLocalPort();
        }
    }

    /**
     * Loads ArmSuiteUnloadable from {@code dir} in a loader of its own and burns CPU in it for
     * {@code millis} under span 3005; returns a weak reference to the class, the only one left.
     */
    static WeakReference<Class<?>> unloadableArmSuite(JavaProfiler profiler, String dir, long millis) throws Exception {
        URLClassLoader loader = new URLClassLoader(new URL[] {new File(dir).toURI().toURL()}, null);
        Class<?> c = loader.loadClass("ArmSuiteUnloadable");
        LongUnaryOperator op = (LongUnaryOperator) c.getDeclaredConstructor().newInstance();
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long cpu0 = mx.getCurrentThreadCpuTime();
        long end = System.nanoTime() + millis * 1_000_000L;
        profiler.setContext(3005, 305);
        while (System.nanoTime() < end) {
            sink += op.applyAsLong(200_000);
        }
        profiler.setContext(0, 0);
        long cpuMillis = (mx.getCurrentThreadCpuTime() - cpu0) / 1_000_000L;
        System.out.println("unload_cpu_ms=" + cpuMillis);
        loader.close();
        return new WeakReference<>(c);
    }

    /**
     * Burns CPU in ArmSuiteRedefinable (version 1: spinRedefinableOld) under span 3006,
     * redefines the class through the agent's Instrumentation with {@code classFile} (version 2:
     * spinRedefinableNew), and burns in the new version under span 3007. Prints each burn's CPU
     * time, and {@code redefined=1} once the new version is seen running.
     */
    static void redefineArmSuite(JavaProfiler profiler, String classFile, long millis) throws Exception {
        Instrumentation inst = (Instrumentation) Class.forName("ArmSuiteAgent").getField("instrumentation").get(null);
        sink += ArmSuiteRedefinable.runRedefinable(1); // loads and links it outside the burn's span
        System.out.println("redefine_old_cpu_ms=" + burnRedefinable(profiler, 3006, millis));
        inst.redefineClasses(new ClassDefinition(ArmSuiteRedefinable.class, Files.readAllBytes(Paths.get(classFile))));
        System.out.println("redefine_new_cpu_ms=" + burnRedefinable(profiler, 3007, millis));
        boolean runsNew = ArmSuiteRedefinable.runRedefinable(1000) == ArmSuiteRedefinable.spinRedefinableNew(1000);
        System.out.println("redefined=" + (runsNew ? 1 : 0));
    }

    static long burnRedefinable(JavaProfiler profiler, long span, long millis) {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long cpu0 = mx.getCurrentThreadCpuTime();
        long end = System.nanoTime() + millis * 1_000_000L;
        profiler.setContext(span, 306);
        while (System.nanoTime() < end) {
            sink += ArmSuiteRedefinable.runRedefinable(200_000);
        }
        profiler.setContext(0, 0);
        return (mx.getCurrentThreadCpuTime() - cpu0) / 1_000_000L;
    }

    static long counter(JavaProfiler profiler, String name) {
        Long v = profiler.getDebugCounters().get(name);
        return v == null ? -1 : v;
    }

    /**
     * Waits (at most 30 s) until the library watcher's refresh after the JNI library's load has
     * published a new unwind table (its size changes): until then its C frames unwind by frame
     * records only, and the jni check would count those samples. The watcher notices the load
     * within 200 ms, but the rebuild runs emulated beside the workload's threads (and ZGC's): on
     * a loaded host it took over 4 s. Prints how long it waited.
     */
    static void waitForUnwindRows(JavaProfiler profiler, long before) throws InterruptedException {
        long t0 = System.nanoTime();
        while (counter(profiler, "native_unwind_table_bytes") == before && System.nanoTime() - t0 < 30_000_000_000L) {
            Thread.sleep(20);
        }
        System.out.println("jni_rows_wait_ms=" + (System.nanoTime() - t0) / 1_000_000L);
    }

    static long allocArmSuite() {
        long bytes = 0;
        for (int i = 0; i < RETAINED; i++) {
            byte[] b = new byte[CHUNK];
            KEPT.add(b);
            bytes += b.length;
        }
        return bytes;
    }

    static long deflateArmSuite(int rounds) {
        byte[] input = new byte[16 * 1024];
        for (int i = 0; i < input.length; i++) {
            input[i] = (byte) (i * 31 + (i >> 7));
        }
        byte[] out = new byte[input.length * 2];
        long total = 0;
        for (int i = 0; i < rounds; i++) {
            // Each Deflater mallocs zlib's state, window and buffers (about 256 KiB).
            Deflater d = new Deflater(Deflater.BEST_SPEED);
            d.setInput(input);
            d.finish();
            total += d.deflate(out);
            d.end();
        }
        return total;
    }

    static void parkArmSuite() {
        while (!done) {
            LockSupport.parkNanos(50_000_000L);
        }
    }

    static void sleepArmSuiteUnfiltered() {
        while (!done) {
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    @SuppressWarnings("deprecation") // setContext / setContextValue(int, int): what released tracers call
    public static void main(String[] args) throws Exception {
        String jfr = args[0];
        long burnMillis = Long.parseLong(args[1]);
        String extra = args.length > 2 ? args[2] : "";
        JavaProfiler profiler = JavaProfiler.getInstance();
        System.out.println("arch=" + System.getProperty("os.arch"));
        System.out.println("java=" + System.getProperty("java.vm.version"));
        System.out.println("library=" + LibraryLoader.loadedLibraryPath());
        System.out.println("version=" + profiler.getVersion());
        ServerSocket echo = echoServer();
        String start = "start,cpu=10ms,wall=10ms,filter=0,memory=256k:aL:1,nativemem=64k,attributes=op;tenant"
                + (extra.isEmpty() ? "" : "," + extra) + ",file=" + jfr;
        System.out.println("command=" + start);
        String reply = profiler.execute(start);
        System.out.println("start_reply=" + reply.trim().replace('\n', '|'));
        // Loaded while the profiler runs: its unwind rows come with the library watcher's refresh.
        String jni = System.getProperty("armsuite.jni", "");
        long unwindTable0 = counter(profiler, "native_unwind_table_bytes");
        if (!jni.isEmpty()) {
            System.load(jni);
            System.out.println("jni_saved_return=" + Long.toHexString(savedReturnArmSuite()));
        }

        CountDownLatch ready = new CountDownLatch(2);
        Thread parked = new Thread(() -> {
            profiler.addThread();
            ready.countDown();
            parkArmSuite();
        }, "arm-parked");
        Thread unfiltered = new Thread(() -> {
            ready.countDown();
            sleepArmSuiteUnfiltered();
        }, "arm-unfiltered");
        parked.start();
        unfiltered.start();
        ready.await();

        // CPU under the tracer's context, as released tracers set it.
        ContextSetter setter = new ContextSetter(profiler, Arrays.asList("op", "tenant"));
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        profiler.setContext(SPAN_ID, ROOT_SPAN_ID);
        profiler.setContextValue(setter.offsetOf("op"), setter.encode(OP));
        long cpu0 = mx.getCurrentThreadCpuTime();
        long end = System.nanoTime() + burnMillis * 1_000_000L;
        while (System.nanoTime() < end) {
            sink += burnArmSuiteHot(200_000);
        }
        long cpuMillis = (mx.getCurrentThreadCpuTime() - cpu0) / 1_000_000L;
        profiler.setContextValue(setter.offsetOf("op"), 0);
        profiler.setContext(0, 0);
        System.out.println("main_cpu_ms=" + cpuMillis);

        // CPU in C frames above a Java native method.
        if (!jni.isEmpty()) {
            waitForUnwindRows(profiler, unwindTable0);
            long jniCpu0 = mx.getCurrentThreadCpuTime();
            long jniEnd = System.nanoTime() + burnMillis * 1_000_000L * 2 / 3;
            while (System.nanoTime() < jniEnd) {
                sink += jniArmSuite(2_000_000);
            }
            System.out.println("jni_cpu_ms=" + (mx.getCurrentThreadCpuTime() - jniCpu0) / 1_000_000L);
        }

        // A class burnt in, then unloaded before the dump.
        String unload = System.getProperty("armsuite.unload", "");
        if (!unload.isEmpty()) {
            WeakReference<Class<?>> unloadable = unloadableArmSuite(profiler, unload, burnMillis / 2);
            for (int i = 0; i < 20 && unloadable.get() != null; i++) {
                System.gc();
                Thread.sleep(20);
            }
            System.out.println("unloaded=" + (unloadable.get() == null ? 1 : 0));
        }

        // A class redefined while hot (the lazy mode: -javaagent and the new version's class file).
        String redefine = System.getProperty("armsuite.redefine", "");
        if (!redefine.isEmpty()) {
            redefineArmSuite(profiler, redefine, burnMillis / 4);
        }

        // Allocations, retained: allocation samples now, live objects at the dump.
        System.out.println("alloc_bytes=" + allocArmSuite());

        // zlib's mallocs under java.util.zip.
        sink += deflateArmSuite(400);
        System.out.println("deflate_rounds=400");

        // Loopback TCP (natsock's hooks in the JDK's socket libraries, where the start asks for them).
        int localPort = socketArmSuite(echo.getLocalPort(), SOCKET_ROUNDS, SOCKET_BYTES);
        echo.close();
        System.out.println("socket=" + echo.getLocalPort() + "," + localPort + "," + SOCKET_ROUNDS + "," + SOCKET_BYTES);

        protectedLoads();

        done = true;
        LockSupport.unpark(parked);
        parked.join();
        unfiltered.interrupt();
        unfiltered.join();
        System.gc();
        profiler.dump(Paths.get(jfr + ".dump.jfr"));
        // For mode-specific checks (e.g. counter.jmethodids_preloaded, counter.fjmethodid_lazy_fallback).
        for (java.util.Map.Entry<String, Long> c : profiler.getDebugCounters().entrySet()) {
            System.out.println("counter." + c.getKey() + "=" + c.getValue());
        }
        profiler.stop();
        System.out.println("kept=" + KEPT.size());
        System.out.println("finished=1");
    }

    /**
     * A crash-protected load of a page of a file mapped here (reads its first bytes), and of the
     * same page once unmapped (must come back unread, by a recovered fault, the JVM alive). A
     * page the JVM maps again in between would read: then it is tried again, with a new file.
     * The unmapping is {@code Unsafe.invokeCleaner} (JDK 25 warns on stderr that it is deprecated;
     * the FFM API's arenas would do it without, but not on JDK 17).
     */
    static void protectedLoads() throws Exception {
        Method address = Class.forName("sun.nio.ch.DirectBuffer").getMethod("address");
        Field f = Class.forName("sun.misc.Unsafe").getDeclaredField("theUnsafe");
        f.setAccessible(true);
        Object unsafe = f.get(null);
        Method invokeCleaner = unsafe.getClass().getMethod("invokeCleaner", ByteBuffer.class);
        long magic = 0x41524d3634534146L; // "FASM46RA" little-endian: any value the page holds
        for (int attempt = 1; attempt <= 3; attempt++) {
            File file = File.createTempFile("arm-suite", ".page");
            long at;
            try (RandomAccessFile raf = new RandomAccessFile(file, "rw")) {
                raf.setLength(65536);
                raf.writeLong(Long.reverseBytes(magic));
                MappedByteBuffer page = raf.getChannel().map(FileChannel.MapMode.READ_ONLY, 0, 65536);
                at = (Long) address.invoke(page);
                long[] mapped = Diagnostics.protectedLoad(at);
                System.out.println("protected_mapped=" + mapped[0] + "," + Long.toHexString(mapped[1])
                        + "," + mapped[2] + "," + mapped[3] + " expect=" + Long.toHexString(magic));
                invokeCleaner.invoke(unsafe, page);
            } finally {
                Files.deleteIfExists(file.toPath());
            }
            long[] unmapped = Diagnostics.protectedLoad(at);
            boolean remapped = unmapped[0] == 1 && mappedNow(at);
            System.out.println("protected_unmapped=" + unmapped[0] + "," + Long.toHexString(unmapped[1])
                    + "," + unmapped[2] + "," + unmapped[3] + (remapped ? " remapped" : ""));
            if (!remapped) {
                break;
            }
        }
        System.out.println("protected_alive=1");
    }

    /** Whether {@code /proc/self/maps} lists a mapping holding {@code at}. */
    static boolean mappedNow(long at) throws Exception {
        for (String line : Files.readAllLines(Paths.get("/proc/self/maps"))) {
            String[] range = line.split(" ", 2)[0].split("-");
            long from = Long.parseUnsignedLong(range[0], 16);
            long to = Long.parseUnsignedLong(range[1], 16);
            if (Long.compareUnsigned(at, from) >= 0 && Long.compareUnsigned(at, to) < 0) {
                return true;
            }
        }
        return false;
    }
}
