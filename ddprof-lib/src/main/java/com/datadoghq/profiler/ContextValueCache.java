package com.datadoghq.profiler;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * Remembers, for recently used context attribute values, their dictionary encoding and UTF-8
 * bytes, so that a context write does not cross into the native core to register a value it
 * has seen before.
 *
 * <p>The table is direct-mapped: 256 slots chosen by {@code hashCode() & 0xFF}, each holding one
 * immutable {@link Entry} published with a single plain array store. Readers on any thread see a
 * whole entry or none; two values that share a slot evict each other and are registered again
 * on their next use (registration is idempotent within a recording). Encodings are valid for
 * one recording only: the native dictionary is cleared when a recording starts, which bumps its
 * epoch; each entry carries the epoch it was registered in, and one from an earlier epoch is
 * registered again ({@link JavaProfiler} also calls {@link #clear()} after a {@code start}).
 *
 * <p>A second, static table maps encodings back to values, for the released tracers'
 * {@code setContextValue(offset, encoding)} written from Java ({@code DirectContextWriter}).
 */
final class ContextValueCache {

    /** Longest value in UTF-8 bytes (an OTel record attribute has a one-byte length). */
    static final int MAX_VALUE_BYTES = 255;

    private static final int SLOTS = 256;

    /** A value, its dictionary encoding, the dictionary epoch of that, and its UTF-8 bytes. Immutable. */
    static final class Entry {
        /** The value; {@code null} in entries of the encoding table. */
        final String key;
        final int encoding;
        final int epoch;
        /** At most {@link #MAX_VALUE_BYTES}, except in the encoding table (one more: too long). */
        final byte[] utf8;
        /**
         * {@link #utf8} eight bytes to a word, in the platform's byte order (the last word padded
         * with zeros), so that an in-place writer stores a value a word at a time.
         */
        final long[] words;

        Entry(String key, int encoding, int epoch, byte[] utf8) {
            this.key = key;
            this.encoding = encoding;
            this.epoch = epoch;
            this.utf8 = utf8;
            this.words = words(utf8);
        }

        private static long[] words(byte[] utf8) {
            long[] w = new long[(utf8.length + 7) / 8];
            ByteBuffer b = ByteBuffer.allocate(w.length * 8).order(ByteOrder.nativeOrder());
            b.put(utf8).rewind();
            b.asLongBuffer().get(w);
            return w;
        }
    }

    /** The native dictionary's epoch word, read in place (JavaProfiler.epochBuffer0). */
    private static final class Epoch {
        static final ByteBuffer WORD = epochWord();

        private static ByteBuffer epochWord() {
            ByteBuffer b = JavaProfiler.epochBuffer0();
            return b == null ? null : b.order(ByteOrder.nativeOrder());
        }
    }

    /**
     * Loads and initialises this class's nested classes now, not at an application thread's first
     * context write (see {@code ContextWriter.preload}).
     */
    static void preload() {
        currentEpoch();
        new Entry(null, 0, 0, new byte[0]).hashCode();
    }

    /** The native dictionary's epoch word (a 4-byte direct buffer), or null where JNI reads it. */
    static ByteBuffer epochWord() {
        return Epoch.WORD;
    }

    /** The native dictionary's current epoch: it changes when a recording starts. */
    static int currentEpoch() {
        ByteBuffer w = Epoch.WORD;
        return w != null ? w.getInt(0) : JavaProfiler.contextEpoch0();
    }

    /*
     * Both tables are plain arrays read without a barrier: an Entry is immutable, all its fields
     * final (its arrays filled before its constructor ends), so a thread that reads a reference to
     * one sees it whole (JLS 17.5); a stale or missing one only costs a registration.
     */
    private static final Entry[] BY_ENCODING = new Entry[SLOTS];

    /**
     * The value of dictionary encoding {@code encoding} in the current epoch, or {@code null} if
     * the dictionary has none. Its bytes may be one more than {@link #MAX_VALUE_BYTES}: a value too
     * long for a thread's record.
     */
    static Entry byEncoding(int encoding) {
        return byEncoding(encoding, currentEpoch());
    }

    /** {@link #byEncoding(int)} in dictionary epoch {@code epoch}, the current one. */
    static Entry byEncoding(int encoding, int epoch) {
        int slot = encoding & (SLOTS - 1);
        Entry e = BY_ENCODING[slot];
        if (e != null && e.encoding == encoding && e.epoch == epoch) {
            return e;
        }
        byte[] utf8 = JavaProfiler.contextValueBytes0(encoding);
        if (utf8 == null) {
            return null;
        }
        e = new Entry(null, encoding, epoch, utf8);
        BY_ENCODING[slot] = e;
        return e;
    }

    private final Entry[] entries = new Entry[SLOTS];

    /**
     * The entry of {@code value}, registering the value on a miss. A {@code CharSequence} that is
     * not a {@code String} is compared in place and only turned into a {@code String} on a miss.
     *
     * @return the entry, or {@code null} for a {@code null} value, a value longer than
     *         {@link #MAX_VALUE_BYTES} UTF-8 bytes, or a full dictionary
     */
    Entry resolve(CharSequence value) {
        return resolve(value, currentEpoch());
    }

    /**
     * {@link #resolve(CharSequence)} with the dictionary's current epoch given: a context writer
     * reads it in place where it can ({@link ContextWriter#dictionaryEpoch}), cheaper than
     * {@link #currentEpoch()}'s buffer.
     */
    Entry resolve(CharSequence value, int epoch) {
        if (value == null) {
            return null;
        }
        int h = value instanceof String ? value.hashCode() : stringHash(value);
        Entry e = entries[h & (SLOTS - 1)];
        if (e != null && (e.key == value || e.key.contentEquals(value)) && e.epoch == epoch) {
            return e;
        }
        return register(value.toString(), h & (SLOTS - 1));
    }

    private Entry register(String value, int slot) {
        byte[] utf8 = value.getBytes(StandardCharsets.UTF_8);
        if (utf8.length > MAX_VALUE_BYTES) {
            return null; // never registered: a value that cannot be written takes no dictionary id
        }
        // The epoch first: a recording starting in between leaves an entry that reads as stale.
        int epoch = currentEpoch();
        int encoding = JavaProfiler.registerConstant0(value);
        if (encoding <= 0) {
            return null;
        }
        Entry e = new Entry(value, encoding, epoch, utf8);
        entries[slot] = e;
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
        java.util.Arrays.fill(entries, null);
    }
}
