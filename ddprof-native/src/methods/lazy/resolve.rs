//! Turning a tagged raw frame into a method-pool key at dump time, or refusing it. No
//! jmethodID is ever made here: an accepted frame is named from its method's metadata.
//!
//! The `Method*` in the frame may be stale: its class may have unloaded, its memory may
//! hold another method now, or the class may have been redefined. It is used as a lookup
//! key until proven live, in this order:
//! 1. under crash protection, read only its holder `Klass*` and its idnum;
//! 2. refuse classes being redefined now (`method_resolve_lazy_redefined`);
//! 3. pin the holder through the registry: a strong local reference to its mirror, so it
//!    cannot unload from here on (not registered or collected: `method_resolve_lazy_unloaded`);
//! 4. the pinned class's trace ID must match the frame's tag, else the `Klass*` now
//!    belongs to another class (`method_resolve_lazy_stale`);
//! 5. the `Method*` must be one of the class's current methods: the slot of its idnum,
//!    else a scan of classes of at most [`SCAN_CAP`] methods (`method_resolve_lazy_not_current`);
//! 6. only now is the method dereferenced: its name, descriptor, modifiers and line table
//!    are read from its metadata (`methods/raw.rs`: the content JVMTI would return for its
//!    jmethodID; `method_resolve_lazy_metadata`; unreadable: `method_resolve_lazy_unreadable`).
//!    The key is the method's jmethodID if something else made one (so it shares a pool
//!    entry with frames sampled with that ID), else the `Method*` | [`NO_ID_KEY`];
//! 7. the redefinition state is read again: a redefinition may have started during 3-6,
//!    and the reads of step 6 must not be trusted then.
//!
//! A redefined class (one whose redefinition succeeded, at any time) is accepted only for
//! traces whose every sample was taken after its latest redefinition ended
//! ([`LazyResolver::method_id`]'s `since`): a sample's time is read before its stack is
//! walked, so such a frame was walked from the class as it is now, and an old version's
//! `Method*` in it is not current (step 5), and cannot have been reused for a new method
//! since (that needs another redefinition, which would have ended later).
//!
//! Steps 2-4 are done once per class per dump, not per frame ([`LazyResolver`]): a class
//! stays pinned until the dump ends, so its `Klass*` cannot be reused and its trace ID
//! cannot change in between, and a class whose frames were refused at step 2 or 3 stays
//! refused for the rest of the dump (a conservative answer). Steps 1, 5, 6 and 7 stay per
//! frame: they are about the method. The class name comes from JVMTI, once per class
//! (`methods/resolve.rs`), which needs no jmethodID.

use crate::methods::word_map::WordMap;

use jni::sys::{jclass, JNIEnv};

use super::JniRefs;
use crate::counters::Counter;
use crate::jvmti::{self, redefine};
use crate::methods::raw::{self, MethodParts};
use crate::sample::frame::Frame;
use crate::sample::safe_access::load_usize;
use crate::sample::tags::{self, Tag};
use crate::sample::vm::codecache::load_field;
use crate::sample::vm::debuginfo::Encoding;
use crate::sample::vm::klass::{self, Contains};
use crate::sample::vm::layout::{self, MethodGroup};
use crate::sample::vm::{method, trace_id};

/// Largest class whose methods array is scanned when the idnum slot does not match.
pub const SCAN_CAP: usize = 256;

/// Local references reserved at a time for pinned classes (the JNI frame of the dump
/// grows by this much whenever it is full).
const PIN_CAPACITY_STEP: i32 = 256;

/// Why a tagged frame was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    Unloaded,
    Stale,
    NotCurrent,
    Redefined,
    /// Its metadata could not be read.
    Unreadable,
}

impl Refused {
    fn count(self) {
        match self {
            Refused::Unloaded => Counter::MethodResolveLazyUnloaded,
            Refused::Stale => Counter::MethodResolveLazyStale,
            Refused::NotCurrent => Counter::MethodResolveLazyNotCurrent,
            Refused::Redefined => Counter::MethodResolveLazyRedefined,
            Refused::Unreadable => Counter::MethodResolveLazyUnreadable,
        }
        .inc();
    }
}

