package com.datadoghq.profiler;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A platform thread's context writer that stores into the thread's native context record in
 * place, through a direct {@link ByteBuffer} over it, instead of making a JNI call per write
 * (docs/context.md, "Writing from Java"; docs/benchmarks.md, "Context writes").
 *
 * <p>The record is the thread's own and only this thread writes it; a signal handler that
 * interrupts the thread reads it, and so may a profiler in another process. A write of more than
 * one field clears the {@code valid} byte first and sets it again last, with a store-store fence
 * after the first and before the last store, so neither reader ever takes a half-written context:
 * while {@code valid} is 0 an event gets no context. The same protocol as the native writers
 * ({@code sample::context::ThreadContext}), with the same semantics call for call (the same bytes
 * after every call: ContextWriterEquivalenceTest).
 *
 * <p>The attribute entries are rebuilt from this writer's own view of them on every change
 * (the local root span id as 16 hex digits under key 0, then each set slot in slot order); a few
 * dozen bytes, cheaper than searching the record.
 *
 * <p>The writer mirrors every field it stores (ids, sidecar words, {@code valid}), so a call
 * stores only what changes. A call that changes nothing stores nothing; one that changes only
 * the span id of a published record (a new span under the same root, trace and attributes: most
 * activations within a request) is one aligned 8-byte store, which a reader sees whole or not at
 * all, and either way beside the root and attributes it belongs with, so it needs no
 * {@code valid} round trip (ContextTornWriteTest).
 *
 * <p>The attribute entries are for out-of-process readers only, which look for thread records once
 * the process has published its OTel process context: until {@link ContextWriter#otelReaders}
 * says one can exist, none is stored (the record's size stays 0; {@link #attrsBytes} is what they
 * would take, so every call answers as with them), and a value changed in a published record is
 * its sidecar word alone. The first call that sees the flag stores the whole record ({@link #gate}).
 *
 * <p>The mirrors hold while no one else writes the record; but the JNI writer can: a virtual
 * thread mounted on this (carrier) thread writes the carrier's record. Every native write counts
 * itself in the sidecar ({@code native_writes}; this writer never stores it), and every call here
 * first compares that count with the one it saw after its last call: on a difference it stores
 * the whole of what the mirrors say before going on ({@link #restore}), so the record is this
 * thread's context again and the mirrors true again (ContextForeignWriteTest).
 */
final class DirectContextWriter extends ContextWriter {

    // The layout, from the native core (sample::context::java_layout, the one place for it).
    private static final int SIZE;
    private static final int TRACE_ID;
    private static final int SPAN_ID;
    private static final int VALID;
    private static final int ATTRS_SIZE;
    private static final int ATTRS;
    private static final int ATTRS_CAPACITY;
    private static final int ROOT_SPAN_ID;
    private static final int ENCODINGS;
    private static final int SLOTS;
    private static final int MAX_VALUE_BYTES;
    private static final byte LRS_KEY;
    /** The sidecar's count of native writes (8 bytes, native order). */
    private static final int NATIVE_WRITES;

    /** An entry's header: key and length bytes. */
    private static final int ENTRY_HEADER = 2;
    /** The local root span entry: header and 16 hex digits. */
    private static final int LRS_ENTRY = ENTRY_HEADER + 16;

    private static final boolean LITTLE_ENDIAN = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;

    /** {@code Thread.isVirtual()} on Java 19+, else {@code null} (no virtual threads). */
    private static final MethodHandle IS_VIRTUAL;

    static {
        int[] l = JavaProfiler.contextLayout0();
        SIZE = l[0];
        TRACE_ID = l[1];
        SPAN_ID = l[2];
        VALID = l[3];
        ATTRS_SIZE = l[4];
        ATTRS = l[5];
        ATTRS_CAPACITY = l[6];
        ROOT_SPAN_ID = l[7];
        ENCODINGS = l[8];
        SLOTS = l[9];
        MAX_VALUE_BYTES = l[10];
        LRS_KEY = (byte) l[11];
        NATIVE_WRITES = l[12];
        MethodHandle isVirtual = null;
        // Looked up only where it exists: a failed lookup throws, and exception profilers count it.
        if (Runtime.version().feature() >= 19) {
            try {
                isVirtual = MethodHandles.publicLookup()
                        .findVirtual(Thread.class, "isVirtual", MethodType.methodType(boolean.class));
            } catch (ReflectiveOperationException e) {
                isVirtual = null;
            }
        }
        IS_VIRTUAL = isVirtual;
    }

    /** Loaded reflectively by {@link ContextWriter} (this class needs Java 11). */
    static final class DirectFactory implements ContextWriter.Factory {
        @Override
        public ContextWriter forCurrentThread() {
            if (SLOTS != JavaProfiler.MAX_CONTEXT_SLOTS || isVirtual(Thread.currentThread())) {
                return null;
            }
            ByteBuffer b = JavaProfiler.contextBuffer0();
            if (b == null || b.capacity() < SIZE) {
                return null;
            }
            long address = NativeWords.addressOf(b);
            // With Unsafe, every access is at this address (see the accessors).
            return NativeWords.UNSAFE != null && address == 0 ? null : new DirectContextWriter(b, address);
        }

        @Override
        public void preload() {
            DirectContextWriter.initialize();
        }
    }

    /**
     * Runs this class's static initialiser (Factory.preload), and links the {@code invokeExact} call
     * site of {@link #isVirtual}: its first call spins the invoker, during which the JDK (21+)
     * throws and catches a {@code NoSuchMethodError} that an exception profiler would otherwise see
     * on the application's thread.
     */
    static void initialize() {
        isVirtual(Thread.currentThread());
    }

    private static boolean isVirtual(Thread t) {
        if (IS_VIRTUAL == null) {
            return false;
        }
        try {
            return (boolean) IS_VIRTUAL.invokeExact(t);
        } catch (Throwable e) {
            return true; // unknown: take the JNI writer, which is right on any thread
        }
    }

    /** The record: through {@link NativeWords#UNSAFE} at {@link #address} where it is not null, else this buffer. */
    private final ByteBuffer buf;
    private final long address;
    /**
     * Per slot, the byte length of the value the slot holds (whose entry the record has, or would
     * have without {@link #entries}), -1 for none: what says whether a slot has a value.
     */
    private final int[] lens;
    /**
     * Per slot, that value itself, kept only while {@link #entries} (otherwise stale): a reference
     * store into this old array pays G1's card-marking barrier, which a changed value without
     * entries need not ({@link #putValue}; restored from the encodings when the entries start).
     */
    private final ContextValueCache.Entry[] values;
    /**
     * Per slot, the value whose bytes were last stored, and where: an entry found there again is
     * not stored again (only this thread writes the record, so the bytes are still there).
     */
    private final ContextValueCache.Entry[] stored;
    private final int[] storedAt;
    /** The slots whose {@link #stored} entry is not null. */
    private int storedMask;
    /**
     * Slots with an entry in {@link #values} or a non-zero word in the sidecar: the only ones a
     * reset has to clear, and the only ones whose encodings can be current.
     */
    private int used;
    /** Whether the record holds the local root span entry, and its value. */
    private boolean hasRoot;
    private long root;
    /** {@link #rootHexFor} as 16 hex digits, two ASCII words ({@link #hex8}). */
    private long rootHexHi = hex8(0);
    private long rootHexLo = hex8(0);
    private long rootHexFor;
    /** The span id as last written (0 = none). */
    private long span;
    /** The trace id as last written. */
    private long traceHi;
    private long traceLo;
    /** The {@code valid} byte as last written. */
    private boolean valid;
    /** Per slot, the sidecar word as last written ({@link #putEncoding}). */
    private final long[] sidecar;
    /** Bytes of attribute entries, the local root span's included, as last stored. */
    private int attrsBytes;
    /** The root span id whose entry is at the start of the record's entries, if {@link #lrsWritten}. */
    private long lrsRoot;
    private boolean lrsWritten;
    /** The sidecar's native write count after this writer's last call ({@link #sync}). */
    private long nativeWrites;
    /**
     * Whether the record carries the attribute entries ({@link ContextWriter#otelReaders} as this
     * writer last saw it). While not, {@link #attrsBytes} is the size they would take and
     * the record's own size is 0: no entry is stored, and a value changes only its sidecar word.
     */
    private boolean entries;

    private DirectContextWriter(ByteBuffer b, long address) {
        this.buf = b.order(ByteOrder.nativeOrder());
        this.address = address;
        this.values = new ContextValueCache.Entry[SLOTS];
        this.lens = new int[SLOTS];
        java.util.Arrays.fill(lens, -1);
        this.entries = otelReaders; // nothing is set yet: the record is as the mirrors say either way
        this.stored = new ContextValueCache.Entry[SLOTS];
        this.storedAt = new int[SLOTS];
        this.sidecar = new long[SLOTS];
        // The record may hold what an earlier Java thread on the same native thread wrote
        // (a native thread that attached again): start from nothing, as a new thread does,
        // storing every field this writer mirrors, whatever the mirrors say.
        store1(VALID, (byte) 0);
        VarHandle.storeStoreFence();
        store8(TRACE_ID, 0L);
        store8(TRACE_ID + 8, 0L);
        store8(SPAN_ID, 0L);
        store8(ROOT_SPAN_ID, 0L);
        for (int s = 0; s < SLOTS; s++) {
            store8(ENCODINGS + 8 * s, 0L);
        }
        store2(ATTRS_SIZE, (short) 0);
        nativeWrites = load8(NATIVE_WRITES);
    }

    @Override
    String kind() {
        return "direct";
    }

    @Override
    String access() {
        return NativeWords.UNSAFE != null ? "unsafe" : "buffer";
    }

    // ---- the record's memory, in native byte order (NativeWords: Unsafe where it is silent)

    private long load8(int at) {
        sun.misc.Unsafe u = NativeWords.UNSAFE;
        return u != null ? u.getLong(address + at) : buf.getLong(at);
    }

    private void store8(int at, long v) {
        sun.misc.Unsafe u = NativeWords.UNSAFE;
        if (u != null) {
            u.putLong(address + at, v);
        } else {
            buf.putLong(at, v);
        }
    }

    private void store2(int at, short v) {
        sun.misc.Unsafe u = NativeWords.UNSAFE;
        if (u != null) {
            u.putShort(address + at, v);
        } else {
            buf.putShort(at, v);
        }
    }

    private void store1(int at, byte v) {
        sun.misc.Unsafe u = NativeWords.UNSAFE;
        if (u != null) {
            u.putByte(address + at, v);
        } else {
            buf.put(at, v);
        }
    }

    // ---- the publication protocol

    /**
     * Called first by every operation: if a native writer wrote the record since this writer's
     * last call (a virtual thread on this carrier), makes the record what the mirrors say again.
     * One load and a compare when nothing else wrote; nothing before any JNI write was made in
     * this process ({@link ContextWriter#jniWrote}: the JNI writer sets it before its native call,
     * on the OS thread whose record it writes, so this thread's next call sees it).
     */
    private void sync() {
        if (!jniWrote) {
            return;
        }
        long n = load8(NATIVE_WRITES);
        if (n != nativeWrites) {
            restore(n);
        }
    }

    /**
     * Ends every write: once a reader can exist ({@link ContextWriter#otelReaders}), the record
     * gets its entries, the whole of it stored from the mirrors. Last in the call, so that the
     * volatile load orders none of the call's own stores (docs/benchmarks.md, "Context writes").
     */
    private void gate() {
        if (!entries && otelReaders) {
            restore(nativeWrites);
        }
    }

    /**
     * Stores every field the mirrors hold (whatever the record holds now), with the usual
     * protocol: {@code valid} cleared first and set last, if the mirror says it is set.
     */
    private void restore(long n) {
        nativeWrites = n;
        if (!entries && otelReaders) {
            entries = true;
            valuesFromEncodings();
        }
        store1(VALID, (byte) 0);
        VarHandle.storeStoreFence();
        putBigEndian(TRACE_ID, traceHi);
        putBigEndian(TRACE_ID + 8, traceLo);
        putBigEndian(SPAN_ID, span);
        store8(ROOT_SPAN_ID, root);
        for (int s = 0; s < SLOTS; s++) {
            store8(ENCODINGS + 8 * s, sidecar[s]);
        }
        for (int m = storedMask; m != 0; m &= m - 1) {
            stored[Integer.numberOfTrailingZeros(m)] = null;
        }
        storedMask = 0;
        lrsWritten = false;
        writeAttrs(true);
        if (valid) {
            attach();
        }
    }

    /**
     * The entries start: {@link #values} from each slot's encoding (the dictionary's bytes for it).
     * A value of an earlier recording, whose encoding may now name another value, gets no entry.
     */
    private void valuesFromEncodings() {
        int epoch = epoch();
        for (int s = 0; s < SLOTS; s++) {
            ContextValueCache.Entry e = null;
            long w = sidecar[s];
            if (lens[s] >= 0 && (int) w != 0 && (int) (w >>> 32) == epoch) {
                e = ContextValueCache.byEncoding((int) w, epoch);
                if (e != null && e.utf8.length != lens[s]) {
                    e = null;
                }
            }
            if (e == null) {
                lens[s] = -1;
            }
            values[s] = e;
        }
    }

    /** Slot {@code slot}'s value becomes {@code e} ({@code null}: none). */
    private void putValue(int slot, ContextValueCache.Entry e) {
        lens[slot] = e == null ? -1 : e.utf8.length;
        if (entries) {
            values[slot] = e;
        }
    }

    private void detach() {
        if (valid) {
            store1(VALID, (byte) 0);
            valid = false;
            VarHandle.storeStoreFence();
        }
    }

    private void attach() {
        VarHandle.storeStoreFence();
        store1(VALID, (byte) 1);
        valid = true;
    }

    // ---- fields

    private void putBigEndian(int at, long v) {
        store8(at, LITTLE_ENDIAN ? Long.reverseBytes(v) : v);
    }

    /** Stores the ids that differ from what the record holds (inside a detach/attach). */
    private void putIds(long traceHi, long traceLo, long span, long root) {
        if (traceHi != this.traceHi) {
            putBigEndian(TRACE_ID, traceHi);
            this.traceHi = traceHi;
        }
        if (traceLo != this.traceLo) {
            putBigEndian(TRACE_ID + 8, traceLo);
            this.traceLo = traceLo;
        }
        putSpan(span);
        if (root != this.root) {
            store8(ROOT_SPAN_ID, root);
            this.root = root;
        }
    }

    private void putSpan(long span) {
        if (span != this.span) {
            putBigEndian(SPAN_ID, span);
            this.span = span;
        }
    }

    /** The sidecar word of {@code encoding} in {@code epoch}: {@code epoch << 32 | encoding}, 0 for none. */
    private static long word(int encoding, int epoch) {
        return encoding == 0 ? 0L : ((long) epoch << 32) | (encoding & 0xFFFF_FFFFL);
    }

    /** Slot {@code slot}'s sidecar word ({@link #word}), stored if it changed. */
    private void putEncoding(int slot, int encoding, int epoch) {
        long w = word(encoding, epoch);
        if (w != sidecar[slot]) {
            store8(ENCODINGS + 8 * slot, w);
            sidecar[slot] = w;
        }
        markUsed(slot, encoding != 0 || lens[slot] >= 0);
    }

    private void markUsed(int slot, boolean inUse) {
        used = inUse ? used | (1 << slot) : used & ~(1 << slot);
    }

    /** Slot {@code slot}'s encoding in dictionary epoch {@code epoch}, 0 if unset or stale. */
    private int encoding(int slot, int epoch) {
        long w = sidecar[slot];
        return (int) (w >>> 32) == epoch ? (int) w : 0;
    }

    /** Whether any slot holds an encoding of the current recording's dictionary. */
    private boolean hasAttrs() {
        if (used == 0) {
            return false;
        }
        int epoch = epoch();
        for (int m = used; m != 0; m &= m - 1) {
            if (encoding(Integer.numberOfTrailingZeros(m), epoch) != 0) {
                return true;
            }
        }
        return false;
    }

    /** Every slot empty: no entry, sidecar word 0. */
    private void resetSlots() {
        resetSlotsBut(0);
    }

    /**
     * Every slot but those of {@code keep} (a bit per slot) empty; the kept ones are about to be
     * set again, so their sidecar words are not zeroed in between.
     */
    private void resetSlotsBut(int keep) {
        for (int m = used & ~keep; m != 0; m &= m - 1) {
            int s = Integer.numberOfTrailingZeros(m);
            if (sidecar[s] != 0) {
                store8(ENCODINGS + 8 * s, 0L);
                sidecar[s] = 0;
            }
            putValue(s, null);
        }
        used &= keep;
    }

    /**
     * Rewrites the attribute entries from {@link #values} and the root span. The root span's
     * entry comes first and is left as it is when it already holds this root.
     */
    private void writeAttrs() {
        writeAttrs(false);
    }

    /** {@link #writeAttrs()}; {@code sizeUnknown}: {@link #attrsBytes} no longer says what is stored. */
    private void writeAttrs(boolean sizeUnknown) {
        if (!entries) {
            sizeAttrs(sizeUnknown);
            return;
        }
        int p = ATTRS;
        if (hasRoot) {
            if (!lrsWritten) {
                forgetStored(p, p + LRS_ENTRY);
                putHeader(p, LRS_KEY, 16);
                lrsWritten = true;
                lrsRoot = ~root; // the digits are not there yet
            }
            putRootDigits();
            p += LRS_ENTRY;
        } else {
            lrsWritten = false;
        }
        for (int m = used; m != 0; m &= m - 1) {
            int s = Integer.numberOfTrailingZeros(m);
            ContextValueCache.Entry e = values[s];
            if (e == null) {
                continue;
            }
            if (stored[s] == e && storedAt[s] == p) {
                p += ENTRY_HEADER + e.utf8.length;
            } else {
                int end = putEntry(p, s + 1, e);
                if (end == p) {
                    stored[s] = null;
                    storedMask &= ~(1 << s);
                } else {
                    stored[s] = e;
                    storedMask |= 1 << s;
                }
                storedAt[s] = p;
                p = end;
            }
        }
        if (sizeUnknown || p - ATTRS != attrsBytes) {
            attrsBytes = p - ATTRS;
            store2(ATTRS_SIZE, (short) attrsBytes);
        }
    }

    /**
     * {@link #writeAttrs} without entries: {@link #attrsBytes} becomes what the entries would
     * take (the same fit rule as {@link #putEntry}), so that every call answers as it does with
     * them; the record's size stays 0.
     */
    private void sizeAttrs(boolean sizeUnknown) {
        int p = hasRoot ? LRS_ENTRY : 0;
        for (int m = used; m != 0; m &= m - 1) {
            int len = lens[Integer.numberOfTrailingZeros(m)];
            if (len >= 0 && p + ENTRY_HEADER + len <= ATTRS_CAPACITY) {
                p += ENTRY_HEADER + len;
            }
        }
        attrsBytes = p;
        if (sizeUnknown) {
            store2(ATTRS_SIZE, (short) 0);
        }
    }

    /**
     * The root span entry's digits, if they are not {@link #root}'s already: while the entry is
     * there ({@link #lrsWritten}) nothing else is stored over it, so only its digits change.
     * Nothing without entries.
     */
    private void putRootDigits() {
        if (entries && lrsRoot != root) {
            if (rootHexFor != root) {
                rootHexHi = hex8((int) (root >>> 32));
                rootHexLo = hex8((int) root);
                rootHexFor = root;
            }
            putBigEndian(ATTRS + ENTRY_HEADER, rootHexHi);
            putBigEndian(ATTRS + ENTRY_HEADER + 8, rootHexLo);
            lrsRoot = root;
        }
    }

    /** Forgets the stored entries whose bytes overlap {@code [from, to)}, about to be overwritten. */
    private void forgetStored(int from, int to) {
        for (int m = storedMask; m != 0; m &= m - 1) {
            int s = Integer.numberOfTrailingZeros(m);
            ContextValueCache.Entry e = stored[s];
            if (storedAt[s] < to && storedAt[s] + ENTRY_HEADER + e.utf8.length > from) {
                stored[s] = null;
                storedMask &= ~(1 << s);
            }
        }
    }

    /** An entry's key and length bytes, in one store. */
    private void putHeader(int p, int key, int len) {
        int k = key & 0xFF;
        int l = len & 0xFF;
        store2(p, (short) (LITTLE_ENDIAN ? k | l << 8 : k << 8 | l));
    }

    /** Stores {@code e}'s entry under {@code key} at {@code p}; returns where the next one goes. */
    private int putEntry(int p, int key, ContextValueCache.Entry e) {
        int len = e.utf8.length;
        int end = p + ENTRY_HEADER + len;
        // The fit checks of every write keep the entries within the record; this bound only
        // guards the sidecar behind it.
        if (end > ATTRS + ATTRS_CAPACITY) {
            return p;
        }
        long[] words = e.words;
        int at = p + ENTRY_HEADER;
        // Whole words while the padding of the last one stays inside the entry region (bytes past
        // the entries are free space that no reader looks at, or the next entries' place).
        int whole = Math.min(words.length, (ATTRS + ATTRS_CAPACITY - at) / 8);
        forgetStored(p, Math.max(end, at + 8 * whole));
        putHeader(p, key, len);
        for (int i = 0; i < whole; i++) {
            store8(at + 8 * i, words[i]);
        }
        for (int i = whole * 8; i < len; i++) {
            store1(at + i, e.utf8[i]);
        }
        return end;
    }

    /**
     * The eight lowercase hex digits of {@code x} as ASCII, the first in the most significant
     * byte: each nibble spread to a byte of its own, then all eight turned into digits at once.
     */
    static long hex8(int x) {
        long v = x & 0xFFFF_FFFFL;
        v = ((v & 0xFFFF_0000L) << 16) | (v & 0xFFFFL);
        v = ((v & 0x0000_FF00_0000_FF00L) << 8) | (v & 0x0000_00FF_0000_00FFL);
        v = ((v & 0x00F0_00F0_00F0_00F0L) << 4) | (v & 0x000F_000F_000F_000FL);
        long letters = ((v + 0x0606_0606_0606_0606L) >>> 4) & 0x0101_0101_0101_0101L;
        return v + 0x3030_3030_3030_3030L + letters * ('a' - '0' - 10);
    }

    /** Whether a value of {@code len} bytes fits in slot {@code slot}, replacing its entry. */
    private boolean fits(int slot, int len) {
        return len <= MAX_VALUE_BYTES && attrsBytes - entryBytes(slot) + ENTRY_HEADER + len <= ATTRS_CAPACITY;
    }

    /** The bytes slot {@code slot}'s entry takes in the record (or would take, without {@link #entries}). */
    private int entryBytes(int slot) {
        return lens[slot] < 0 ? 0 : ENTRY_HEADER + lens[slot];
    }

    /** The dictionary epoch word's address, read in place with {@link NativeWords#UNSAFE} (0: none). */
    private static final long EPOCH_WORD = NativeWords.addressOf(ContextValueCache.epochWord());

    private static int epoch() {
        sun.misc.Unsafe u = NativeWords.UNSAFE;
        return u != null && EPOCH_WORD != 0 ? u.getInt(EPOCH_WORD) : ContextValueCache.currentEpoch();
    }

    @Override
    int dictionaryEpoch() {
        return epoch();
    }

    // ---- the operations

    @Override
    void setTrace(long root, long span, long traceHi, long traceLo,
                  int slot0, ContextValueCache.Entry e0, int slot1, ContextValueCache.Entry e1) {
        setTrace0(root, span, traceHi, traceLo, slot0, e0, slot1, e1);
        gate();
    }

    private void setTrace0(long root, long span, long traceHi, long traceLo,
                           int slot0, ContextValueCache.Entry e0, int slot1, ContextValueCache.Entry e1) {
        sync();
        if (valid && hasRoot && root == this.root && traceHi == this.traceHi && traceLo == this.traceLo
                && holdsOnly(slot0, e0, slot1, e1)) {
            putSpan(span); // a new span under the same root, trace and attributes: one store
            return;
        }
        setTraceSlow(root, span, traceHi, traceLo, slot0, e0, slot1, e1);
    }

    private void setTraceSlow(long root, long span, long traceHi, long traceLo,
                              int slot0, ContextValueCache.Entry e0, int slot1, ContextValueCache.Entry e1) {
        if (valid && hasRoot && (lrsWritten || !entries) && holdsOnly(slot0, e0, slot1, e1)) {
            // A new root or trace beside the same attributes: the ids and the root's digits.
            detach();
            putIds(traceHi, traceLo, span, root);
            putRootDigits();
            attach();
            return;
        }
        detach();
        putIds(traceHi, traceLo, span, root);
        resetSlotsBut((e0 == null ? 0 : 1 << slot0) | (e1 == null ? 0 : 1 << slot1));
        hasRoot = true;
        // Two values of at most 255 bytes always fit beside the root span's entry.
        if (e0 != null) {
            putValue(slot0, e0);
            putEncoding(slot0, e0.encoding, e0.epoch);
        }
        if (e1 != null) {
            putValue(slot1, e1);
            putEncoding(slot1, e1.encoding, e1.epoch);
        }
        writeAttrs();
        attach();
    }

    /**
     * Whether the slots hold exactly what an activation with these values leaves (each slot reset,
     * then {@code e0} at {@code slot0} and {@code e1} at {@code slot1}, the second winning).
     */
    private boolean holdsOnly(int slot0, ContextValueCache.Entry e0, int slot1, ContextValueCache.Entry e1) {
        int want = 0;
        if (e0 != null) {
            if (e1 == null || slot1 != slot0) {
                if (lens[slot0] != e0.utf8.length || sidecar[slot0] != word(e0.encoding, e0.epoch)) {
                    return false;
                }
                want = 1 << slot0;
            }
        }
        if (e1 != null) {
            if (lens[slot1] != e1.utf8.length || sidecar[slot1] != word(e1.encoding, e1.epoch)) {
                return false;
            }
            want |= 1 << slot1;
        }
        return used == want;
    }

    @Override
    void clearTrace() {
        clearTrace0();
        gate();
    }

    private void clearTrace0() {
        sync();
        if (!valid && span == 0 && root == 0 && traceHi == 0 && traceLo == 0 && used == 0 && !hasRoot
                && !lrsWritten && attrsBytes == 0) {
            return; // already clear
        }
        detach();
        putIds(0, 0, 0, 0);
        resetSlots();
        hasRoot = false;
        lrsWritten = false;
        if (attrsBytes != 0) {
            attrsBytes = 0;
            if (entries) {
                store2(ATTRS_SIZE, (short) 0);
            }
        }
    }

    @Override
    boolean setValue(int slot, ContextValueCache.Entry e) {
        boolean ok = setValue0(slot, e);
        gate();
        return ok;
    }

    private boolean setValue0(int slot, ContextValueCache.Entry e) {
        sync();
        if (valid && lens[slot] == e.utf8.length && sidecar[slot] == word(e.encoding, e.epoch)) {
            return true; // already there, and published
        }
        if (valid && !entries) {
            return putValueAlone(slot, e, false, e.epoch);
        }
        detach();
        boolean ok = fits(slot, e.utf8.length);
        putValue(slot, ok ? e : null);
        putEncoding(slot, ok ? e.encoding : 0, e.epoch);
        writeAttrs();
        attach(); // published even without a span, as upstream
        return ok;
    }

    /**
     * Without entries, a value that changes in a published record is its sidecar word alone: one
     * aligned 8-byte store, which the handler sees whole, beside the ids and other slots it
     * belongs with, so no {@code valid} round trip (as for a span alone). A value that does not
     * fit in the record clears the slot, or with {@code keepEncoding} (the legacy write) keeps its
     * encoding without an entry. Returns whether {@code e} fits.
     */
    private boolean putValueAlone(int slot, ContextValueCache.Entry e, boolean keepEncoding, int epoch) {
        boolean ok = fits(slot, e.utf8.length);
        // Every stored value fits beside the others (fits), so the size is kept by difference.
        attrsBytes += (ok ? ENTRY_HEADER + e.utf8.length : 0) - entryBytes(slot);
        putValue(slot, ok ? e : null);
        putEncoding(slot, ok || keepEncoding ? e.encoding : 0, epoch);
        return ok;
    }

    @Override
    int setValues(int[] slots, CharSequence[] vs, int count, ContextValueCache cache) {
        int written = setValues0(slots, vs, count, cache);
        gate();
        return written;
    }

    private int setValues0(int[] slots, CharSequence[] vs, int count, ContextValueCache cache) {
        sync();
        boolean publish = valid;
        detach();
        int written = 0;
        int epoch = epoch();
        for (int i = 0; i < count; i++) {
            int slot = slots[i];
            ContextValueCache.Entry e = cache.resolve(vs[i], epoch);
            boolean ok = e != null && fits(slot, e.utf8.length);
            // The fit test of the next pair needs this one's size: keep attrsBytes current
            // without storing (writeAttrs stores everything once, below).
            attrsBytes += (ok ? ENTRY_HEADER + e.utf8.length : 0) - entryBytes(slot);
            putValue(slot, ok ? e : null);
            putEncoding(slot, ok ? e.encoding : 0, ok ? e.epoch : 0);
            written += ok ? 1 : 0;
            publish |= e != null; // as setContextValue, which publishes; clearing does not
        }
        writeAttrs(true);
        if (publish) {
            attach();
        }
        return written;
    }

    @Override
    void clearValue(int slot) {
        clearValue0(slot);
        gate();
    }

    private void clearValue0(int slot) {
        sync();
        if (lens[slot] < 0 && sidecar[slot] == 0) {
            return; // nothing to clear: valid stays as it is
        }
        if (!entries) {
            // Its sidecar word alone, as in putValueAlone; valid stays as it is.
            attrsBytes -= entryBytes(slot);
            putValue(slot, null);
            putEncoding(slot, 0, 0);
            return;
        }
        boolean wasValid = valid;
        detach();
        putValue(slot, null);
        putEncoding(slot, 0, 0);
        writeAttrs();
        if (wasValid) {
            attach();
        }
    }

    @Override
    void setSpanLegacy(long span, long root) {
        setSpanLegacy0(span, root);
        gate();
    }

    private void setSpanLegacy0(long span, long root) {
        sync();
        // The shortcuts stay small enough to be inlined into the caller; the rest is a call.
        if (span != 0) {
            if (valid && hasRoot && root == this.root && (traceHi | traceLo) == 0) {
                putSpan(span); // a new span under the same root, attributes kept: one store
                return;
            }
        } else if (root == 0 && !valid && used == 0 && (this.span | this.root | traceHi | traceLo) == 0
                && !hasRoot && !lrsWritten) {
            return; // clearContext() of a clear context
        }
        setSpanLegacySlow(span, root);
    }

    private void setSpanLegacySlow(long span, long root) {
        if (span != 0 && valid && hasRoot && (lrsWritten || !entries)) {
            // A new root (or trace) beside the same attributes: the ids and the root's digits.
            detach();
            putIds(0, 0, span, root);
            putRootDigits();
            attach();
            return;
        }
        if (span == 0 && root == 0 && this.span == 0 && this.root == 0 && traceHi == 0 && traceLo == 0
                && !hasRoot && !lrsWritten && valid == hasAttrs()) {
            return; // already cleared, and published exactly while an attribute is set
        }
        detach();
        putIds(0, 0, span, root);
        int others = attrsBytes - (hasRoot ? LRS_ENTRY : 0);
        // As the native writer: the root span's entry is left out when it does not fit.
        hasRoot = (span != 0 || root != 0) && others + LRS_ENTRY <= ATTRS_CAPACITY;
        writeAttrs();
        if (span != 0 || hasAttrs()) {
            attach();
        }
    }

    @Override
    void setEncodingLegacy(int offset, int encoding) {
        setEncodingLegacy0(offset, encoding);
        gate();
    }

    private void setEncodingLegacy0(int offset, int encoding) {
        sync();
        if (offset < 0 || offset >= SLOTS) {
            return;
        }
        int epoch = epoch();
        if (encoding > 0 && valid && lens[offset] >= 0 && sidecar[offset] == word(encoding, epoch)) {
            return; // already there (that word is only ever stored beside its own value), and published
        }
        ContextValueCache.Entry e = null;
        if (encoding > 0) {
            e = ContextValueCache.byEncoding(encoding, epoch);
            if (e == null) {
                return; // unknown encoding: ignored
            }
            if (valid && !entries) {
                putValueAlone(offset, e, true, epoch); // stays published: a slot is set
                return;
            }
        }
        detach();
        // A value too long for the record keeps its encoding; only its entry is left out.
        putValue(offset, e != null && fits(offset, e.utf8.length) ? e : null);
        putEncoding(offset, encoding > 0 ? encoding : 0, epoch);
        writeAttrs();
        if (span != 0 || hasAttrs()) {
            attach();
        }
    }

    @Override
    void copyTags(int[] out) {
        sync();
        int epoch = epoch();
        for (int s = 0, n = Math.min(out.length, SLOTS); s < n; s++) {
            out[s] = (used & (1 << s)) == 0 ? 0 : encoding(s, epoch);
        }
    }

}
