package com.datadoghq.profiler.export;

/**
 * An open-addressing map from two long keys to objects: a chunk's samples by their stack-trace and
 * thread keys, found per event without a key object ({@link LongMap} for one key).
 */
final class LongPairMap<V> {
    private long[] keys = new long[32];
    private Object[] values = new Object[16];
    private int size;

    @SuppressWarnings("unchecked")
    V get(long a, long b) {
        int mask = values.length - 1;
        for (int i = slot(a, b) & mask; ; i = (i + 1) & mask) {
            Object v = values[i];
            if (v == null || (keys[2 * i] == a && keys[2 * i + 1] == b)) {
                return (V) v;
            }
        }
    }

    /** Puts a non-null value for a pair not in the map yet. */
    void putNew(long a, long b, V value) {
        if ((size + 1) * 2 > values.length) {
            long[] oldKeys = keys;
            Object[] oldValues = values;
            keys = new long[oldKeys.length * 2];
            values = new Object[oldValues.length * 2];
            size = 0;
            for (int i = 0; i < oldValues.length; i++) {
                if (oldValues[i] != null) {
                    @SuppressWarnings("unchecked")
                    V v = (V) oldValues[i];
                    putNew(oldKeys[2 * i], oldKeys[2 * i + 1], v);
                }
            }
        }
        int mask = values.length - 1;
        int i = slot(a, b) & mask;
        while (values[i] != null) {
            i = (i + 1) & mask;
        }
        keys[2 * i] = a;
        keys[2 * i + 1] = b;
        values[i] = value;
        size++;
    }

    private static int slot(long a, long b) {
        long h = (a * 0x9E3779B97F4A7C15L) ^ (b * 0xC2B2AE3D27D4EB4FL);
        return (int) (h ^ (h >>> 32));
    }
}
