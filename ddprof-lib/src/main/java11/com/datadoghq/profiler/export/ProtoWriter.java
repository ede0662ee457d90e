package com.datadoghq.profiler.export;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The protobuf wire format, as much of it as pprof and OTLP need, so that the library needs no
 * protobuf runtime: varint (wire type 0), fixed64 (1), length-delimited (2). Fields are appended
 * in call order; a nested message is built in its own writer and added with
 * {@link #message(int, ProtoWriter)}. Default values (0, empty) are skipped, as proto3 does,
 * except inside packed repeated fields.
 */
public final class ProtoWriter {
    private static final int VARINT = 0;
    private static final int FIXED64 = 1;
    private static final int LENGTH_DELIMITED = 2;

    private byte[] buf = new byte[64];
    private int size;

    public int size() {
        return size;
    }

    public byte[] toByteArray() {
        return Arrays.copyOf(buf, size);
    }

    public void reset() {
        size = 0;
    }

    private void ensure(int more) {
        if (size + more > buf.length) {
            buf = Arrays.copyOf(buf, Math.max(buf.length * 2, size + more));
        }
    }

    private void rawByte(int b) {
        ensure(1);
        buf[size++] = (byte) b;
    }

    /** An unsigned varint of the 64 bits of {@code v} (negative int64 take 10 bytes). */
    private void rawVarint(long v) {
        ensure(10);
        while ((v & ~0x7FL) != 0) {
            buf[size++] = (byte) ((v & 0x7F) | 0x80);
            v >>>= 7;
        }
        buf[size++] = (byte) v;
    }

    private void tag(int field, int wireType) {
        rawVarint(((long) field << 3) | wireType);
    }

    /** int32/int64/uint32/uint64/enum field; skipped when 0. */
    public ProtoWriter varint(int field, long v) {
        if (v != 0) {
            tag(field, VARINT);
            rawVarint(v);
        }
        return this;
    }

    /** A varint field written even when 0 (a oneof member, where presence is the value). */
    public ProtoWriter varintAlways(int field, long v) {
        tag(field, VARINT);
        rawVarint(v);
        return this;
    }

    /** bool field; skipped when false. */
    public ProtoWriter bool(int field, boolean v) {
        return varint(field, v ? 1 : 0);
    }

    /** fixed64 field; skipped when 0. */
    public ProtoWriter fixed64(int field, long v) {
        if (v != 0) {
            tag(field, FIXED64);
            ensure(8);
            for (int i = 0; i < 8; i++) {
                buf[size++] = (byte) (v >>> (8 * i)); // little-endian
            }
        }
        return this;
    }

    /** bytes field; skipped when empty. */
    public ProtoWriter bytes(int field, byte[] v) {
        if (v.length > 0) {
            tag(field, LENGTH_DELIMITED);
            rawVarint(v.length);
            ensure(v.length);
            System.arraycopy(v, 0, buf, size, v.length);
            size += v.length;
        }
        return this;
    }

    /** string field; skipped when empty. */
    public ProtoWriter string(int field, String v) {
        return bytes(field, v.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * An element of a repeated string field: written even when empty, since the position
     * matters (string tables start with "").
     */
    public ProtoWriter repeatedString(int field, String v) {
        byte[] b = v.getBytes(StandardCharsets.UTF_8);
        tag(field, LENGTH_DELIMITED);
        rawVarint(b.length);
        ensure(b.length);
        System.arraycopy(b, 0, buf, size, b.length);
        size += b.length;
        return this;
    }

    /** A message field (always written, even when empty: repeated entries keep their place). */
    public ProtoWriter message(int field, ProtoWriter m) {
        tag(field, LENGTH_DELIMITED);
        rawVarint(m.size);
        ensure(m.size);
        System.arraycopy(m.buf, 0, buf, size, m.size);
        size += m.size;
        return this;
    }

    /** A packed repeated varint field (int32/int64/uint64); skipped when empty. */
    public ProtoWriter packed(int field, long[] values, int count) {
        if (count == 0) {
            return this;
        }
        int length = 0;
        for (int i = 0; i < count; i++) {
            length += varintSize(values[i]);
        }
        tag(field, LENGTH_DELIMITED);
        rawVarint(length);
        for (int i = 0; i < count; i++) {
            rawVarint(values[i]);
        }
        return this;
    }

    /** Appends already-encoded fields (messages are concatenations of fields). */
    public ProtoWriter raw(byte[] encoded) {
        ensure(encoded.length);
        System.arraycopy(encoded, 0, buf, size, encoded.length);
        size += encoded.length;
        return this;
    }

    static int varintSize(long v) {
        int n = 1;
        while ((v & ~0x7FL) != 0) {
            n++;
            v >>>= 7;
        }
        return n;
    }
}
