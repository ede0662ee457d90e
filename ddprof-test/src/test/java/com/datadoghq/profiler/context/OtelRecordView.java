package com.datadoghq.profiler.context;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

import com.datadoghq.profiler.internal.Diagnostics;

/**
 * The calling thread's OTel thread-context record (OTEP #4947 layout) decoded as an outside
 * reader finds it: through the exported TLS symbol {@code otel_thread_ctx_v1}. No JUnit here, so
 * that child JVMs can use it too.
 */
final class OtelRecordView {
    long traceHi;
    long traceLo;
    long spanId;
    int valid;
    int reserved;
    /** Attribute key to value; key 0 is the local root span id in hex, slot i is key i + 1. */
    final Map<Integer, String> attrs = new HashMap<>();

    /** The record, or {@code null} if the thread has none; throws if it is malformed. */
    static OtelRecordView ofCurrentThread() {
        byte[] raw = Diagnostics.readOtelRecordBySymbol();
        if (raw == null) {
            return null;
        }
        if (raw.length != 640) {
            throw new IllegalStateException("record of " + raw.length + " bytes");
        }
        ByteBuffer b = ByteBuffer.wrap(raw).order(ByteOrder.BIG_ENDIAN);
        OtelRecordView r = new OtelRecordView();
        r.traceHi = b.getLong(0);
        r.traceLo = b.getLong(8);
        r.spanId = b.getLong(16);
        r.valid = raw[24];
        r.reserved = raw[25];
        int size = ByteBuffer.wrap(raw).order(ByteOrder.nativeOrder()).getShort(26) & 0xffff;
        if (size > 612) {
            throw new IllegalStateException("attrs_data_size " + size);
        }
        for (int at = 28; at < 28 + size; ) {
            int key = raw[at] & 0xff;
            int len = raw[at + 1] & 0xff;
            if (at + 2 + len > 28 + size || r.attrs.put(key, new String(raw, at + 2, len, StandardCharsets.UTF_8)) != null) {
                throw new IllegalStateException("entry at " + at + " overruns or repeats key " + key);
            }
            at += 2 + len;
        }
        return r;
    }
}
