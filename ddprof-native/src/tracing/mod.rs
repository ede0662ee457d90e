//! What the tracer records through the API, off the signal path: `datadog.Endpoint` rows
//! (`recordTraceRoot`) and `datadog.QueueTime` events (`recordQueueTime`). A call appends to
//! a Mutex-guarded, bounded buffer; the dump takes each buffer whole ([`take`]), so an event
//! lands in exactly one chunk, the first written after it. Dictionaries (endpoints, operation
//! and class names) live for a recording: `start` clears them, `resume` keeps them, a dump
//! keeps them, as upstream's do.

mod dict;
mod endpoints;
mod queue_time;

#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::LazyLock;

use parking_lot::Mutex;

use crate::counters::Counter;
use crate::jfr::{self, ChunkBuilder};
use crate::sample::context::{gettid, MAX_ATTRIBUTES};
use crate::sample::handler;
use crate::sample::record::Context;

pub use endpoints::{At, EndpointEvent, Endpoints, MAX_OPERATIONS, MAX_PENDING_ENDPOINTS};
pub use queue_time::{
    QueueTimeArgs, QueueTimeEvent, QueueTimes, MAX_CLASS_NAMES, MAX_PENDING_QUEUE_TIMES,
};

/// A recording is running: events are kept (set by `start`, cleared by `stop`).
static ACTIVE: AtomicBool = AtomicBool::new(false);
static ENDPOINTS: LazyLock<Mutex<Endpoints>> = LazyLock::new(Default::default);
static QUEUE_TIMES: LazyLock<Mutex<QueueTimes>> = LazyLock::new(Default::default);

/// `recordTraceRoot`: whether `endpoint` was accepted (known, or a new one within
/// `size_limit` distinct endpoints of this recording). While idle nothing is written, but
/// the answer is the dictionary's, as upstream.
pub fn record_trace_root(
    endpoint: &str,
    operation: Option<&str>,
    root_span_id: u64,
    size_limit: i32,
) -> bool {
    let at = ACTIVE.load(Ordering::Acquire).then(|| At {
        ticks: handler::ticks(),
        tid: gettid(),
    });
    let mut e = ENDPOINTS.lock();
    let dropped = e.dropped;
    let accepted = e.record(endpoint, operation, root_span_id, size_limit, at);
    publish_endpoints(&e);
    if e.dropped != dropped {
        Counter::TracingEventsDropped.inc();
    }
    accepted
}

/// A queue-time event as the API hands it over (the caller's tid and context are added).
pub struct QueueTimeCall<'a> {
    pub start_ticks: i64,
    pub end_ticks: i64,
    pub origin_tid: i32,
    pub task: Option<&'a str>,
    pub scheduler: Option<&'a str>,
    pub queue_type: Option<&'a str>,
    pub queue_length: i32,
}

/// `recordQueueTime`: buffers the event for the next chunk, with the calling thread's tid
/// and trace context. Nothing while idle.
pub fn record_queue_time(call: &QueueTimeCall) {
    if !ACTIVE.load(Ordering::Acquire) {
        return;
    }
    let args = QueueTimeArgs {
        start_ticks: call.start_ticks,
        end_ticks: call.end_ticks,
        tid: gettid(),
        origin_tid: call.origin_tid,
        task: call.task,
        scheduler: call.scheduler,
        queue_type: call.queue_type,
        queue_length: call.queue_length,
        context: Context::of_current_thread(),
    };
    if !QUEUE_TIMES.lock().record(&args) {
        Counter::TracingEventsDropped.inc();
    }
}

/// An event that could not be recorded before reaching the buffer (no origin tid).
pub fn note_dropped() {
    Counter::TracingEventsDropped.inc();
}

/// Whether events are being kept.
pub fn is_active() -> bool {
    ACTIVE.load(Ordering::Acquire)
}