/// Pool keys of accepted frames of methods without a jmethodID: the `Method*` with this bit
/// set. jmethodIDs are pointers below 2^47, so the two kinds of key never collide.
pub const NO_ID_KEY: u64 = 1 << 62;

/// A tagged frame that passed every check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Accepted {
    /// Its method-pool key: the method's jmethodID if it has one, else the `Method*` |
    /// [`NO_ID_KEY`]; such a frame always has its metadata in [`LazyResolver::take_parts`].
    pub key: u64,
    /// Its holder, pinned until the [`LazyResolver`] is dropped.
    pub klass: usize,
    /// A local reference to the holder's mirror, valid as long as the resolver.
    pub class: jclass,
    /// When the holder's latest redefinition ended, if it was ever redefined: the frame
    /// stands only in traces sampled after that.
    pub redefined_at: Option<i64>,
}

/// A class met in this dump: pinned (with the trace ID read after pinning), or refused
/// for every frame of this dump.
#[derive(Clone, Copy)]
enum ClassState {
    Pinned {
        class: jclass,
        trace_id: Option<u64>,
        redefined_at: Option<i64>,
    },
    Refused(Refused),
}

/// The lazy checks for one dump, on the dumping thread (`jni` is its env). Caches the
/// answer per distinct (untagged `Method*`, tag) and the pinned state per class. Holds
/// one local reference per pinned class, in a JNI local frame of its own that is popped
/// when the resolver is dropped.
pub struct LazyResolver {
    jni: *mut JNIEnv,
    classes: WordMap<usize, ClassState>,
    frames: WordMap<(u64, Tag), Result<Accepted, Refused>>,
    /// Metadata of accepted methods, by key, until [`Self::take_parts`].
    parts: WordMap<u64, MethodParts>,
    /// The compressed-stream encoding of line tables (the VM walker's).
    encoding: Option<Encoding>,
    /// Local references the pushed frame can hold; 0 until the first pin pushes it.
    local_capacity: i32,
    pinned: i32,
}

impl LazyResolver {
    pub fn new(jni: *mut JNIEnv) -> LazyResolver {
        LazyResolver {
            jni,
            classes: WordMap::default(),
            frames: WordMap::default(),
            parts: WordMap::default(),
            encoding: crate::sample::walk::vm::VmWalker::get().map(|w| w.encoding()),
            local_capacity: 0,
            pinned: 0,
        }
    }

    /// The checked pool key of a tagged raw frame's method in a trace whose earliest
    /// sample was taken at `since` (`sample::handler::ticks`), or `None` when refused (each
    /// distinct frame counted once, by reason; a redefined class's frame once per trace
    /// sampled too early). Repeats come from the cache (`raw_frame_resolve_cache_hits`).
    pub fn method_id(&mut self, method: u64, tag: Tag, since: i64) -> Option<Accepted> {
        let result = match self.frames.get(&(method, tag)) {
            Some(a) => {
                Counter::RawFrameResolveCacheHits.inc();
                *a
            }
            None => {
                let result = layout::get()
                    .and_then(|l| l.method.as_ref())
                    .ok_or(Refused::Unloaded)
                    .and_then(|m| self.checked_id(m, method as usize, tag));
                if let Err(r) = result {
                    r.count();
                }
                self.frames.insert((method, tag), result);
                result
            }
        };
        let a = result.ok()?;
        if a.redefined_at.is_some_and(|at| at >= since) {
            Refused::Redefined.count();
            return None;
        }
        Some(a)
    }

    /// Why [`Self::method_id`] refused this frame, if it did: its own refusal, else, for a
    /// frame of a redefined class in a trace sampled at `since`, that one.
    pub fn refusal(&self, method: u64, tag: Tag, since: i64) -> Option<Refused> {
        match self.frames.get(&(method, tag))? {
            Err(r) => Some(*r),
            Ok(a) if a.redefined_at.is_some_and(|at| at >= since) => Some(Refused::Redefined),
            Ok(_) => None,
        }
    }

