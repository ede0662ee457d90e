package com.datadoghq.profiler.bench;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.HashMap;
import java.util.Map;

/**
 * A tiny class-file writer for the lazy-jmethodID benchmarks: just enough of JVMS chapter 4 to
 * write the shapes of class they load, with no library.
 *
 * <ul>
 *   <li>{@link #allocating}: many distinct allocating methods behind {@code IntConsumer}
 *       (the allocation-profiling memory benchmark).</li>
 *   <li>{@link #trivial}: a public class with {@code n} methods
 *       {@code public static int m<i>(int x) { return x + i; }} and nothing else (version 52;
 *       straight-line code, so no StackMapTable is needed).</li>
 *   <li>{@link #worker}: a class implementing {@link Chain} whose {@code run} does a little CPU
 *       work and then calls the next class of the chain, plus {@code extra} trivial methods
 *       (version 49, so its loop needs no StackMapTable: the type-inferencing verifier checks
 *       it).</li>
 * </ul>
 */
final class ClassBytes {
    /** What {@link #worker} classes implement; the callers drive the chain through it. */
    public interface Chain {
        /** Some CPU work, then {@code all[(idx + 1) % all.length].run(.., depth - 1)} while depth > 0. */
        long run(long x, Chain[] all, int idx, int depth);
    }

    private static final String CHAIN = Chain.class.getName().replace('.', '/');
    private static final String CHAIN_DESC = "(J[L" + CHAIN + ";II)J";

    private final ByteArrayOutputStream poolBytes = new ByteArrayOutputStream();
    private final DataOutputStream pool = new DataOutputStream(poolBytes);
    private final Map<String, Integer> entries = new HashMap<>();
    private int poolCount = 1;

    private final ByteArrayOutputStream methodBytes = new ByteArrayOutputStream();
    private final DataOutputStream methods = new DataOutputStream(methodBytes);
    private int methodCount;

    private ClassBytes() {
    }

    /** {@code public class <name> { public static int m<i>(int x) { return x + i; } ... }}. */
    static byte[] trivial(String internalName, int methodCount) {
        ClassBytes c = new ClassBytes();
        c.addTrivialMethods(methodCount);
        return c.finish(52, internalName, "java/lang/Object", null);
    }