fn publish_endpoints(e: &Endpoints) {
    let (keys, bytes) = e.added();
    Counter::DictionaryEndpointsKeys.set(keys as i64);
    Counter::DictionaryEndpointsKeysBytes.set(bytes as i64);
    // Measured by the counting allocator: the names, their table and the allocator's tags.
    // Only the dictionary's holder changes it, and it publishes right after (`of` flushes
    // the caller's batch first).
    let held = crate::footprint::of(crate::footprint::Category::Endpoints)
        .live
        .max(0) as usize;
    Counter::DictionaryEndpointsBytes.set(held as i64);
    Counter::DictionaryEndpointsPages.set(held.div_ceil(crate::footprint::page_size()) as i64);
}

/// A recording starts (`reset`: `start`, else `resume`): events from before it are
/// dropped; `start` also empties the dictionaries.
pub fn on_start(reset: bool) {
    {
        let mut e = ENDPOINTS.lock();
        if reset {
            e.reset();
        } else {
            e.discard_pending();
        }
        publish_endpoints(&e);
    }
    {
        let mut q = QUEUE_TIMES.lock();
        if reset {
            q.reset();
        } else {
            q.discard_pending();
        }
    }
    ACTIVE.store(true, Ordering::Release);
}

/// The recording stops: later calls keep nothing (the last chunk takes what came before).
pub fn on_stop() {
    ACTIVE.store(false, Ordering::Release);
}

/// The events of one chunk.
#[derive(Default)]
pub struct Pending {
    pub endpoints: Vec<EndpointEvent>,
    pub queue_times: Vec<QueueTimeEvent>,
}

/// Takes every buffered event: the chunk boundary for these events.
pub fn take() -> Pending {
    let endpoints = {
        let mut e = ENDPOINTS.lock();
        let taken = e.take();
        publish_endpoints(&e);
        taken
    };
    Pending {
        endpoints,
        queue_times: QUEUE_TIMES.lock().take(),
    }
}

/// Writes `pending` into `chunk`. `attribute_key` turns a context-dictionary id (never 0)
/// into the chunk's AttributeValue key, as for samples. Returns the tids the events name,
/// for the Thread pool.
pub fn write_events(
    chunk: &mut ChunkBuilder,
    pending: &Pending,
    mut attribute_key: impl FnMut(&mut ChunkBuilder, u32) -> u32,
) -> Vec<i64> {
    let mut tids = Vec::new();
    for ep in &pending.endpoints {
        let endpoint = chunk.intern_string(&ep.endpoint);
        let operation = ep
            .operation
            .as_ref()
            .map_or(0, |o| chunk.intern_attribute_value(o));
        chunk.endpoint(&jfr::Endpoint {
            ticks: ep.ticks,
            duration_ticks: 0,
            tid: i64::from(ep.tid),
            trace_key: 0,
            endpoint,
            operation,
            local_root_span_id: ep.root_span_id as i64,
        });
        tids.push(i64::from(ep.tid));
    }
    let mut attrs = [0u32; MAX_ATTRIBUTES];
    for q in &pending.queue_times {
        let mut class =
            |n: &Option<std::sync::Arc<str>>| n.as_ref().map_or(0, |n| chunk.intern_class(n));
        let (task, scheduler, queue_type) =
            (class(&q.task), class(&q.scheduler), class(&q.queue_type));
        for (key, id) in attrs.iter_mut().zip(q.context.attrs.iter()) {
            *key = match *id {
                0 => 0,
                id => attribute_key(chunk, id),
            };
        }
        chunk.queue_time(&jfr::QueueTime {
            ticks: q.start_ticks,
            duration_ticks: q.end_ticks - q.start_ticks,
            tid: i64::from(q.tid),
            origin_tid: i64::from(q.origin_tid),
            task,
            scheduler,
            queue_type,
            queue_length: q.queue_length,
            span_id: q.context.span_id as i64,
            local_root_span_id: q.context.root_span_id as i64,
            attrs: &attrs,
        });
        tids.push(i64::from(q.tid));
        tids.push(i64::from(q.origin_tid));
    }
    tids
}
