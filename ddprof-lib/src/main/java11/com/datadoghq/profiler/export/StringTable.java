package com.datadoghq.profiler.export;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** An interned string table whose entry 0 is "", as both pprof and OTLP require. */
public final class StringTable {
    private final List<String> strings = new ArrayList<>();
    private final Map<String, Integer> ids = new HashMap<>();

    public StringTable() {
        id("");
    }

    public int id(String s) {
        Integer id = ids.get(s);
        if (id == null) {
            id = strings.size();
            strings.add(s);
            ids.put(s, id);
        }
        return id;
    }

    public List<String> strings() {
        return strings;
    }
}
