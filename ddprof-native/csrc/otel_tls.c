/*
 * The OTel thread-context TLS slot (OTEP #4947 discovery symbol).
 *
 * Out-of-process readers (for example the OpenTelemetry eBPF profiler) look up the
 * thread-local symbol `otel_thread_ctx_v1` in the library's dynamic symbol table and read,
 * for a given thread, the pointer stored there: the address of that thread's context record
 * (docs/context.md). Stable Rust cannot define an exported thread-local (`#[thread_local]`
 * is unstable), so the slot is defined here in C and compiled by build.rs.
 *
 * Only the two accessors below touch the slot, and only on the owning thread, outside any
 * signal handler: the first access of a dlopen'ed library's TLS on a thread may allocate
 * (glibc `__tls_get_addr`) or take a lock (musl). The SIGPROF handler never reads it; it
 * finds the same record through the profiler's pthread key.
 */

extern __thread void *otel_thread_ctx_v1;

/* Points the calling thread's slot at `record` (or clears it with NULL). */
void ddprof_otel_tls_set(void *record) {
    otel_thread_ctx_v1 = record;
}

/* The calling thread's slot. */
void *ddprof_otel_tls_get(void) {
    return otel_thread_ctx_v1;
}