    /**
     * A {@link Chain} implementation: a public no-argument constructor, {@code run} (a loop of
     * {@code iters} multiply-adds on {@code x}, then the next link of the chain) and
     * {@code extra} trivial static methods.
     */
    static byte[] worker(String internalName, int iters, int extra) {
        if (iters < 1 || iters > Short.MAX_VALUE) {
            throw new IllegalArgumentException("iters " + iters);
        }
        ClassBytes c = new ClassBytes();
        try {
            // public <init>() { super(); }
            int objInit = c.methodref("java/lang/Object", "<init>", "()V");
            c.method(0x0001, "<init>", "()V", 1, 1, new byte[] {
                0x2a,                                             // aload_0
                (byte) 0xb7, hi(objInit), lo(objInit),            // invokespecial Object.<init>
                (byte) 0xb1,                                      // return
            });
            // public long run(long x, Chain[] all, int idx, int depth)
            // locals: 0 this, 1-2 x, 3 all, 4 idx, 5 depth, 6 i / next
            int mul = c.longConst(6364136223846793005L);
            int add = c.longConst(1442695040888963407L);
            int next = c.interfaceMethodref(CHAIN, "run", CHAIN_DESC);
            byte[] code = {
                /* 0 */ 0x03,                                     // iconst_0
                /* 1 */ 0x36, 6,                                  // istore 6
                /* 3 */ 0x1f,                                     // lload_1        <- loop
                /* 4 */ 0x14, hi(mul), lo(mul),                   // ldc2_w mul
                /* 7 */ 0x69,                                     // lmul
                /* 8 */ 0x14, hi(add), lo(add),                   // ldc2_w add
                /* 11 */ 0x61,                                    // ladd
                /* 12 */ 0x40,                                    // lstore_1
                /* 13 */ (byte) 0x84, 6, 1,                       // iinc 6 1
                /* 16 */ 0x15, 6,                                 // iload 6
                /* 18 */ 0x11, hi(iters), lo(iters),              // sipush iters
                /* 21 */ (byte) 0xa1, hi(3 - 21), lo(3 - 21),     // if_icmplt loop
                /* 24 */ 0x15, 5,                                 // iload 5
                /* 26 */ (byte) 0x9e, hi(57 - 26), lo(57 - 26),   // ifle done
                /* 29 */ 0x2d,                                    // aload_3
                /* 30 */ 0x15, 4,                                 // iload 4
                /* 32 */ 0x04,                                    // iconst_1
                /* 33 */ 0x60,                                    // iadd
                /* 34 */ 0x2d,                                    // aload_3
                /* 35 */ (byte) 0xbe,                             // arraylength
                /* 36 */ 0x70,                                    // irem
                /* 37 */ 0x36, 6,                                 // istore 6 (next index)
                /* 39 */ 0x2d,                                    // aload_3
                /* 40 */ 0x15, 6,                                 // iload 6
                /* 42 */ 0x32,                                    // aaload
                /* 43 */ 0x1f,                                    // lload_1
                /* 44 */ 0x2d,                                    // aload_3
                /* 45 */ 0x15, 6,                                 // iload 6
                /* 47 */ 0x15, 5,                                 // iload 5
                /* 49 */ 0x04,                                    // iconst_1
                /* 50 */ 0x64,                                    // isub
                /* 51 */ (byte) 0xb9, hi(next), lo(next), 6, 0,   // invokeinterface Chain.run
                /* 56 */ (byte) 0xad,                             // lreturn
                /* 57 */ 0x1f,                                    // lload_1        <- done
                /* 58 */ (byte) 0xad,                             // lreturn
            };
            c.method(0x0001, "run", CHAIN_DESC, 8, 7, code);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        c.addTrivialMethods(extra);
        return c.finish(49, internalName, "java/lang/Object", CHAIN);
    }

    /**
     * A class of {@code methods} distinct allocating methods, driven through {@code IntConsumer}:
     * {@code public static void a<i>(int n) { <sinkOwner>.sink = new byte[n]; }}, a public
     * no-argument constructor and {@code accept(n)} calling every {@code a<i>(n)} in turn
     * (version 52, straight-line code). The store to a static field keeps the JIT from removing
     * the allocation once {@code a<i>} is inlined.
     */
    static byte[] allocating(String internalName, int methods, String sinkOwner) {
        ClassBytes c = new ClassBytes();
        try {
            int objInit = c.methodref("java/lang/Object", "<init>", "()V");
            c.method(0x0001, "<init>", "()V", 1, 1, new byte[] {
                0x2a,                                             // aload_0
                (byte) 0xb7, hi(objInit), lo(objInit),            // invokespecial Object.<init>
                (byte) 0xb1,                                      // return
            });
            int sink = c.memberRef(9, sinkOwner, "sink", "Ljava/lang/Object;");
            java.io.ByteArrayOutputStream accept = new java.io.ByteArrayOutputStream();
            for (int i = 0; i < methods; i++) {
                c.method(0x0009, "a" + i, "(I)V", 1, 1, new byte[] {
                    0x1a,                                         // iload_0
                    (byte) 0xbc, 8,                               // newarray byte
                    (byte) 0xb3, hi(sink), lo(sink),              // putstatic sink
                    (byte) 0xb1,                                  // return
                });
                int a = c.methodref(internalName, "a" + i, "(I)V");
                accept.write(new byte[] {
                    0x1b,                                         // iload_1
                    (byte) 0xb8, hi(a), lo(a),                    // invokestatic a<i>
                });
            }
            accept.write(0xb1);                                   // return
            c.method(0x0001, "accept", "(I)V", 1, 2, accept.toByteArray());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return c.finish(52, internalName, "java/lang/Object", "java/util/function/IntConsumer");
    }

    private void addTrivialMethods(int n) {
        try {
            for (int i = 0; i < n; i++) {
                trivialMethod(i);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private void trivialMethod(int i) throws IOException {
        // public static int m<i>(int x) { return x + i; }
        method(0x0009, "m" + i, "(I)I", 2, 1, new byte[] {
            0x1a,                          // iload_0
            0x11, hi(i), lo(i),            // sipush i
            0x60,                          // iadd
            (byte) 0xac,                   // ireturn
        });
    }

    private void method(int access, String name, String desc, int maxStack, int maxLocals, byte[] code)
            throws IOException {
        int nameIdx = utf8(name);
        int descIdx = utf8(desc);
        int codeAttr = utf8("Code");
        methods.writeShort(access);
        methods.writeShort(nameIdx);
        methods.writeShort(descIdx);
        methods.writeShort(1);                     // attributes: Code
        methods.writeShort(codeAttr);
        methods.writeInt(2 + 2 + 4 + code.length + 2 + 2);
        methods.writeShort(maxStack);
        methods.writeShort(maxLocals);
        methods.writeInt(code.length);
        methods.write(code);
        methods.writeShort(0);                     // exception table
        methods.writeShort(0);                     // code attributes
        methodCount++;
    }

    private byte[] finish(int major, String thisName, String superName, String iface) {
        try {
            int thisIdx = classRef(thisName);
            int superIdx = classRef(superName);
            int ifaceIdx = iface == null ? 0 : classRef(iface);
            ByteArrayOutputStream out = new ByteArrayOutputStream(poolBytes.size() + methodBytes.size() + 64);
            DataOutputStream d = new DataOutputStream(out);
            d.writeInt(0xCAFEBABE);
            d.writeShort(0);                       // minor
            d.writeShort(major);
            d.writeShort(poolCount);
            poolBytes.writeTo(d);
            d.writeShort(0x0021);                  // ACC_PUBLIC | ACC_SUPER
            d.writeShort(thisIdx);
            d.writeShort(superIdx);
            if (iface == null) {
                d.writeShort(0);
            } else {
                d.writeShort(1);
                d.writeShort(ifaceIdx);
            }
            d.writeShort(0);                       // fields
            d.writeShort(methodCount);
            methodBytes.writeTo(d);
            d.writeShort(0);                       // class attributes
            d.flush();
            return out.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    // --- constant pool ---

    private int utf8(String s) throws IOException {
        Integer i = entries.get("U" + s);
        if (i != null) {
            return i;
        }
        pool.writeByte(1);
        pool.writeUTF(s);
        return add("U" + s, 1);
    }

    private int classRef(String internalName) throws IOException {
        Integer i = entries.get("C" + internalName);
        if (i != null) {
            return i;
        }
        int name = utf8(internalName);
        pool.writeByte(7);
        pool.writeShort(name);
        return add("C" + internalName, 1);
    }

    private int nameAndType(String name, String desc) throws IOException {
        String key = "N" + name + ' ' + desc;
        Integer i = entries.get(key);
        if (i != null) {
            return i;
        }
        int n = utf8(name);
        int t = utf8(desc);
        pool.writeByte(12);
        pool.writeShort(n);
        pool.writeShort(t);
        return add(key, 1);
    }

    private int methodref(String owner, String name, String desc) throws IOException {
        return memberRef(10, owner, name, desc);
    }

    private int interfaceMethodref(String owner, String name, String desc) throws IOException {
        return memberRef(11, owner, name, desc);
    }

    private int memberRef(int tag, String owner, String name, String desc) throws IOException {
        String key = "M" + tag + owner + '.' + name + desc;
        Integer i = entries.get(key);
        if (i != null) {
            return i;
        }
        int c = classRef(owner);
        int nt = nameAndType(name, desc);
        pool.writeByte(tag);
        pool.writeShort(c);
        pool.writeShort(nt);
        return add(key, 1);
    }

    private int longConst(long v) throws IOException {
        pool.writeByte(5);
        pool.writeLong(v);
        return add("J" + v, 2);                    // a long takes two pool slots
    }

    private int add(String key, int slots) {
        int idx = poolCount;
        poolCount += slots;
        if (poolCount > 0xffff) {
            throw new IllegalStateException("constant pool too large");
        }
        entries.put(key, idx);
        return idx;
    }

    private static byte hi(int v) {
        return (byte) (v >> 8);
    }

    private static byte lo(int v) {
        return (byte) v;
    }
}
