package com.datadoghq.profiler;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * Remembers, for recently used context attribute values, their dictionary encoding and UTF-8
 * bytes, so that a context write does not cross into the native core to register a value it
 * has seen before.
 *
 * <p>The table is direct-mapped: 256 slots chosen by {@code hashCode() & 0xFF}, each holding one
 * immutable {@link Entry} published with a single array store. Readers on any thread see a
 * whole entry or none; two values that share a slot evict each other and are registered again
 * on their next use (registration is idempotent within a recording). Encodings are valid for
 * one recording only: the native dictionary is cleared when a recording starts, and
 * {@link JavaProfiler} then calls {@link #clear()}.
 */
final class ContextValueCache {

    /** Longest value in UTF-8 bytes (an OTel record attribute has a one-byte length). */
    static final int MAX_VALUE_BYTES = 255;

    private static final int SLOTS = 256;

    /** A value, its dictionary encoding and its UTF-8 bytes. Immutable. */
    static final class Entry {
        final String key;
        final int encoding;
        final byte[] utf8;

        Entry(String key, int encoding, byte[] utf8) {
            this.key = key;
            this.encoding = encoding;
            this.utf8 = utf8;
        }
    }

    private final AtomicReferenceArray<Entry> entries = new AtomicReferenceArray<>(SLOTS);

    /**
     * The entry of {@code value}, registering the value on a miss. A {@code CharSequence} that is
     * not a {@code String} is compared in place and only turned into a {@code String} on a miss.
     *
     * @return the entry, or {@code null} for a {@code null} value, a value longer than
     *         {@link #MAX_VALUE_BYTES} UTF-8 bytes, or a full dictionary
     */
    Entry resolve(CharSequence value) {
        if (value == null) {
            return null;
        }
        int h = value instanceof String ? value.hashCode() : stringHash(value);
        Entry e = entries.get(h & (SLOTS - 1));
        if (e != null && e.key.contentEquals(value)) {
            return e;
        }
        return register(value.toString(), h & (SLOTS - 1));
    }

    private Entry register(String value, int slot) {
        byte[] utf8 = value.getBytes(StandardCharsets.UTF_8);
        if (utf8.length > MAX_VALUE_BYTES) {
            return null; // never registered: a value that cannot be written takes no dictionary id
        }
        int encoding = JavaProfiler.registerConstant0(value);
        if (encoding <= 0) {
            return null;
        }
        Entry e = new Entry(value, encoding, utf8);
        entries.set(slot, e);
        return e;
    }

    /** {@link String#hashCode()} of the characters of {@code s}, without building a String. */
    private static int stringHash(CharSequence s) {
        int h = 0;
        for (int i = 0, n = s.length(); i < n; i++) {
            h = 31 * h + s.charAt(i);
        }
        return h;
    }

    /** Forgets every entry (a new recording started; encodings changed). */
    void clear() {
        for (int i = 0; i < SLOTS; i++) {
            entries.set(i, null);
        }
    }
}
