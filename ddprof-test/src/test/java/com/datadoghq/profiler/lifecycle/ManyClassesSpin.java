package com.datadoghq.profiler.lifecycle;

import java.util.function.LongConsumer;

import com.datadoghq.profiler.testing.Spinner;

/**
 * Loaded once per {@link com.datadoghq.profiler.testing.IsolatingLoader} by {@link CheckedJniMain}:
 * each copy is a class of its own, so that a dump names hundreds of distinct classes.
 */
public final class ManyClassesSpin implements LongConsumer {
    @Override
    public void accept(long millis) {
        Spinner.firstPeriod(millis);
    }
}
