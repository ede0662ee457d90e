package com.datadoghq.profiler.export;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;

import static com.datadoghq.profiler.export.JfrChunkModel.*;

import com.datadoghq.profiler.export.JfrChunkModel.Field;
import com.datadoghq.profiler.export.JfrChunkModel.Obj;
import com.datadoghq.profiler.export.JfrChunkModel.OwnEvent;
import com.datadoghq.profiler.export.JfrChunkModel.Slot;
import com.datadoghq.profiler.export.JfrChunkModel.Type;
import com.datadoghq.profiler.export.JfrChunkModel.Undecoded;

/**
 * A streaming reader of JFR files that decodes only what the converters read: per chunk its
 * header, its metadata (the types and their field layouts, found by name, so ddprof's, upstream
 * java-profiler's, async-profiler's and the JDK's recordings all read), the constant pools the
 * asked-for event types refer to (directly or through other pools), and the events of those types.
 * Every other event is skipped by its size; every other pool is walked without building anything.
 * Memory: the current and the previous chunk's bytes (the previous one to compare repeated pool
 * entries with), the pools the events need, and what the caller keeps.
 *
 * <p>The format, as the JDK writes and reads it (docs/converters.md has the summary): a file is a
 * sequence of chunks; a chunk is a 68-byte header ({@code "FLR\0"}, u16 major, u16 minor, i64 size,
 * i64 constant-pool offset, i64 metadata offset, i64 start nanos, i64 duration, i64 start ticks, i64
 * ticks per second, u32 state and flags; big-endian), then events. Every event is its size, its type
 * id and its fields in declaration order; integers are unsigned LEB128 (7 bits a byte, least
 * significant first, the ninth byte whole), floats and doubles big-endian bits, booleans and bytes
 * one byte. Type 0 is the metadata event, type 1 a checkpoint of constant pools (linked by a delta to
 * the next one, 0 ends). A field of a constant-pool type holds the entry's key.
 */
final class JfrChunkReader {
    private static final int HEADER_SIZE = 68;
    private static final int MAGIC = 0x464c5200; // "FLR\0"
    private static final long METADATA_TYPE = 0;
    private static final long CHECKPOINT_TYPE = 1;


    /** How deep inline structs may nest (a type that holds itself inline would never end). */
    private static final int MAX_DEPTH = 32;

    private final Path file;
    private final Set<String> wanted;
    private final boolean keep;
    private final Consumer<JfrEvents.Event> consumer;

    /**
     * The current chunk, read whole (array reads are what the interpreter and both compilers do
     * fastest); reused by the next chunk when it fits. Memory: the largest chunk.
     */
    private byte[] buf = new byte[0];
    /** The previous chunk's bytes, which taken-over entries are compared with. */
    private byte[] previousBuf = new byte[0];
    /** Set when a pool entry being decoded holds a key its fields cannot keep (see {@link Obj#reusable}). */
    private boolean sawKey;
    /** Inline structs being read, one inside the other ({@link #MAX_DEPTH}). */
    private int depth;
    private int limit;
    private int pos;
    private int chunk;
    private long chunkStart;
    private long startNanos;
    private long startTicks;
    private double ticksPerNano;
    private Type stringType;
    /** {@link #eventTypes}: the event types met so far; null when events are read. */
    private Map<Long, String> declared;
    /**
     * The previous chunk's decoded pools by type signature ({@link Type#signature}). The writers keep
     * an entry's key for the whole recording, so a chunk's pools mostly repeat the last one's: an
     * entry is taken over from there, not decoded again (and the converters' memos keyed by entries
     * keep hitting), when its bytes are the same as there and every entry it refers to was taken
     * over too ({@link #reuse}). So chunks of unrelated recordings in one file stay apart.
     */
    private final Map<String, Slot> slots = new HashMap<>();
    /** The last metadata event's bytes and its parsed tree, for the next chunk that repeats them. */
    private byte[] lastMetadata;
    private Element lastRoot;

    private JfrChunkReader(Path file, Set<String> wanted, boolean keep, Consumer<JfrEvents.Event> consumer) {
        this.file = file;
        this.wanted = wanted;
        this.keep = keep;
        this.consumer = consumer;
    }

