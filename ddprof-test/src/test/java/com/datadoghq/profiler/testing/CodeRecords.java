package com.datadoghq.profiler.testing;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Checks a code map's records in file order (perf map lines, jitdump code loads): a record that
 * repeats the latest one for its exact range, with no record for an overlapping range written
 * in between, says nothing new. The profiler must not write such repeats, however many times it
 * is started (each start replays all the code that exists). Code that comes back to a range other
 * code used meanwhile is not a repeat.
 */
public final class CodeRecords {
    private final TreeMap<Long, long[]> latest = new TreeMap<>();
    private final Map<Long, String> names = new TreeMap<>();
    private final List<String> repeats = new ArrayList<>();
    private int count;

    /** Notes the next record of the file. */
    public void add(long start, long size, String name) {
        count++;
        long end = start + size;
        long[] at = latest.get(start);
        if (at != null && at[0] == end && name.equals(names.get(start))) {
            repeats.add(Long.toHexString(start) + " " + Long.toHexString(size) + " " + name);
            return;
        }
        Map.Entry<Long, long[]> before = latest.lowerEntry(start);
        if (before != null && before.getValue()[0] > start) {
            latest.remove(before.getKey());
        }
        for (Long s : new ArrayList<>(latest.subMap(start, end).keySet())) {
            latest.remove(s);
        }
        latest.put(start, new long[] {end});
        names.put(start, name);
    }

    /** The records that repeated what the file said already. */
    public List<String> repeats() {
        return repeats;
    }

    /** How many records were noted. */
    public int count() {
        return count;
    }
}
