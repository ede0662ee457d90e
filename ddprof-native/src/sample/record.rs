//! The one recording entry of every event source. A CPU sample from the SIGPROF handler,
//! and the wall-clock and allocation samples to come, all record through [`record`]: the
//! event kind, its weight, the thread's context and the walked frames. So they share one
//! trace table, one sample buffer and one JFR writer (`crate::dump` turns each kind into
//! its event type); a new source is an engine plus an event kind, never a second pipeline.

use super::context::{self, MAX_ATTRIBUTES};
use super::frame::Frame;
use super::traces::{Recorder, SampleRecord};

/// What a sample measures; stored in `SampleRecord::event`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum EventKind {
    /// CPU time (`datadog.ExecutionSample`); weight 1 per sampling interval.
    Cpu = 0,
    /// Wall-clock time (`datadog.MethodSample`); weight 1 per signal, more only for the
    /// observations a sample stands for (wall precheck, idle threads not signalled).
    Wall = 1,
    /// A sampled allocation (`datadog.ObjectSample`, JVMTI SampledObjectAlloc); its size,
    /// class and float weight are in [`Allocation`].
    Alloc = 2,
    /// A sampled native allocation (`datadog.NativeMemoryAllocation`, the `nativemem`
    /// malloc hooks); its size, address and weight are in [`Allocation`].
    NativeAlloc = 3,
    /// The free of a block a `NativeAlloc` sample recorded (`datadog.NativeMemoryFree`); its
    /// address is in [`Allocation`], its stack is empty.
    NativeFree = 4,
    /// A sampled TCP socket call (`datadog.NativeSocketEvent`, the `natsock` hooks); its
    /// weight is the call's duration in nanoseconds, the rest is in [`Socket`].
    NativeSocket = 5,
}

impl EventKind {
    /// The kind stored in a record, if it is one this build knows.
    pub fn from_raw(raw: u8) -> Option<EventKind> {
        match raw {
            x if x == EventKind::Cpu as u8 => Some(EventKind::Cpu),
            x if x == EventKind::Wall as u8 => Some(EventKind::Wall),
            x if x == EventKind::Alloc as u8 => Some(EventKind::Alloc),
            x if x == EventKind::NativeAlloc as u8 => Some(EventKind::NativeAlloc),
            x if x == EventKind::NativeFree as u8 => Some(EventKind::NativeFree),
            x if x == EventKind::NativeSocket as u8 => Some(EventKind::NativeSocket),
            _ => None,
        }
    }
}

/// What an allocation sample adds to its [`Event`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Allocation {
    /// Bytes of the sampled object.
    pub size: u64,
    /// Id of its class name (`crate::alloc` class-name table).
    pub class_id: u32,
    /// Objects of this size the sample stands for: `1 / (1 - exp(-size / interval))`.
    pub weight: f32,
    /// The block's address (native allocations; 0 for Java objects).
    pub address: u64,
}

/// What a socket sample adds to its [`Event`], kept in the record's kind-specific fields
/// (one place for the mapping both ways: [`Socket::payload`], [`Socket::of_record`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Socket {
    /// Bytes the call moved (its return value).
    pub bytes: u64,
    /// `1 / P(sampled)` at the interval of the moment.
    pub weight: f32,
    /// Index of `sample::natsock::OPERATIONS` (SEND, RECV, WRITE, READ).
    pub operation: u8,
    /// The peer, `sample::natsock::Peer::pack`.
    pub peer: u64,
}

impl Socket {
    /// As the record stores it: bytes in `size`, the peer in `address`, the operation in
    /// `class_id`, the weight in `alloc_weight`.
    pub fn payload(&self) -> Allocation {
        Allocation {
            size: self.bytes,
            class_id: u32::from(self.operation),
            weight: self.weight,
            address: self.peer,
        }
    }

    pub fn of_record(r: &SampleRecord) -> Socket {
        Socket {
            bytes: r.size,
            weight: f32::from_bits(r.alloc_weight),
            operation: r.class_id as u8,
            peer: r.address,
        }
    }
}

