//! Named counters and gauges, read by `getDebugCounters()` and written to every chunk
//! as `datadog.ProfilerCounter` events.
//!
//! One table declares every name; each counter is a 64-bit atomic alone in a 128-byte
//! slot, because the Java side reads the array as a direct ByteBuffer where counter `i`
//! is a little-endian long at offset `i * 128` (the upstream layout), and because
//! signal handlers on different CPUs bump neighbouring counters.
//! Signal-safe: `inc`, `add`, `set`, `max` are plain atomics.
//!
//! The few counters the signal handler adds to on every sample ([`Hot`]) are kept per stripe
//! of threads (`tid % HOT_STRIPES`), one 128-byte row per stripe, so that handlers on different
//! CPUs do not take one line from each other at every sample; [`fold_hot`] moves the rows into
//! the slots before anything reads them ([`Counter::get`] of those, the Java view, [`snapshot`]).

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::OnceLock;

macro_rules! counters {
    ($($(#[$cfg:meta])* $variant:ident => $name:literal,)*) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(usize)]
        pub enum Counter { $($(#[$cfg])* $variant,)* }

        /// Counter names in slot order.
        pub const NAMES: &[&str] = &[$($(#[$cfg])* $name,)*];
    };
}

counters! {
    Samples => "samples",
    NativePanics => "native_panics",
    SamplesDroppedBufferFull => "samples_dropped_buffer_full",
    // Weighted samples (allocations, native blocks, socket calls) left out as a chunk's
    // sample buffer filled; the kept ones' weights carry them (sample/alloc.rs `thin`).
    SamplesThinned => "samples_thinned",
    SamplesDroppedBusy => "samples_dropped_thread_local",
    CallTraceStorageTraces => "calltrace_storage_traces",
    CallTraceStorageBytes => "calltrace_storage_bytes",
    // Since the start: every trace stored, and its bytes (the two above count what the
    // tables hold now, which a dump empties).
    CallTraceStorageInserts => "calltrace_storage_inserts",
    CallTraceStorageInsertedBytes => "calltrace_storage_inserted_bytes",
    CallTraceStorageDroppedTraces => "calltrace_storage_dropped_traces",
    // The trace tables' frame arenas, upstream's linear allocator: bytes handed out since
    // their last clear, and arenas handing out any (0-2; the two generations).
    LinearAllocatorBytes => "linear_allocator_bytes",
    LinearAllocatorChunks => "linear_allocator_chunks",
    CtimerSignalOwn => "ctimer_signal_own",
    CtimerSignalForeign => "ctimer_signal_foreign",
    CtimerTimerCreateFailed => "ctimer_timer_create_failed",
    CtimerThreadsArmed => "ctimer_threads_armed",
    CtimerOverruns => "ctimer_overruns",
    // CPU signals that came while the wall handler ran (held by its `sa_mask`, then recorded
    // against the interrupted code): the wall handler's CPU, in CPU samples. The CPU
    // handler's own time is `unwinding_*` (a `sigpending` per CPU sample was not worth it).
    CpuSamplesInHandlers => "cpu_samples_in_handlers",
    CtimerTimersPruned => "ctimer_timers_pruned",
    HandlerDrainTimeout => "handler_drain_timeout",
    // perf_events engine (engine/perf.rs, sample/perf.rs).
    PerfSignalOwn => "perf_signal_own",
    PerfThreadsArmed => "perf_threads_armed",
    PerfOpenFailed => "perf_open_failed",
    PerfOpenEmfile => "perf_open_emfile",
    PerfFdsPruned => "perf_fds_pruned",
    PerfFdsLeaked => "perf_fds_leaked",
    PerfMergedPeriods => "perf_merged_periods",
    PerfReenabled => "perf_reenabled",
    PerfSamplesDeferred => "perf_samples_deferred",
    PerfSamplesAccountedAlready => "perf_samples_accounted_already",
    // Kernel frames of perf_events samples recorded, and threads whose ring buffer could not
    // be mapped (they are sampled without kernel frames).
    PerfKernelFrames => "perf_kernel_frames",
    PerfRingFailed => "perf_ring_failed",
    // Signals whose count the handler read with read(2) (no ring, or only lost records in it),
    // and the overflow records the kernel could not write to a full ring (PERF_RECORD_LOST).
    PerfCountRead => "perf_count_read",
    PerfRingLost => "perf_ring_lost",
    // The effective CPU engine (1 = CTimer, 2 = ITimer, 3 = PerfEvents, 0 = none), whether
    // the requested one was refused (1) and ctimer took over, and the achieved samples per
    // CPU-second of the process in the last chunk (a busy thread's samples per second).
    CpuEngine => "cpu_engine",
    CpuEngineFallback => "cpu_engine_fallback",
    CpuSamplesPerCpuSecond => "cpu_samples_per_cpu_second",
    // The process's context switches per second of its CPU time over the last 5-second window
    // (profiler/switch_price.rs: what a per-thread perf fd costs grows with it).
    CpuSwitchesPerCpuSecond => "cpu_switches_per_cpu_second",
    // Wall-clock sampling (engine/wall.rs, sample/wall.rs), upstream's names first.
    WallclockSignalOwn => "wallclock_signal_own",
    WallclockSignalForeign => "wallclock_signal_foreign",
    // Times another library's disposition was found in force for a sampling signal in use
    // (SIGPROF, SIGVTALRM) instead of our handler, once per intruder (profiler/handlers.rs).
    SignalHandlerReplaced => "signal_handler_replaced",
    SkippedWallclockUnwinds => "skipped_wallclock_unwinds",
    WcSignalsQueueFull => "wc_signals_queue_full",
    WcUnownedBlockedSuppressed => "wc_unowned_blocked_suppressed",
    WcSignalsSuppressedSampledRun => "wc_signals_suppressed_sampled_run",
    WcUnownedBlockedRecorded => "wc_unowned_blocked_recorded",
    ThreadFilterPages => "thread_filter_pages",
    ThreadFilterBytes => "thread_filter_bytes",
    // Signals the sampler queued, the ones that failed (thread gone, queue full, ...), and
    // the observations of idle threads recorded without a signal.
    WallclockSignalsSent => "wallclock_signals_sent",
    WallclockSignalsFailed => "wallclock_signals_failed",
    WallclockIdleSamples => "wallclock_idle_samples",
    WallclockTicks => "wallclock_ticks",
    // Registered threads (addThread) now.
    ThreadFilterThreads => "thread_filter_threads",
    ThreadIdsCount => "thread_ids_count",
    ThreadNamesCount => "thread_names_count",
    AgctNoJavaFrame => "agct_no_java_frame",
    AgctNoClassLoad => "agct_no_class_load",
    AgctGcActive => "agct_gc_active",
    AgctUnknownNotJava => "agct_unknown_not_java",
    AgctNotWalkableNotJava => "agct_not_walkable_not_java",
    AgctUnknownJava => "agct_unknown_java",
    AgctNotWalkableJava => "agct_not_walkable_java",
    AgctUnknownState => "agct_unknown_state",
    AgctThreadExit => "agct_thread_exit",
    AgctDeopt => "agct_deopt",
    AgctSafepoint => "agct_safepoint",
    AgctOther => "agct_other_error",
    AgctUnavailable => "agct_unavailable",
    WalkTruncated => "walk_truncated",
    WalkvmNotJavaThread => "walkvm_not_java_thread",
    WalkvmNoJavaFrame => "walkvm_no_java_frame",
    WalkvmUnknownPc => "walkvm_unknown_pc",
    WalkvmBadSp => "walkvm_bad_sp",
    WalkvmBadFrame => "walkvm_bad_frame",
    WalkvmNoScope => "walkvm_no_scope",
    WalkvmDeoptimizing => "walkvm_deoptimizing",
    WalkvmUnavailable => "walkvm_unavailable",
    WalkvmVtableReceivers => "walkvm_vtable_receivers",
    WalkvmVtableReceiverUnread => "walkvm_vtable_receiver_unread",
    VtableReceiverResolveFailed => "vtable_receiver_resolve_failed",
    WalkvmFramesId => "walkvm_frames_jmethodid",
    WalkvmFramesRaw => "walkvm_frames_raw",
    WalkvmNativeRecovered => "walkvm_native_recovered",
    WalkvmNativeFrames => "walkvm_native_frames",
    WalkvmNativeBroken => "walkvm_native_chain_broken",
    WalkvmNativeOnly => "walkvm_native_only_stacks",
    WalkvmNativeDwarfSteps => "walkvm_native_dwarf_steps",
    NativeUnwindTableBytes => "native_unwind_table_bytes",
    // Times the library watcher (profiler/libraries.rs) saw the loaded objects change and
    // refreshed the unwind rules and the import-slot hooks.
    LibraryRefreshes => "library_refreshes",
    // Native pcs of live traces named on the library watcher's thread, before a dump
    // needed them (profiler/ahead.rs).
    NativePcsNamedAhead => "native_pcs_named_ahead",
    NativePcNamesKept => "native_pc_names_kept",
    // Native pcs in files a dump named itself: neither kept nor named ahead.
    NativePcsNamedAtDump => "native_pcs_named_at_dump",
    // jmethodIDs of live traces whose metadata the watcher read ahead (methods/ahead_ids.rs),
    // and those a dump named from it.
    JmethodidNamesReadAhead => "jmethodid_names_read_ahead",
    JmethodidNamesTakenAhead => "jmethodid_names_taken_ahead",
    // Of those, the ones whose holder's name was read ahead too (JDK 17-24): no JVMTI call.
    JmethodidClassNamesTakenAhead => "jmethodid_class_names_taken_ahead",
    // remotesym (methods/native_names.rs NativeNames): distinct native pcs written for the backend
    // to symbolize, and libraries whose build id was read for them (per dump).
    RemoteSymbolicationFrames => "remote_symbolication_frames",
    RemoteSymbolicationLibs => "remote_symbolication_libs_with_build_id",
    // Threads the CPU engine armed without a ThreadStart (native threads never attached to
    // the JVM), found by the library watcher's once-a-second look at /proc/self/task.
    ThreadsAdopted => "threads_adopted",
    WalkCompareSamples => "walk_compare_samples",
    WalkCompareSame => "walk_compare_same",
    WalkCompareSameMethods => "walk_compare_same_methods",
    WalkCompareDiffer => "walk_compare_differ",
    WalkCompareAgctFailed => "walk_compare_agct_failed",
    UnwindingNanos => "unwinding_ticks_async",
    UnwindingNanosMax => "unwinding_ns_max",
    UnwindingNanosAvg => "unwinding_ns_avg",
    // The median and 99th percentile of the same handlers (`sample::handler_time`): what a
    // sample costs with preempted handlers left out of the middle.
    UnwindingNanosP50 => "unwinding_ns_p50",
    UnwindingNanosP99 => "unwinding_ns_p99",
    ChunkSamples => "chunk_samples",
    RecordingWriteErrors => "recording_write_errors",
    RecordingChunksDropped => "recording_chunks_dropped",
    ChunkSampleWeight => "chunk_sample_weight",
    ChunkSamplesPerThreadSecond => "chunk_samples_per_thread_second",
    ChunkSamplesUnnamed => "chunk_samples_unwalked_or_unnamed",
    JmethodidSkipped => "jmethodid_skipped_count",
    RawFrameUnresolved => "raw_frame_unresolved",
    LineNumberTables => "line_number_tables",
    MethodIdsPreloaded => "jmethodids_preloaded",
    ClassesPreloaded => "classes_preloaded",
    DictionaryContextKeys => "dictionary_context_keys",
    LazyFallback => "fjmethodid_lazy_fallback",
    KlassTraceIdOffset => "klass_trace_id_offset",
    ZgcMirrorRefreshes => "zgc_mirror_refreshes",
    KlassTraceIdBeyondTagRange => "klass_trace_id_beyond_tag_range",
    KlassRegistryEntries => "klass_registry_entries",
    KlassRegistryBytes => "klass_registry_bytes",
    KlassRegistryAddFailed => "klass_registry_add_failed",
    KlassRegistryRedefinitionsMarked => "klass_registry_redefinitions_marked",
    WalkvmRawFrameUntaggable => "walkvm_raw_frame_untaggable",
    MethodResolveLazyUnloaded => "method_resolve_lazy_unloaded",
    MethodResolveLazyStale => "method_resolve_lazy_stale",
    MethodResolveLazyNotCurrent => "method_resolve_lazy_not_current",
    MethodResolveLazyRedefined => "method_resolve_lazy_redefined",
    MethodResolveLazyByIdnum => "method_resolve_lazy_by_idnum",
    MethodResolveLazyUnreadable => "method_resolve_lazy_unreadable",
    MethodResolveLazyMetadata => "method_resolve_lazy_metadata",
    MethodResolveLazyVersionKeys => "method_resolve_lazy_version_keys",
    MethodResolveLazyKept => "method_resolve_lazy_kept",
    MethodResolveLazyKeptEntries => "method_resolve_lazy_kept_entries",
    MethodResolveLazyIdsCreated => "method_resolve_lazy_jmethodids_created",
    JmethodidNamesKept => "jmethodid_names_kept",
    JmethodidNamesKeptEntries => "jmethodid_names_kept_entries",
    JmethodidNamesFromMetadata => "jmethodid_names_from_metadata",
    JmethodidMetadataMismatches => "jmethodid_metadata_mismatches",
    RawFrameResolveCacheHits => "raw_frame_resolve_cache_hits",
    DumpCount => "dump_count",
    DumpNanosLast => "dump_ns_last",
    DumpAllocationsLast => "dump_allocations_last",
    WriterWaitTimeouts => "dump_writer_wait_timeouts",
    // Endpoints and queue times (tracing/): the endpoint dictionary of the recording, and
    // events dropped because a chunk's buffer (or the class-name dictionary) was full.
    DictionaryEndpointsKeys => "dictionary_endpoints_keys",
    DictionaryEndpointsKeysBytes => "dictionary_endpoints_keys_bytes",
    // The memory the endpoint dictionary holds (its `memory` category's live bytes), and
    // those bytes in whole pages.
    DictionaryEndpointsBytes => "dictionary_endpoints_bytes",
    DictionaryEndpointsPages => "dictionary_endpoints_pages",
    TracingEventsDropped => "tracing_events_dropped",
    // Allocation sampling (alloc/, sample/alloc.rs): ObjectSample events recorded, samples
    // lost (no frame buffer free, no walker), the heap-sampling interval now in force (the
    // rate controller moves it).
    AllocSamples => "alloc_samples",
    AllocSamplesDropped => "alloc_samples_dropped",
    AllocIntervalBytes => "alloc_interval_bytes",
    // Native memory sampling (nativemem/, sample/nativemem.rs): NativeMemoryAllocation
    // events recorded and samples lost, the interval in bytes; objects whose import slots
    // we redirected, the slots, and slots we could not write; sampled blocks still live
    // (not freed through a hooked library), sampled blocks freed, samples the live
    // table had no room for, and sampled blocks left out as the profiler's own (allocated
    // on its threads or below its code).
    NativememSamples => "nativemem_samples",
    NativememSamplesDropped => "nativemem_samples_dropped",
    NativememIntervalBytes => "nativemem_interval_bytes",
    NativememHookedLibraries => "nativemem_hooked_libraries",
    NativememHookedSlots => "nativemem_hooked_slots",
    NativememHookFailures => "nativemem_hook_failures",
    NativememLiveSamples => "nativemem_live_samples",
    NativememFreedSamples => "nativemem_freed_samples",
    NativememLiveTableFull => "nativemem_live_table_full",
    NativememOwnSkipped => "nativemem_own_skipped",
    // Socket I/O sampling (natsock/, sample/natsock.rs): NativeSocketEvent events recorded
    // and lost, the interval in nanoseconds now in force (the rate controller moves it),
    // objects and slots redirected and slots we could not write, sampled calls whose peer
    // was no TCP peer any more (fd reused), IPv6 peers the address table had no room for.
    NatsockEvents => "natsock_events",
    NatsockEventsDropped => "natsock_events_dropped",
    NatsockIntervalNanos => "natsock_interval_ns",
    NatsockHookedLibraries => "natsock_hooked_libraries",
    NatsockHookedSlots => "natsock_hooked_slots",
    NatsockHookFailures => "natsock_hook_failures",
    NatsockNotTcp => "natsock_not_tcp",
    NatsockPeersTableFull => "natsock_peers_table_full",
    // The live-heap tracker (alloc/live.rs): entries and capacity now, samples it could not
    // keep (table at its maximum), distinct stacks it holds, and the last dump's flush:
    // HeapLiveObject events written and nanoseconds spent.
    LiveHeapTracked => "live_heap_tracked",
    LiveHeapCapacity => "live_heap_capacity",
    LiveHeapDroppedFull => "live_heap_dropped_full",
    LiveHeapTraces => "live_heap_traces",
    LiveHeapWrittenLast => "live_heap_written_last",
    LiveHeapFlushNanosLast => "live_heap_flush_ns_last",
    // Allocator facts (footprint/malloc.rs); the arena figures are -1 when unknowable.
    MallocIsGlibc => "malloc_is_glibc",
    MallocHeaderBytes => "malloc_chunk_header_bytes",
    MallocArenaBytes => "malloc_arena_bytes",
    MallocInUseBytes => "malloc_in_use_bytes",
    MallocFreeHeldBytes => "malloc_free_held_bytes",
    MallocTrimmableBytes => "malloc_trimmable_bytes",
    MallocMmapBytes => "malloc_mmap_bytes",
    // The load census (sample/load_census.rs): VM walks, and the memory loads they made by call
    // site. Only in a build with the cargo feature `load-census` (a measurement build: each load
    // then costs a shared atomic add); absent from ordinary builds.
    #[cfg(feature = "load-census")]
    LoadCensusWalks => "load_census_walks",
    #[cfg(feature = "load-census")]
    LoadCensusFrameSlot => "load_census_frame_slot",
    #[cfg(feature = "load-census")]
    LoadCensusStackPlain => "load_census_stack_plain",
    #[cfg(feature = "load-census")]
    LoadCensusCodeCache => "load_census_code_cache",
    #[cfg(feature = "load-census")]
    LoadCensusNmethodHeader => "load_census_nmethod_header",
    #[cfg(feature = "load-census")]
    LoadCensusPcDesc => "load_census_pc_desc",
    #[cfg(feature = "load-census")]
    LoadCensusScope => "load_census_scope",
    #[cfg(feature = "load-census")]
    LoadCensusInterpreter => "load_census_interpreter",
    #[cfg(feature = "load-census")]
    LoadCensusMethod => "load_census_method",
    #[cfg(feature = "load-census")]
    LoadCensusThread => "load_census_thread",
    #[cfg(feature = "load-census")]
    LoadCensusNative => "load_census_native",
    #[cfg(feature = "load-census")]
    LoadCensusOther => "load_census_other",
}

pub const COUNT: usize = NAMES.len();
pub const SLOT_BYTES: usize = 128;
/// Slots after the named counters, for gauges named elsewhere: the memory gauges, whose
/// names `footprint::gauge_names` gives and `crate::api::agent::attach` registers ([`name_gauges`]).
/// Counters stay below memory accounting this way (memory publishes into them).
pub const GAUGE_SLOTS: usize = 64;
const SLOTS_LEN: usize = COUNT + GAUGE_SLOTS;
static GAUGE_NAMES: OnceLock<fn() -> Vec<String>> = OnceLock::new();

/// Registers the names of the gauge slots (once, at load, before any read of [`names`]).
pub fn name_gauges(names: fn() -> Vec<String>) {
    let _ = GAUGE_NAMES.set(names);
}

#[repr(C, align(128))]
pub struct Slot(AtomicI64);

#[allow(clippy::declare_interior_mutable_const)]
const ZERO: Slot = Slot(AtomicI64::new(0));
static SLOTS: [Slot; SLOTS_LEN] = [ZERO; SLOTS_LEN];

/// The counters every sample adds to, striped (see the module comment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum Hot {
    Samples,
    UnwindingNanos,
    PerfSignalOwn,
    CtimerSignalOwn,
}

/// Stripes of [`Hot`] counters: two threads share one only if their tids do modulo this.
pub const HOT_STRIPES: usize = 16;

#[repr(C, align(128))]
struct HotRow([AtomicI64; Hot::ALL.len()]);

#[allow(clippy::declare_interior_mutable_const)]
const HOT_ZERO: HotRow = HotRow([const { AtomicI64::new(0) }; Hot::ALL.len()]);
static HOT_ROWS: [HotRow; HOT_STRIPES] = [HOT_ZERO; HOT_STRIPES];

impl Hot {
    /// Adds `n` in thread `tid`'s stripe. Signal-safe.
    #[inline]
    pub fn add(self, tid: i32, n: i64) {
        HOT_ROWS[tid as u32 as usize % HOT_STRIPES].0[self as usize]
            .fetch_add(n, Ordering::Relaxed);
    }

    #[inline]
    pub fn inc(self, tid: i32) {
        self.add(tid, 1);
    }

    pub const ALL: [Hot; 4] = [
        Hot::Samples,
        Hot::UnwindingNanos,
        Hot::PerfSignalOwn,
        Hot::CtimerSignalOwn,
    ];

    /// The named counter this one is.
    fn counter(self) -> Counter {
        match self {
            Hot::Samples => Counter::Samples,
            Hot::UnwindingNanos => Counter::UnwindingNanos,
            Hot::PerfSignalOwn => Counter::PerfSignalOwn,
            Hot::CtimerSignalOwn => Counter::CtimerSignalOwn,
        }
    }

    fn of(c: Counter) -> Option<Hot> {
        Hot::ALL.into_iter().find(|h| h.counter() == c)
    }

    fn clear_stripes(self) {
        for r in HOT_ROWS.iter() {
            r.0[self as usize].store(0, Ordering::Relaxed);
        }
    }
}

/// Moves what the stripes hold into the counters' slots (a swap per stripe: an add racing
/// with it lands in the stripe or in the slot, never in neither), for readers of the slots.
pub fn fold_hot() {
    for h in Hot::ALL {
        let moved: i64 = HOT_ROWS
            .iter()
            .map(|r| r.0[h as usize].swap(0, Ordering::Relaxed))
            .sum();
        if moved != 0 {
            h.counter().slot().fetch_add(moved, Ordering::Relaxed);
        }
    }
}

impl Counter {
    #[inline]
    fn slot(self) -> &'static AtomicI64 {
        &SLOTS[self as usize].0
    }
    #[inline]
    pub fn inc(self) {
        self.slot().fetch_add(1, Ordering::Relaxed);
    }
    #[inline]
    pub fn add(self, n: i64) {
        self.slot().fetch_add(n, Ordering::Relaxed);
    }
    #[inline]
    pub fn set(self, n: i64) {
        self.slot().store(n, Ordering::Relaxed);
        if let Some(h) = Hot::of(self) {
            h.clear_stripes();
        }
    }
    /// Raises the counter to `n` if `n` is greater. A plain load first: `fetch_max` is a
    /// compare-and-swap loop that takes the cache line for writing even when nothing changes,
    /// and the signal handler calls this on every sample from every CPU.
    #[inline]
    pub fn max(self, n: i64) {
        let slot = self.slot();
        if n > slot.load(Ordering::Relaxed) {
            slot.fetch_max(n, Ordering::Relaxed);
        }
    }
    pub fn get(self) -> i64 {
        if Hot::of(self).is_some() {
            fold_hot();
        }
        self.slot().load(Ordering::Relaxed)
    }
}

/// Every counter back to zero (on `start`).
pub fn reset_all() {
    for s in SLOTS.iter() {
        s.0.store(0, Ordering::Relaxed);
    }
    for h in Hot::ALL {
        h.clear_stripes();
    }
}

/// Sets memory gauge `i` (0-based after the named counters).
pub fn set_gauge(i: usize, v: i64) {
    if let Some(s) = SLOTS.get(COUNT + i) {
        s.0.store(v, Ordering::Relaxed);
    }
}

/// Every named slot: the table above, then the registered gauges (none before
/// [`name_gauges`]).
pub fn names() -> &'static [String] {
    static ALL: OnceLock<Vec<String>> = OnceLock::new();
    static NAMED: OnceLock<Vec<String>> = OnceLock::new();
    let named = || NAMES.iter().map(|n| n.to_string()).collect::<Vec<String>>();
    match GAUGE_NAMES.get() {
        Some(gauges) => ALL.get_or_init(|| {
            let mut v = named();
            v.extend(gauges());
            debug_assert!(v.len() <= SLOTS_LEN);
            v.truncate(SLOTS_LEN);
            v
        }),
        None => NAMED.get_or_init(named),
    }
}

/// (name, value) of every slot, in slot order.
pub fn snapshot() -> Vec<(&'static str, i64)> {
    fold_hot();
    names()
        .iter()
        .zip(SLOTS.iter())
        .map(|(n, s)| (n.as_str(), s.0.load(Ordering::Relaxed)))
        .collect()
}

/// Base address and byte length of the slot array, for the Java ByteBuffer view, with the
/// striped counters folded in (the view reads the slots as they are then).
pub fn raw_buffer() -> (*mut u8, usize) {
    fold_hot();
    (SLOTS.as_ptr() as *mut u8, SLOTS_LEN * SLOT_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_128_bytes_apart_and_names_unique() {
        assert_eq!(std::mem::size_of::<Slot>(), SLOT_BYTES);
        name_gauges(crate::footprint::gauge_names);
        let mut all = names().to_vec();
        assert_eq!(all.len(), COUNT + crate::footprint::GAUGES);
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), COUNT + crate::footprint::GAUGES);
    }

    #[test]
    fn striped_adds_reach_get_the_snapshot_and_the_java_view() {
        // Other tests may count too: every check is "at least what this test added".
        let slot_of = |c: Counter| {
            let (ptr, _) = raw_buffer();
            // SAFETY: raw_buffer is the slot array; slot `c` is an aligned i64 at c * 128.
            unsafe {
                (*(ptr.add(c as usize * SLOT_BYTES) as *const AtomicI64)).load(Ordering::Relaxed)
            }
        };
        let c = Counter::CtimerSignalOwn;
        let before = c.get();
        for tid in 0..(2 * HOT_STRIPES as i32) {
            Hot::CtimerSignalOwn.add(tid, 3);
        }
        let added = 3 * 2 * HOT_STRIPES as i64;
        assert!(c.get() >= before + added);
        for tid in [1, 17, 40_000] {
            Hot::CtimerSignalOwn.inc(tid);
        }
        let in_snapshot = snapshot()
            .into_iter()
            .find(|(n, _)| *n == "ctimer_signal_own")
            .map(|(_, v)| v);
        assert!(in_snapshot >= Some(before + added + 3), "{in_snapshot:?}");
        Hot::CtimerSignalOwn.inc(5);
        assert!(slot_of(c) >= before + added + 4);
    }
}