    static void forEach(Path file, Set<String> types, boolean keep, Consumer<JfrEvents.Event> consumer)
            throws IOException {
        new JfrChunkReader(file, types, keep, consumer).read();
    }

    /** The event types the chunks' metadata declares, by id (a later chunk's name wins); reads nothing else. */
    static Map<Long, String> eventTypes(Path file) throws IOException {
        JfrChunkReader r = new JfrChunkReader(file, Collections.emptySet(), false, e -> { });
        r.declared = new HashMap<>();
        r.read();
        return r.declared;
    }

    private void read() throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            long fileSize = ch.size();
            if (fileSize == 0) {
                throw new IOException(file + " is empty (0 bytes), not a JFR recording");
            }
            long at = 0;
            while (at < fileSize) {
                chunk++;
                ByteBuffer header = ByteBuffer.allocate(HEADER_SIZE);
                while (header.hasRemaining() && ch.read(header, at + header.position()) > 0) {
                    // reads the header whole
                }
                if (header.position() < 4 || header.getInt(0) != MAGIC) {
                    throw new IOException(file + ": chunk " + chunk + " at byte " + at + " does not start with FLR\\0");
                }
                if (header.hasRemaining()) {
                    throw new IOException(file + " is truncated: chunk " + chunk + "'s header is cut off after "
                            + header.position() + " bytes");
                }
                int major = header.getShort(4);
                if (major != 1 && major != 2) {
                    throw new IOException(file + ": chunk " + chunk + " is JFR version " + major + "."
                            + header.getShort(6) + ", only 1.x and 2.x are read");
                }
                long size = header.getLong(8);
                long metadata = header.getLong(24);
                if (size < HEADER_SIZE || size > Integer.MAX_VALUE) {
                    throw new IOException(file + ": chunk " + chunk + " declares " + size + " bytes, not a chunk size");
                }
                if (at + size > fileSize) {
                    throw new IOException(file + " is truncated: chunk " + chunk + " declares " + size + " bytes, "
                            + (fileSize - at) + " remain");
                }
                if (metadata <= 0 || metadata >= size) {
                    throw new IOException(file + ": chunk " + chunk + " has no metadata (a recording still being"
                            + " written?)");
                }
                chunkStart = at;
                if (declared != null) {
                    readDeclared(ch, at + metadata, size - metadata);
                    at += size;
                    continue;
                }
                startNanos = header.getLong(32);
                startTicks = header.getLong(48);
                ticksPerNano = header.getLong(56) / 1_000_000_000.0;
                byte[] last = buf;
                buf = previousBuf.length >= size ? previousBuf : new byte[(int) size];
                previousBuf = last;
                limit = (int) size;
                ByteBuffer into = ByteBuffer.wrap(buf, 0, limit);
                while (into.hasRemaining() && ch.read(into, at + into.position()) > 0) {
                    // reads the chunk whole
                }
                if (into.hasRemaining()) {
                    throw new IOException(file + " is truncated: chunk " + chunk + " ends early");
                }
                try {
                    readChunk(limit, (int) metadata, header.getLong(16));
                } catch (UncheckedIOException e) {
                    throw e.getCause(); // an entry decoded on an event's demand (entry)
                } catch (IndexOutOfBoundsException | IllegalArgumentException | ClassCastException
                         | NullPointerException e) {
                    // What a damaged chunk makes of the decoding (an index past the chunk, a value of
                    // another type where the metadata promised one): the file's fault, said so.
                    throw new IOException(file + ": chunk " + chunk + " is corrupt near byte " + (at + pos) + " ("
                            + e + ")", e);
                }
                at += size;
            }
        }
    }

    /** {@link #eventTypes}: reads the metadata event at {@code at} alone (its size first). */
    private void readDeclared(FileChannel ch, long at, long room) throws IOException {
        ByteBuffer head = ByteBuffer.allocate((int) Math.min(10, room));
        ch.read(head, at);
        buf = head.array();
        limit = head.position();
        pos = 0;
        long size = readLong();
        if (size <= 0 || size > room || size > Integer.MAX_VALUE) {
            throw new IOException(file + ": chunk " + chunk + "'s metadata declares " + size + " bytes");
        }
        buf = new byte[(int) size];
        limit = buf.length;
        ByteBuffer into = ByteBuffer.wrap(buf);
        while (into.hasRemaining() && ch.read(into, at + into.position()) > 0) {
            // reads the metadata whole
        }
        try {
            for (Type t : readMetadata(0).values()) {
                if (t.event) {
                    declared.put(t.id, t.name);
                }
            }
        } catch (IndexOutOfBoundsException | IllegalArgumentException | NullPointerException e) {
            throw new IOException(file + ": chunk " + chunk + "'s metadata is corrupt (" + e + ")", e);
        }
    }

    private void readChunk(int size, int metadataOffset, long poolOffset) throws IOException {
        Map<Long, Type> types = readMetadata(metadataOffset);
        // The event types asked for, and every type their values can reach: the pools to decode.
        LongMap<Type> events = new LongMap<>();
        ArrayDeque<Type> reach = new ArrayDeque<>();
        for (Type t : types.values()) {
            if (wanted.contains(t.name)) {
                events.put(t.id, t);
                reach.add(t);
            }
        }
        while (!reach.isEmpty()) {
            Type t = reach.poll();
            if (t.needed) {
                continue;
            }
            t.needed = true;
            for (Field f : t.fields) {
                reach.add(f.type);
            }
        }
        stringType.needed = true;
        // A pool only events refer to (stack traces, threads) is decoded entry by entry as events ask
        // for them: a conversion of one kind decodes its own stacks, not every other kind's too.
        for (Type t : types.values()) {
            if (t.needed && !t.event) {
                for (Field f : t.fields) {
                    f.type.inPools |= f.constantPool;
                }
            }
        }
        for (Type t : types.values()) {
            t.lazy = t.needed && t.kind == STRUCT && !t.event && !t.inPools;
        }
        // By id in an array where the ids are small (they are: the writers number types from 0).
        long maxId = 0;
        for (Type t : types.values()) {
            maxId = Math.max(maxId, t.id);
        }
        Type[] eventsById = maxId < (1 << 16) ? new Type[(int) maxId + 1] : null;
        if (eventsById != null) {
            for (Type t : types.values()) {
                if (t.id >= 0 && events.get(t.id) != null) {
                    eventsById[(int) t.id] = t;
                }
            }
        }
        if (events.size() == 0) {
            return;
        }
        readPools(poolOffset, types);
        pos = HEADER_SIZE;
        while (pos < size) {
            int start = pos;
            long eventSize = readLong();
            if (eventSize <= 0 || start + eventSize > size) {
                throw new IOException(file + ": chunk " + chunk + " has an event of " + eventSize + " bytes at byte "
                        + (chunkStart + start));
            }
            long typeId = readLong();
            Type t = typeId <= CHECKPOINT_TYPE ? null
                    : eventsById != null ? (typeId < eventsById.length ? eventsById[(int) typeId] : null)
                    : events.get(typeId);
            if (t != null) {
                OwnEvent e = keep || t.reused == null ? new OwnEvent(t, this) : t.reused;
                if (!keep) {
                    t.reused = e;
                }
                readEventFields(e.data);
                e.traceRead = false;
                // A kept event's time now, while this chunk's clock is the reader's; else when read.
                e.startKnown = keep;
                if (keep) {
                    e.start = startNanos(e.data);
                }
                consumer.accept(e);
            }
            pos = (int) (start + eventSize);
        }
    }

    /** An event's start in epoch nanoseconds, by this chunk's clock (its start without a startTime). */
    long startNanos(Obj event) {
        int i = event.type.startIndex;
        return i < 0 ? startNanos : nanos(event.longs[i]);
    }

    long nanos(long ticks) {
        return startNanos + (long) ((ticks - startTicks) / ticksPerNano);
    }

    long timespan(long ticks) {
        return (long) (ticks / ticksPerNano);
    }

    // --- metadata ---

    /** One element of the metadata tree: its name, attributes and children. */
    private static final class Element {
        final String name;
        final Map<String, String> attributes = new HashMap<>();
        final List<Element> children = new ArrayList<>();

        Element(String name) {
            this.name = name;
        }
    }

    private Map<Long, Type> readMetadata(int offset) throws IOException {
        pos = offset;
        long size = readLong();
        if (readLong() != METADATA_TYPE) {
            throw new IOException(file + ": chunk " + chunk + "'s metadata offset does not point at metadata");
        }
        Element root;
        if (size > 0 && size <= limit - offset && lastMetadata != null && lastMetadata.length == size
                && Arrays.equals(lastMetadata, 0, (int) size, buf, offset, offset + (int) size)) {
            // Most chunks of a recording repeat the previous one's metadata: its tree is parsed once.
            root = lastRoot;
        } else {
            readLong(); // start time
            readLong(); // duration
            readLong(); // metadata id
            int count = count();
            String[] strings = new String[count];
            for (int i = 0; i < count; i++) {
                strings[i] = (String) readString(false);
            }
            root = readElement(strings, 0);
            if (size > 0 && size <= limit - offset) {
                lastMetadata = Arrays.copyOfRange(buf, offset, offset + (int) size);
                lastRoot = root;
            }
        }
        Map<Long, Type> types = new HashMap<>();
        List<Element> classes = new ArrayList<>();
        for (Element m : root.children) {
            if (m.name.equals("metadata")) {
                for (Element c : m.children) {
                    if (c.name.equals("class")) {
                        Type t = new Type(Long.parseLong(c.attributes.get("id")), c.attributes.get("name"));
                        t.event = "jdk.jfr.Event".equals(c.attributes.get("superType"));
                        types.put(t.id, t);
                        classes.add(c);
                    }
                }
            }
        }
        stringType = null;
        for (Element c : classes) {
            Type t = types.get(Long.parseLong(c.attributes.get("id")));
            List<Field> fields = new ArrayList<>();
            for (Element f : c.children) {
                if (f.name.equals("field")) {
                    Type ft = types.get(Long.parseLong(f.attributes.get("class")));
                    if (ft == null) {
                        throw new IOException(file + ": chunk " + chunk + "'s field " + t.name + "."
                                + f.attributes.get("name") + " has an undeclared type");
                    }
                    fields.add(new Field(f.attributes.get("name"), ft, "true".equals(f.attributes.get("constantPool")),
                            "1".equals(f.attributes.get("dimension"))));
                }
            }
            t.setFields(fields);
            if (t.kind == STRING) {
                stringType = t;
            }
        }
        if (stringType == null) {
            stringType = new Type(-1, "java.lang.String");
            stringType.setFields(Collections.emptyList());
        }
        return types;
    }

    private Element readElement(String[] strings, int depth) throws IOException {
        if (depth > 64) {
            throw new IOException(file + ": chunk " + chunk + "'s metadata nests too deep");
        }
        Element e = new Element(strings[readInt()]);
        int attributes = count();
        for (int i = 0; i < attributes; i++) {
            String key = strings[readInt()];
            e.attributes.put(key, strings[readInt()]);
        }
        int children = count();
        for (int i = 0; i < children; i++) {
            e.children.add(readElement(strings, depth + 1));
        }
        return e;
    }

    // --- constant pools ---

    private void readPools(long offset, Map<Long, Type> types) throws IOException {
        List<Type> all = new ArrayList<>(types.values());
        if (!types.containsValue(stringType)) {
            all.add(stringType);
        }
        for (Type t : all) {
            Slot slot = slots.computeIfAbsent(t.signature(), k -> new Slot());
            t.slot = slot;
            t.previous = slot.chunk == chunk - 1 ? slot.pool : EMPTY_POOL;
            slot.pool = t.pool;
            slot.chunk = chunk;
        }
        List<Obj> decoded = new ArrayList<>();
        List<Obj> takenOver = new ArrayList<>();
        List<Long> takenOverKeys = new ArrayList<>();
        long at = offset;
        long delta = -1;
        int seen = 0;
        while (delta != 0) {
            if (at <= 0 || at >= limit || ++seen > 100_000) {
                throw new IOException(file + ": chunk " + chunk + "'s constant pools are not where it says");
            }
            pos = (int) at;
            readLong(); // size
            if (readLong() != CHECKPOINT_TYPE) {
                throw new IOException(file + ": chunk " + chunk + " has no checkpoint at byte " + (chunkStart + at));
            }
            readLong(); // start time
            readLong(); // duration
            delta = readLong();
            at += delta;
            pos++; // checkpoint kind (flush, ...)
            int pools = count();
            for (int p = 0; p < pools; p++) {
                long typeId = readLong();
                Type t = typeId == stringType.id ? stringType : types.get(typeId);
                if (t == null) {
                    throw new IOException(file + ": chunk " + chunk + " has a constant pool of undeclared type "
                            + typeId);
                }
                int count = count();
                if (t.needed) {
                    t.pool.reserve(t.pool.size() + count);
                }
                for (int i = 0; i < count; i++) {
                    long key = readLong();
                    Object before = t.needed && t.kind == STRUCT ? t.previous.get(key) : null;
                    if (!t.needed) {
                        skipValue(t);
                    } else if (before instanceof Obj && ((Obj) before).reusable) {
                        int start = pos;
                        Obj o = (Obj) before;
                        if (sameBytes(o.rawStart, start, o.rawLength)) {
                            // The same bytes decode the same way, to the same end: no walk through them.
                            pos = start + o.rawLength;
                            o.rawStart = start;
                            t.takenOver++;
                            t.pool.put(key, o);
                            takenOver.add(o);
                            takenOverKeys.add(key);
                        } else if (t.lazy) {
                            undecoded(t, key, null);
                        } else {
                            decoded.add(decodeEntry(t, key));
                        }
                    } else if (t.lazy) {
                        undecoded(t, key, before instanceof Undecoded ? (Undecoded) before : null);
                    } else if (t.kind == STRING) {
                        Object s = readString(true);
                        if (s != null) {
                            t.pool.put(key, s);
                        }
                    } else if (t.kind != STRUCT) {
                        t.pool.put(key, readPrimitive(t.kind)); // a pool of plain numbers: kept boxed
                    } else {
                        decoded.add(decodeEntry(t, key));
                    }
                }
            }
        }
        // An entry taken over can only lead elsewhere now through a key of the previous chunk's pools
        // that was not taken over (decoded afresh, or absent): with none, all are kept as they are.
        boolean lost = false;
        for (Type t : all) {
            lost |= t.needed && t.previous.size() != t.takenOver;
        }
        if (lost) {
            reuse(takenOver, takenOverKeys, decoded);
        }
        // Entries refer to entries of pools read later: resolve the keys once all are read.
        for (Obj o : decoded) {
            resolve(o);
        }
        // Emptied, so that an entry kept from an older chunk does not keep its chunk's whole pool
        // (through its type) alive.
        for (Type t : types.values()) {
            if (t.previous != EMPTY_POOL) {
                t.previous.clear();
                t.previous = EMPTY_POOL;
            }
        }
    }

    /**
     * Puts the entry at {@link #pos} into {@code t}'s pool undecoded ({@link #entry} decodes it when an
     * event asks): as the previous chunk's {@code before} when its bytes are the same.
     */
    private void undecoded(Type t, long key, Undecoded before) throws IOException {
        int start = pos;
        if (before != null && sameBytes(before.start, start, before.length)) {
            pos = start + before.length;
            before.start = start;
            t.takenOver++;
            t.pool.put(key, before);
        } else {
            skipValue(t);
            t.pool.put(key, new Undecoded(start, pos - start));
        }
    }

    /** The entry of {@code key} in {@code t}'s pool of this chunk, decoded now if it was left {@link Undecoded}. */
    Object entry(Type t, long key) {
        Object v = t.pool.get(key);
        // By class, not instanceof: C2 bets an instanceof on the classes it has seen there, and
        // a chunk's first undecoded entry after many decoded ones would make it compile again.
        return v != null && v.getClass() == Undecoded.class ? decode(t, key, (Undecoded) v) : v;
    }

    private Obj decode(Type t, long key, Undecoded u) {
        int at = pos;
        boolean saw = sawKey;
        pos = u.start;
        try {
            Obj o = decodeEntry(t, key);
            resolve(o);
            return o;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            pos = at;
            sawKey = saw;
        }
    }

    /** Decodes a pool entry at {@link #pos} into {@code t}'s pool. */
    private Obj decodeEntry(Type t, long key) throws IOException {
        int start = pos;
        Obj o = new Obj(t);
        sawKey = false;
        readFields(o, true);
        o.rawStart = start;
        o.rawLength = pos - start;
        o.reusable = !sawKey;
        t.pool.put(key, o);
        return o;
    }

    private boolean sameBytes(int previousStart, int start, int length) {
        return previousStart >= 0 && previousStart + length <= previousBuf.length && start + length <= limit
                && Arrays.equals(previousBuf, previousStart, previousStart + length, buf, start, start + length);
    }

    /**
     * Keeps the entries taken over from the previous chunk whose references all still lead where
     * they led there (to entries taken over too); decodes the others afresh, until none changes.
     */
    private void reuse(List<Obj> takenOver, List<Long> keys, List<Obj> decoded) throws IOException {
        boolean changed = true;
        int end = pos;
        while (changed) {
            changed = false;
            for (int i = 0; i < takenOver.size(); i++) {
                Obj o = takenOver.get(i);
                if (o != null && !stillLeadsThere(o)) {
                    pos = o.rawStart;
                    decoded.add(decodeEntry(o.type, keys.get(i)));
                    takenOver.set(i, null);
                    changed = true;
                }
            }
        }
        pos = end;
    }

    private static boolean stillLeadsThere(Obj o) {
        Field[] fields = o.type.fields;
        for (int i = 0; i < fields.length; i++) {
            Field f = fields[i];
            Object v = o.objs[i];
            if (f.constantPool && !f.array) {
                Object now = f.type.slot.pool.get(o.longs[i]);
                if (now != v && (now instanceof Obj || v instanceof Obj || now == null || !now.equals(v))) {
                    return false;
                }
            } else if (v instanceof Obj) {
                if (!stillLeadsThere((Obj) v)) {
                    return false;
                }
            } else if (v instanceof Object[]) {
                for (Object e : (Object[]) v) {
                    if (e instanceof Obj && !stillLeadsThere((Obj) e)) {
                        return false;
                    }
                }
            }
        }
        return true;
    }

    /**
     * Replaces the keys a pool entry holds (its own and its inline structs') with the entries. False
     * when a key (other than 0, no entry) leads nowhere yet: the entry may not be taken over by the
     * next chunk, where that key may have an entry.
     */
    private boolean resolve(Obj o) {
        boolean complete = true;
        Field[] fields = o.type.fields;
        for (int i = 0; i < fields.length; i++) {
            Field f = fields[i];
            Object v = o.objs[i];
            if (f.array) {
                Object[] a = (Object[]) v;
                for (int j = 0; j < a.length; j++) {
                    if (a[j] instanceof Obj) {
                        complete &= resolve((Obj) a[j]);
                    } else if (a[j] instanceof Key) {
                        a[j] = ((Key) a[j]).type.pool.get(((Key) a[j]).key);
                    }
                }
            } else if (f.constantPool) {
                o.objs[i] = f.type.pool.get(o.longs[i]);
                complete &= o.objs[i] != null || o.longs[i] == 0;
            } else if (v instanceof Obj) {
                complete &= resolve((Obj) v);
            } else if (v instanceof Key) {
                o.objs[i] = ((Key) v).type.pool.get(((Key) v).key);
            }
        }
        o.reusable &= complete;
        return complete;
    }

    /** A constant-pool key met inside a pool entry or an array, resolved once the pools are read. */
    private static final class Key {
        final Type type;
        final long key;

        Key(Type type, long key) {
            this.type = type;
            this.key = key;
        }
    }

    // --- values ---

    /**
     * Reads an event's own fields: as {@link #readFields}, but a constant-pool reference is kept as its
     * key only, looked up when read ({@link OwnEvent#value}), so a reference nobody reads (a thread
     * state when no state is filtered) costs no look-up. Events kept past the call ({@code keep})
     * have theirs looked up now: a chunk's pools are emptied when the next one is read.
     */
    private void readEventFields(Obj o) throws IOException {
        if (keep) {
            readFields(o, false);
            return;
        }
        Field[] fields = o.type.fields;
        for (int i = 0; i < fields.length; i++) {
            Field f = fields[i];
            if (f.constantPool && !f.array) {
                o.longs[i] = readLong();
                o.objs[i] = null;
            } else if (f.array || f.type.kind == STRUCT || f.type.kind == STRING) {
                readField(o, i, f, false);
            } else {
                o.longs[i] = readBits(f.type.kind);
            }
        }
    }

    /**
     * Reads {@code o}'s fields. In a pool entry ({@code inPool}) a constant-pool reference is kept as
     * its key (in {@code longs}) for {@link #resolve}; in an event it is looked up at once.
     */
    private void readFields(Obj o, boolean inPool) throws IOException {
        if (++depth > MAX_DEPTH) {
            throw new IOException(file + ": chunk " + chunk + "'s type " + o.type.name + " nests too deep");
        }
        Field[] fields = o.type.fields;
        for (int i = 0; i < fields.length; i++) {
            readField(o, i, fields[i], inPool);
        }
        depth--;
    }

    private void readField(Obj o, int i, Field f, boolean inPool) throws IOException {
        if (f.array) {
            int n = count();
            Object[] a = new Object[n];
            for (int j = 0; j < n; j++) {
                a[j] = readElementValue(f, inPool);
            }
            o.objs[i] = a;
        } else if (f.constantPool) {
            long key = readLong();
            o.longs[i] = key;
            o.objs[i] = inPool ? null : entry(f.type, key);
        } else {
            int kind = f.type.kind;
            if (kind == STRUCT) {
                Obj inner = new Obj(f.type);
                readFields(inner, inPool);
                o.objs[i] = inner;
            } else if (kind == STRING) {
                o.objs[i] = readString(inPool);
            } else {
                o.longs[i] = readBits(kind);
            }
        }
    }

    private Object readElementValue(Field f, boolean inPool) throws IOException {
        if (f.constantPool) {
            long key = readLong();
            sawKey |= inPool;
            return inPool ? new Key(f.type, key) : entry(f.type, key);
        }
        int kind = f.type.kind;
        if (kind == STRUCT) {
            Obj inner = new Obj(f.type);
            readFields(inner, inPool);
            return inner;
        }
        return kind == STRING ? readString(inPool) : readPrimitive(kind);
    }

    /** A primitive as the bits {@link Obj#longs} holds: integers sign-extended, floats by their raw bits. */
    private long readBits(int kind) {
        switch (kind) {
            case BOOLEAN:
            case BYTE:
                return buf[pos++];
            case CHAR:
                return (char) readLong();
            case SHORT:
                return (short) readLong();
            case INT:
                return (int) readLong();
            case LONG:
                return readLong();
            case FLOAT: {
                long bits = bigEndian(4);
                return (int) bits;
            }
            case DOUBLE:
                return bigEndian(8);
            default:
                throw new IllegalArgumentException("kind " + kind);
        }
    }

    private Object readPrimitive(int kind) {
        long bits = readBits(kind);
        switch (kind) {
            case BOOLEAN:
                return bits != 0;
            case FLOAT:
                return Float.intBitsToFloat((int) bits);
            case DOUBLE:
                return Double.longBitsToDouble(bits);
            default:
                return bits;
        }
    }

    private void skipValue(Type t) throws IOException {
        if (++depth > MAX_DEPTH) {
            throw new IOException(file + ": chunk " + chunk + "'s type " + t.name + " nests too deep");
        }
        for (Field f : t.fields) {
            int n = f.array ? count() : 1;
            for (int j = 0; j < n; j++) {
                if (f.constantPool) {
                    readLong();
                } else if (f.type.kind == STRUCT) {
                    skipValue(f.type);
                } else if (f.type.kind == STRING) {
                    skipString();
                } else {
                    readBits(f.type.kind);
                }
            }
        }
        if (t.kind != STRUCT) {
            if (t.kind == STRING) {
                skipString();
            } else {
                readBits(t.kind);
            }
        }
        depth--;
    }

    /**
     * A string in any of JFR's encodings: 0 null, 1 empty, 2 a key into the {@code java.lang.String}
     * pool, 3 UTF-8 bytes, 4 chars (each an integer), 5 Latin-1 bytes; 3-5 after their length. In a
     * pool entry a key may name an entry not read yet: it stays a {@link Key} until resolved.
     */
    private Object readString(boolean inPool) throws IOException {
        byte encoding = buf[pos++];
        switch (encoding) {
            case 0:
                return null;
            case 1:
                return "";
            case 2: {
                long key = readLong();
                sawKey |= inPool;
                return inPool ? new Key(stringType, key) : stringType.pool.get(key);
            }
            case 3:
            case 5: {
                int n = readInt();
                if (n < 0 || n > limit - pos) {
                    throw new IOException(file + ": chunk " + chunk + " has a string of " + n + " bytes");
                }
                String text = new String(buf, pos, n, encoding == 3 ? StandardCharsets.UTF_8
                        : StandardCharsets.ISO_8859_1);
                pos += n;
                return text;
            }
            case 4: {
                int n = readInt();
                if (n < 0 || n > limit - pos) {
                    throw new IOException(file + ": chunk " + chunk + " has a string of " + n + " chars");
                }
                char[] chars = new char[n];
                for (int i = 0; i < n; i++) {
                    chars[i] = (char) readLong();
                }
                return new String(chars);
            }
            default:
                throw new IOException(file + ": chunk " + chunk + " has a string of unknown encoding " + encoding
                        + " at byte " + (chunkStart + pos - 1));
        }
    }

    private void skipString() throws IOException {
        byte encoding = buf[pos++];
        if (encoding == 2) {
            readLong();
        } else if (encoding == 3 || encoding == 5) {
            int n = count(); // before pos is read: readInt moves it
            pos += n;
        } else if (encoding == 4) {
            int n = count();
            for (int i = 0; i < n; i++) {
                readLong();
            }
        } else if (encoding != 0 && encoding != 1) {
            throw new IOException(file + ": chunk " + chunk + " has a string of unknown encoding " + encoding
                    + " at byte " + (chunkStart + pos - 1));
        }
    }

    /**
     * An unsigned LEB128 integer of up to 64 bits: 7 bits a byte, the ninth byte whole. A one-byte
     * value (most type ids, sizes, small keys) here, short enough for the JIT to inline.
     */
    private long readLong() {
        byte x = buf[pos];
        if (x >= 0) {
            pos++;
            return x;
        }
        return readLongBytes();
    }

    private long readLongBytes() {
        byte[] b = buf;
        int p = pos;
        long v = 0;
        for (int shift = 0; shift < 56; shift += 7) {
            byte x = b[p++];
            v |= (long) (x & 0x7f) << shift;
            if (x >= 0) {
                pos = p;
                return v;
            }
        }
        v |= (long) (b[p++] & 0xff) << 56;
        pos = p;
        return v;
    }

    /** {@code n} bytes as a big-endian number. */
    private long bigEndian(int n) {
        if (pos + n > limit) {
            throw new IndexOutOfBoundsException("a value runs past the chunk's end");
        }
        long v = 0;
        for (int i = 0; i < n; i++) {
            v = (v << 8) | (buf[pos++] & 0xff);
        }
        return v;
    }

    /**
     * A count of things that follow (strings, elements, entries, array elements, bytes, chars): each
     * takes at least a byte, so a count beyond the chunk's bytes left is corrupt, not an allocation.
     */
    private int count() throws IOException {
        long n = readLong();
        if (n < 0 || n > limit - pos) {
            throw new IOException(file + ": chunk " + chunk + " has a count of " + n + " at byte "
                    + (chunkStart + pos) + ", beyond its end");
        }
        return (int) n;
    }

    private int readInt() {
        return (int) readLong();
    }

}
