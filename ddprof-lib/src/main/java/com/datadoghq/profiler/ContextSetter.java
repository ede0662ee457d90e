package com.datadoghq.profiler;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Maps the context attribute names a tracer configured ({@code attributes=a;b;c} of the start
 * command) to their slots, and writes attribute values by name or slot.
 *
 * <p>The attribute list is cut to {@link JavaProfiler#MAX_CONTEXT_SLOTS} names and then
 * de-duplicated (first occurrence wins), in the order given, as upstream does, so slot
 * numbers agree with the profiler's {@code attributes=} list built from the same names.
 *
 * <p>The encoding methods ({@link #encode}, {@link #setContextValue(int, int)},
 * {@link #snapshotTags()}) are the API released tracers (java-profiler 1.34) call; they never
 * throw into the caller's thread.
 */
public class ContextSetter {

    /** Most values {@link #encode} remembers; beyond it, values are not encoded (0). */
    private static final int ENCODE_CACHE_LIMIT = 1 << 16;

    private final JavaProfiler profiler;
    private final List<String> attributes;
    private final Map<String, Integer> encodings = new ConcurrentHashMap<>();
    private volatile int encodingsEpoch;

    public ContextSetter(JavaProfiler profiler, List<String> attributes) {
        this.profiler = profiler;
        // As upstream: the first MAX_CONTEXT_SLOTS names, then duplicates dropped (so a
        // duplicate among them costs a slot).
        List<String> kept = new ArrayList<>();
        if (attributes != null) {
            int n = Math.min(attributes.size(), JavaProfiler.MAX_CONTEXT_SLOTS);
            kept.addAll(new LinkedHashSet<>(attributes.subList(0, n)));
        }
        this.attributes = Collections.unmodifiableList(kept);
        this.encodingsEpoch = JavaProfiler.contextEpoch();
    }

    /**
     * The dictionary encoding of {@code value} (for {@link #setContextValue(int, int)}), or 0 if
     * it cannot be encoded ({@code null}, a full dictionary, no native library).
     */
    public int encode(String value) {
        if (value == null) {
            return 0;
        }
        int epoch = JavaProfiler.contextEpoch();
        if (epoch != encodingsEpoch) {
            // A new recording cleared the dictionary: cached encodings are stale.
            encodings.clear();
            encodingsEpoch = epoch;
        }
        Integer cached = encodings.get(value);
        if (cached != null) {
            return cached;
        }
        if (encodings.size() >= ENCODE_CACHE_LIMIT) {
            return 0;
        }
        int e = profiler == null ? 0 : profiler.registerConstant(value);
        if (e <= 0) {
            return 0;
        }
        encodings.putIfAbsent(value, e);
        return e;
    }

    /** The slot of {@code attribute}, or -1 if it is not configured. */
    public int offsetOf(String attribute) {
        return attributes.indexOf(attribute);
    }

    /** The number of slots (configured attributes after de-duplication and truncation). */
    public int size() {
        return attributes.size();
    }

    /** The encodings of the calling thread's slots, one per configured attribute. */
    public int[] snapshotTags() {
        int[] snapshot = new int[attributes.size()];
        snapshotTags(snapshot);
        return snapshot;
    }

    /** Fills {@code snapshot} with the calling thread's encodings (if it has at most {@link #size()} entries). */
    public void snapshotTags(int[] snapshot) {
        if (profiler != null && snapshot != null && snapshot.length <= attributes.size()) {
            profiler.copyTags(snapshot);
        }
    }

    public boolean setContextValue(String attribute, String value) {
        return setContextValue(offsetOf(attribute), value);
    }

    /**
     * Sets slot {@code offset} to {@code value}; false only for a negative slot. As in
     * java-profiler 1.34, a value that cannot be encoded ({@code null}, a full dictionary)
     * clears the slot.
     */
    public boolean setContextValue(int offset, String value) {
        if (offset < 0) {
            return false;
        }
        return setContextValue(offset, encode(value));
    }

    /** Sets slot {@code offset} to an encoding from {@link #encode}; false for a negative slot or encoding. */
    public boolean setContextValue(int offset, int encoding) {
        if (offset < 0 || encoding < 0 || profiler == null) {
            return false;
        }
        profiler.setContextValue(offset, encoding);
        return true;
    }

    public boolean clearContextValue(String attribute) {
        return clearContextValue(offsetOf(attribute));
    }

    /** Clears slot {@code offset}; false for a negative slot. */
    public boolean clearContextValue(int offset) {
        if (offset < 0 || profiler == null) {
            return false;
        }
        profiler.setContextValue(offset, 0);
        return true;
    }
}
