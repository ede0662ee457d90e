/**
 * Benchmarks for ddprof: profiling overhead, the profiler's native memory, dump latency and
 * class-loading throughput, each reported as a ratio against a baseline run in the same
 * invocation. Placeholder until the first benchmark lands.
 */
package com.datadoghq.profiler.bench;
