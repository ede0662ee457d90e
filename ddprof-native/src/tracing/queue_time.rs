//! `recordQueueTime`: the class-name dictionary of the events (per recording, bounded)
//! and the queue-time events waiting for the next chunk (bounded per chunk).

use std::sync::Arc;

use super::dict::BoundedNames;
use crate::sample::record::Context;

/// Queue-time events one chunk can hold; later ones are dropped (`tracing_events_dropped`).
pub const MAX_PENDING_QUEUE_TIMES: usize = 32_768;
/// Distinct class names per recording.
pub const MAX_CLASS_NAMES: i64 = 1 << 16;

/// One `datadog.QueueTime` row. Class names as `Class.getName()` gives them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueTimeEvent {
    pub start_ticks: i64,
    pub end_ticks: i64,
    /// The thread that dequeued the task (the caller).
    pub tid: i32,
    /// The thread that enqueued it.
    pub origin_tid: i32,
    pub task: Option<Arc<str>>,
    pub scheduler: Option<Arc<str>>,
    pub queue_type: Option<Arc<str>>,
    pub queue_length: i32,
    /// The caller's trace context at the call.
    pub context: Context,
}

/// What `record` is given: the event without its interned names.
pub struct QueueTimeArgs<'a> {
    pub start_ticks: i64,
    pub end_ticks: i64,
    pub tid: i32,
    pub origin_tid: i32,
    pub task: Option<&'a str>,
    pub scheduler: Option<&'a str>,
    pub queue_type: Option<&'a str>,
    pub queue_length: i32,
    pub context: Context,
}

#[derive(Default)]
pub struct QueueTimes {
    classes: BoundedNames,
    pending: Vec<QueueTimeEvent>,
    /// Events not kept: the chunk's buffer or the class dictionary was full.
    pub dropped: u64,
}

impl QueueTimes {
    /// Buffers one event for the next chunk. False when it was dropped (counted).
    pub fn record(&mut self, a: &QueueTimeArgs) -> bool {
        if self.pending.len() >= MAX_PENDING_QUEUE_TIMES {
            self.dropped += 1;
            return false;
        }
        // As upstream: a class that cannot be named (the dictionary is full) drops the event.
        let mut intern = |n: Option<&str>| match n {
            None => Ok(None),
            Some(s) => self.classes.lookup(s, MAX_CLASS_NAMES).map(Some).ok_or(()),
        };
        let (Ok(task), Ok(scheduler), Ok(queue_type)) =
            (intern(a.task), intern(a.scheduler), intern(a.queue_type))
        else {
            self.dropped += 1;
            return false;
        };
        let _mem = crate::footprint::scope(crate::footprint::Category::JfrBuffers);
        self.pending.push(QueueTimeEvent {
            start_ticks: a.start_ticks,
            end_ticks: a.end_ticks,
            tid: a.tid,
            origin_tid: a.origin_tid,
            task,
            scheduler,
            queue_type,
            queue_length: a.queue_length,
            context: a.context,
        });
        true
    }

    pub fn take(&mut self) -> Vec<QueueTimeEvent> {
        std::mem::take(&mut self.pending)
    }

    pub fn class_names(&self) -> usize {
        self.classes.len()
    }

    pub fn reset(&mut self) {
        *self = QueueTimes::default();
    }

    pub fn discard_pending(&mut self) {
        self.pending = Vec::new();
    }
}