    fn checked_id(
        &mut self,
        m: &MethodGroup,
        method: usize,
        tag: Tag,
    ) -> Result<Accepted, Refused> {
        // 1. Holder and idnum only.
        let holder = method::holder(m, method).ok_or(Refused::Unloaded)?;
        let idnum = method
            .checked_add(m.method.const_method)
            .and_then(load_usize)
            .and_then(|cm| load_field(cm, m.const_method.method_idnum))
            .ok_or(Refused::Unloaded)? as usize;
        // 2-3, once per class.
        let (class, trace_id, redefined_at) = match self.class_state(holder) {
            ClassState::Pinned {
                class,
                trace_id,
                redefined_at,
            } => (class, trace_id, redefined_at),
            ClassState::Refused(r) => return Err(r),
        };
        // 4. Against the ID read once the class was pinned.
        if !trace_id.is_some_and(|id| tag.matches(id)) {
            return Err(Refused::Stale);
        }
        // 5.
        let (data, len) = klass::methods(m, holder).ok_or(Refused::NotCurrent)?;
        if klass::methods_contain(data, len, method, idnum, SCAN_CAP, load_usize) != Contains::Yes {
            return Err(Refused::NotCurrent);
        }
        // 6. The metadata; an ID only if something else made it.
        let parts = self.encoding.and_then(|e| raw::method_parts(m, method, e));
        let id = method::jmethod_id(m, method).map(|id| id as u64);
        if parts.is_none() && id.is_none() {
            return Err(Refused::Unreadable);
        }
        // 7.
        let now = redefine::redefinition(holder);
        if now.in_flight || now.ended_at != redefined_at {
            return Err(Refused::Redefined);
        }
        let key = id.unwrap_or(method as u64 | NO_ID_KEY);
        if let Some(p) = parts {
            Counter::MethodResolveLazyMetadata.inc();
            self.parts.insert(key, p);
        }
        Ok(Accepted {
            key,
            klass: holder,
            class,
            redefined_at,
        })
    }

    /// Warms the cache for the distinct tagged frames the dump is about to check
    /// (`prefetch.rs`), in the order it will meet them.
    pub fn warm<'a>(&mut self, frames: impl Iterator<Item = &'a Frame>) {
        let Some(m) = layout::get().and_then(|l| l.method.as_ref()) else {
            return;
        };
        let mut seen: WordMap<u64, ()> = WordMap::default();
        let mut methods: Vec<usize> = Vec::new();
        for f in frames {
            let u = tags::untag(f);
            if u.tag.is_some() && seen.insert(u.method, ()).is_none() {
                methods.push(u.method as usize);
            }
        }
        super::prefetch::warm_frames(m, &methods);
    }

    /// The metadata read for an accepted frame, by its key (once; `None` if the reads
    /// failed, then JVMTI names it by its jmethodID).
    pub fn take_parts(&mut self, key: u64) -> Option<MethodParts> {
        self.parts.remove(&key)
    }

    /// Steps 2-3 (and the trace-ID read of step 4) for a class first met in this dump.
    fn class_state(&mut self, holder: usize) -> ClassState {
        if let Some(s) = self.classes.get(&holder) {
            return *s;
        }
        let redefinition = redefine::redefinition(holder);
        let state = if redefinition.in_flight {
            ClassState::Refused(Refused::Redefined)
        } else if !self.reserve_local() {
            ClassState::Refused(Refused::Unloaded)
        } else {
            match super::registry().pin(&JniRefs(self.jni), holder) {
                Some(class) => {
                    self.pinned += 1;
                    ClassState::Pinned {
                        class: class as jclass,
                        trace_id: trace_id::trace_id(holder),
                        redefined_at: redefinition.ended_at,
                    }
                }
                None => ClassState::Refused(Refused::Unloaded),
            }
        };
        self.classes.insert(holder, state);
        state
    }

    /// Room for one more local reference: the first call pushes a local frame of our
    /// own (popped on drop, which deletes every pin at once), later ones grow it.
    fn reserve_local(&mut self) -> bool {
        if self.pinned < self.local_capacity {
            return true;
        }
        let ok = if self.local_capacity == 0 {
            jvmti::push_local_frame(self.jni, PIN_CAPACITY_STEP)
        } else {
            jvmti::ensure_local_capacity(self.jni, PIN_CAPACITY_STEP)
        };
        if ok {
            self.local_capacity += PIN_CAPACITY_STEP;
        }
        ok
    }
}

impl Drop for LazyResolver {
    fn drop(&mut self) {
        if self.local_capacity > 0 {
            jvmti::pop_local_frame(self.jni);
        }
    }
}
