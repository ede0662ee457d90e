package com.datadoghq.profiler.alloc;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.HashMap;
import java.util.Map;

/**
 * Writes, with no library, a class of many distinct allocating methods (JVMS chapter 4, version
 * 52; straight-line code, so no StackMapTable):
 * <pre>
 * public class NAME implements java.util.function.IntConsumer {
 *     public NAME() { super(); }
 *     public static void a0(int n) { SINK.sink = new byte[n]; }  // ... a(methods-1)
 *     public void accept(int n) { a0(n); a1(n); ...; }
 * }
 * </pre>
 * The store to a static field keeps the JIT from removing the allocation once {@code a<i>} is
 * inlined into {@code accept}. The caller drives the class through {@code IntConsumer}, so no
 * reflection runs per call.
 */
final class AllocatingClassBytes {
    private final ByteArrayOutputStream poolBytes = new ByteArrayOutputStream();
    private final DataOutputStream pool = new DataOutputStream(poolBytes);
    private final Map<String, Integer> entries = new HashMap<>();
    private int poolCount = 1;
    private final ByteArrayOutputStream methodBytes = new ByteArrayOutputStream();
    private final DataOutputStream out = new DataOutputStream(methodBytes);
    private int methodCount;

    private AllocatingClassBytes() {}

    /**
     * @param name internal name of the class ({@code gen/G1})
     * @param methods how many {@code a<i>} methods
     * @param sinkOwner internal name of the class holding {@code public static Object sink}
     */
    static byte[] write(String name, int methods, String sinkOwner) {
        try {
            return new AllocatingClassBytes().build(name, methods, sinkOwner);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private byte[] build(String name, int methods, String sinkOwner) throws IOException {
        int objectInit = memberRef(10, "java/lang/Object", "<init>", "()V");
        method(0x0001, "<init>", "()V", 1, 1, new byte[] {
            0x2a,                                              // aload_0
            (byte) 0xb7, hi(objectInit), lo(objectInit),       // invokespecial Object.<init>
            (byte) 0xb1,                                       // return
        });
        int sink = memberRef(9, sinkOwner, "sink", "Ljava/lang/Object;");
        ByteArrayOutputStream accept = new ByteArrayOutputStream();
        for (int i = 0; i < methods; i++) {
            method(0x0009, "a" + i, "(I)V", 1, 1, new byte[] {
                0x1a,                                          // iload_0
                (byte) 0xbc, 8,                                // newarray byte
                (byte) 0xb3, hi(sink), lo(sink),               // putstatic sink
                (byte) 0xb1,                                   // return
            });
            int a = memberRef(10, name, "a" + i, "(I)V");
            accept.write(new byte[] {
                0x1b,                                          // iload_1
                (byte) 0xb8, hi(a), lo(a),                     // invokestatic a<i>
            });
        }
        accept.write(0xb1);                                    // return
        method(0x0001, "accept", "(I)V", 1, 2, accept.toByteArray());

        int thisClass = classRef(name);
        int superClass = classRef("java/lang/Object");
        int iface = classRef("java/util/function/IntConsumer");
        ByteArrayOutputStream file = new ByteArrayOutputStream();
        DataOutputStream d = new DataOutputStream(file);
        d.writeInt(0xCAFEBABE);
        d.writeShort(0);
        d.writeShort(52);
        d.writeShort(poolCount);
        poolBytes.writeTo(d);
        d.writeShort(0x0021);                                  // ACC_PUBLIC | ACC_SUPER
        d.writeShort(thisClass);
        d.writeShort(superClass);
        d.writeShort(1);
        d.writeShort(iface);
        d.writeShort(0);                                       // fields
        d.writeShort(methodCount);
        methodBytes.writeTo(d);
        d.writeShort(0);                                       // attributes
        d.flush();
        return file.toByteArray();
    }

    private void method(int access, String name, String desc, int maxStack, int maxLocals, byte[] code)
            throws IOException {
        int n = utf8(name);
        int t = utf8(desc);
        int codeName = utf8("Code");
        out.writeShort(access);
        out.writeShort(n);
        out.writeShort(t);
        out.writeShort(1);
        out.writeShort(codeName);
        out.writeInt(12 + code.length);
        out.writeShort(maxStack);
        out.writeShort(maxLocals);
        out.writeInt(code.length);
        out.write(code);
        out.writeShort(0);                                     // exception table
        out.writeShort(0);                                     // code attributes
        methodCount++;
    }

    private int utf8(String s) throws IOException {
        Integer i = entries.get("U" + s);
        if (i != null) {
            return i;
        }
        pool.writeByte(1);
        pool.writeUTF(s);
        return add("U" + s);
    }

    private int classRef(String internalName) throws IOException {
        Integer i = entries.get("C" + internalName);
        if (i != null) {
            return i;
        }
        int n = utf8(internalName);
        pool.writeByte(7);
        pool.writeShort(n);
        return add("C" + internalName);
    }

    /** A Fieldref (tag 9) or Methodref (tag 10). */
    private int memberRef(int tag, String owner, String name, String desc) throws IOException {
        int c = classRef(owner);
        int n = utf8(name);
        int t = utf8(desc);
        pool.writeByte(12);
        pool.writeShort(n);
        pool.writeShort(t);
        int nameAndType = add("N" + tag + owner + name + desc);
        pool.writeByte(tag);
        pool.writeShort(c);
        pool.writeShort(nameAndType);
        return add("M" + tag + owner + name + desc);
    }

    private int add(String key) {
        int idx = poolCount++;
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
