package com.datadoghq.profiler.lazy;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * The constant pool of a class file, as far as the redefinition tests rewrite class files: its Utf8
 * entries and where each NameAndType entry's name index lies. {@link #read} leaves the buffer after
 * the pool (at the access flags).
 */
final class ClassConstants {
    /** Utf8 entries by index (ASCII names in these tests); null for other entries. */
    final String[] utf8;
    /** Byte offset of each NameAndType entry's name index, 0 for other entries. */
    final int[] natAt;
    /** Each NameAndType entry's name index. */
    final int[] natName;

    private ClassConstants(int count) {
        utf8 = new String[count];
        natAt = new int[count];
        natName = new int[count];
    }

    /** Reads the pool of the class file {@code b} wraps, from its start. */
    static ClassConstants read(ByteBuffer b) {
        byte[] bytes = b.array();
        b.position(8);
        int count = b.getShort() & 0xffff;
        ClassConstants c = new ClassConstants(count);
        for (int i = 1; i < count; i++) {
            int tag = b.get() & 0xff;
            switch (tag) {
                case 1: {
                    int len = b.getShort() & 0xffff;
                    c.utf8[i] = new String(bytes, b.position(), len, StandardCharsets.UTF_8);
                    b.position(b.position() + len);
                    break;
                }
                case 12:
                    c.natAt[i] = b.position();
                    c.natName[i] = b.getShort() & 0xffff;
                    b.getShort();
                    break;
                case 3: case 4: case 9: case 10: case 11: case 17: case 18:
                    b.position(b.position() + 4);
                    break;
                case 5: case 6:
                    b.position(b.position() + 8);
                    i++;
                    break;
                case 7: case 8: case 16: case 19: case 20:
                    b.position(b.position() + 2);
                    break;
                case 15:
                    b.position(b.position() + 3);
                    break;
                default:
                    throw new IllegalStateException("constant pool tag " + tag + " at entry " + i);
            }
        }
        return c;
    }
}
