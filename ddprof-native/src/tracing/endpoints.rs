//! `recordTraceRoot`: the endpoint dictionary (bounded by the caller's `sizeLimit`, per
//! recording) and the endpoint events waiting for the next chunk (bounded per chunk).
//!
//! The dictionary lives as long as the recording, as upstream's does: its dictionary is
//! rotated at every dump, but the new active buffer starts as a copy of the old one, so
//! `sizeLimit` counts the distinct endpoints since `start` there too. What a dump resets
//! is the count of endpoints added (`dictionary_endpoints_keys[_bytes]`).

use std::sync::Arc;

use super::dict::BoundedNames;

/// Endpoint events one chunk can hold; later ones are dropped (`tracing_events_dropped`).
pub const MAX_PENDING_ENDPOINTS: usize = 32_768;
/// Distinct operation names per recording (upstream bounds its context dictionary at 2^16).
pub const MAX_OPERATIONS: i64 = 1 << 16;

/// One `datadog.Endpoint` row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndpointEvent {
    pub ticks: i64,
    pub tid: i32,
    pub endpoint: Arc<str>,
    pub operation: Option<Arc<str>>,
    pub root_span_id: u64,
}

/// Where and when a trace root completed: present while a recording is running.
#[derive(Clone, Copy, Debug)]
pub struct At {
    pub ticks: i64,
    pub tid: i32,
}

pub struct Endpoints {
    /// Charged to their own memory category, which `dictionary_endpoints_bytes` reads.
    names: BoundedNames,
    operations: BoundedNames,
    pending: Vec<EndpointEvent>,
    /// Endpoints added to the dictionary since the last chunk, and their `len + 1` bytes.
    added: (usize, usize),
    /// Events not kept because the chunk's buffer was full.
    pub dropped: u64,
}

impl Default for Endpoints {
    fn default() -> Endpoints {
        Endpoints {
            names: BoundedNames::charged_to(crate::footprint::Category::Endpoints),
            operations: BoundedNames::default(),
            pending: Vec::new(),
            added: (0, 0),
            dropped: 0,
        }
    }
}

impl Endpoints {
    /// Upstream's `recordTrace0`: the endpoint is accepted if it is already known or the
    /// dictionary holds fewer than `size_limit` endpoints; an accepted endpoint gets an event
    /// when `at` is given (a recording is running). Returns whether it was accepted.
    pub fn record(
        &mut self,
        endpoint: &str,
        operation: Option<&str>,
        root_span_id: u64,
        size_limit: i32,
        at: Option<At>,
    ) -> bool {
        let known = self.names.len();
        let Some(endpoint) = self.names.lookup(endpoint, i64::from(size_limit)) else {
            return false;
        };
        if self.names.len() != known {
            self.added.0 += 1;
            self.added.1 += endpoint.len() + 1;
        }
        let Some(at) = at else {
            return true;
        };
        if self.pending.len() >= MAX_PENDING_ENDPOINTS {
            self.dropped += 1;
            return true;
        }
        let operation = operation.and_then(|o| self.operations.lookup(o, MAX_OPERATIONS));
        let _mem = crate::footprint::scope(crate::footprint::Category::JfrBuffers);
        self.pending.push(EndpointEvent {
            ticks: at.ticks,
            tid: at.tid,
            endpoint,
            operation,
            root_span_id,
        });
        true
    }

    /// The events since the last call, for one chunk; the count of added endpoints starts
    /// again.
    pub fn take(&mut self) -> Vec<EndpointEvent> {
        self.added = (0, 0);
        std::mem::take(&mut self.pending)
    }

    /// Endpoints added since the last chunk and their `len + 1` bytes
    /// (`dictionary_endpoints_keys[_bytes]`, which upstream resets at every dump).
    pub fn added(&self) -> (usize, usize) {
        self.added
    }

    /// Distinct endpoints of the recording (what `sizeLimit` bounds).
    pub fn known(&self) -> usize {
        self.names.len()
    }

    /// A new recording (`start`): no endpoints, no events.
    pub fn reset(&mut self) {
        *self = Endpoints::default();
    }

    /// Events not yet dumped are dropped (a resumed recording starts a new chunk series).
    pub fn discard_pending(&mut self) {
        self.pending = Vec::new();
    }
}