/// The trace context of the sampled thread at the instant of the sample.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Context {
    pub span_id: u64,
    pub root_span_id: u64,
    /// The 128-bit trace id (high, low); zero when the tracer set none. Written once per
    /// local root span into the chunk (`datadog.TraceLink`), not into each sample event.
    pub trace: (u64, u64),
    /// Context attribute ids (`crate::context::dictionary`), 0 = unset.
    pub attrs: [u32; MAX_ATTRIBUTES],
}

impl Context {
    /// The calling thread's context; all zero if it never set one, or while its record is
    /// being rewritten (not valid). Signal-safe: a pthread key read and relaxed loads of the
    /// thread's own record and sidecar (`context::ThreadContext::snapshot`). The exported
    /// TLS slot `otel_thread_ctx_v1` is never touched here: a first TLS access of a
    /// dlopen'ed library from a handler could allocate.
    #[link_section = sample_path_section!()]
    pub fn of_current_thread() -> Context {
        let Some(c) = context::context_for_signal() else {
            return Context::default();
        };
        let (span_id, root_span_id, attrs) = c.snapshot();
        Context {
            span_id,
            root_span_id,
            trace: c.trace(),
            attrs,
        }
    }
}

/// One event as a source hands it over.
pub struct Event<'a> {
    pub kind: EventKind,
    /// In the kind's unit: sampling intervals for CPU.
    pub weight: u64,
    /// CLOCK_MONOTONIC nanoseconds ([`super::handler::ticks`]).
    pub ticks: i64,
    pub tid: i32,
    pub context: Context,
    /// Leaf first.
    pub frames: &'a [Frame],
    /// The stack was deeper than `frames`.
    pub truncated: bool,
    /// ExecutionMode and ThreadState keys (`super::mode`).
    pub mode: u8,
    pub state: u8,
}

/// Interns the event's trace and appends its record. Signal-safe (no allocation, no lock;
/// bounded spins in the trace table). Returns false when the event was dropped (counted).
pub fn record(recorder: &Recorder, event: &Event) -> bool {
    record_traced(recorder, event).is_some()
}

/// [`record`] for an allocation sample (`event.kind` is [`EventKind::Alloc`] or
/// [`EventKind::NativeAlloc`]).
pub fn record_allocation(recorder: &Recorder, event: &Event, alloc: &Allocation) -> bool {
    recorder
        .record_traced(event.frames, event.truncated, |trace_id| {
            sample_record(event, trace_id, alloc)
        })
        .is_some()
}

/// [`record`], returning the generation epoch and trace id the event got (for a source
/// that may reuse the trace of an unchanged stack, [`record_reused`]). None when dropped.
pub fn record_traced(recorder: &Recorder, event: &Event) -> Option<(u64, u32)> {
    recorder.record_traced(event.frames, event.truncated, |trace_id| {
        sample_record(event, trace_id, &Allocation::default())
    })
}

/// Records `event` (its frames ignored) with the trace `trace_id` interned in generation
/// epoch `epoch`. None, and nothing recorded, when a dump retired that generation since:
/// the caller walks and records normally. Signal-safe.
pub fn record_reused(
    recorder: &Recorder,
    event: &Event,
    epoch: u64,
    trace_id: u32,
) -> Option<bool> {
    recorder.record_reused(epoch, trace_id, |id| {
        sample_record(event, id, &Allocation::default())
    })
}

fn sample_record(event: &Event, trace_id: u32, alloc: &Allocation) -> SampleRecord {
    SampleRecord {
        ticks: event.ticks,
        span_id: event.context.span_id,
        root_span_id: event.context.root_span_id,
        trace_high: event.context.trace.0,
        trace_low: event.context.trace.1,
        weight: event.weight,
        tid: event.tid,
        trace_id,
        attrs: event.context.attrs,
        event: event.kind as u8,
        mode: event.mode,
        state: event.state,
        size: alloc.size,
        class_id: alloc.class_id,
        alloc_weight: alloc.weight.to_bits(),
        address: alloc.address,
    }
}
