/**
 * Benchmarks for ddprof: profiling overhead, the profiler's native memory, dump latency and
 * class-loading throughput, each run in fresh child JVMs and reported against a baseline run in
 * the same invocation.
 *
 * <p>{@link com.datadoghq.profiler.bench.OverheadBenchmark} ({@code scripts/bench.sh},
 * {@code docs/benchmarks.md}): CPU overhead of ddprof and of the JDK's JFR on a CPU-bound
 * workload, plus dump and stop latency. {@link com.datadoghq.profiler.bench.MemoryBenchmark},
 * {@link com.datadoghq.profiler.bench.ClassChurnBenchmark} and
 * {@link com.datadoghq.profiler.bench.DumpLatencyBenchmark} ({@code scripts/bench-lazy.sh}): the
 * jmethodID modes.
 */
package com.datadoghq.profiler.bench;
