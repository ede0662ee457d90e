package com.datadoghq.profiler.export;

/**
 * An open-addressing map from long keys to objects, for a chunk's constant pools: every sample
 * looks up its stack trace and thread by key, and a boxed {@code HashMap<Long, ...>} would allocate
 * on each of those look-ups.
 */
final class LongMap<V> {
    private long[] keys = new long[16];
    private Object[] values = new Object[16];
    private int size;

    @SuppressWarnings("unchecked")
    V get(long key) {
        int mask = keys.length - 1;
        for (int i = slot(key) & mask; ; i = (i + 1) & mask) {
            Object v = values[i];
            if (v == null) {
                return null;
            }
            if (keys[i] == key) {
                return (V) v;
            }
        }
    }

    /** Puts a non-null value, replacing the key's old one. */
    void put(long key, V value) {
        if ((size + 1) * 2 > keys.length) {
            grow();
        }
        int mask = keys.length - 1;
        for (int i = slot(key) & mask; ; i = (i + 1) & mask) {
            if (values[i] == null) {
                keys[i] = key;
                values[i] = value;
                size++;
                return;
            }
            if (keys[i] == key) {
                values[i] = value;
                return;
            }
        }
    }

    /** Makes room for {@code n} entries in all, so a pool of known count is not grown step by step. */
    void reserve(int n) {
        int capacity = keys.length;
        while (capacity < n * 2 && capacity < (1 << 30)) {
            capacity *= 2;
        }
        if (capacity > keys.length) {
            long[] oldKeys = keys;
            Object[] oldValues = values;
            keys = new long[capacity];
            values = new Object[capacity];
            size = 0;
            for (int i = 0; i < oldKeys.length; i++) {
                if (oldValues[i] != null) {
                    @SuppressWarnings("unchecked")
                    V v = (V) oldValues[i];
                    put(oldKeys[i], v);
                }
            }
        }
    }

    int size() {
        return size;
    }

    /** Every value, in no particular order (nulls where slots are empty). */
    Object[] slots() {
        return values;
    }

    /** Empties the map and lets its arrays go. */
    void clear() {
        keys = new long[16];
        values = new Object[16];
        size = 0;
    }

    private void grow() {
        reserve(keys.length);
    }

    private static int slot(long key) {
        long h = key * 0x9E3779B97F4A7C15L;
        return (int) (h ^ (h >>> 32));
    }
}
