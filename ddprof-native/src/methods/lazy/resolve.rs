//! Turning a tagged raw frame into a method-pool key at dump time (its jmethodID, or its
//! checked `Method*` while its class's IDs are being made), or refusing it.
//!
//! The `Method*` in the frame may be stale: its class may have unloaded, its memory may
//! hold another method now, or the class may have been redefined. It is used as a lookup
//! key until proven live, in this order:
//! 1. under crash protection, read only its holder `Klass*` and its idnum;
//! 2. refuse classes marked by the redefinition hooks (`method_resolve_lazy_redefined`);
//! 3. pin the holder through the registry: a strong local reference to its mirror, so it
//!    cannot unload from here on (not registered or collected: `method_resolve_lazy_unloaded`);
//! 4. the pinned class's trace ID must match the frame's tag, else the `Klass*` now
//!    belongs to another class (`method_resolve_lazy_stale`);
//! 5. the `Method*` must be one of the class's current methods: the slot of its idnum,
//!    else a scan of classes of at most [`SCAN_CAP`] methods (`method_resolve_lazy_not_current`);
//! 6. only now is the method dereferenced: its name, descriptor, modifiers and line table
//!    are read from its metadata (`methods/raw.rs`: the content JVMTI would return for its
//!    jmethodID, without three VM calls per method), and its jmethodID from the class's
//!    ID cache. A class without IDs is queued for the ID thread (`ids.rs`), which makes
//!    them once the chunk is written, and the frame is keyed on its `Method*` meanwhile;
//!    without that thread, or when the metadata could not be read, or for the last chunk
//!    of a session, GetClassMethods makes them here (`method_resolve_lazy_class_loaded`
//!    counts the classes either way, `method_resolve_lazy_jmethodids_created` the IDs);
//! 7. the redefinition mark is checked again (a redefinition may have started during 3-6,
//!    and the reads of step 6 must not be trusted then).
//!
//! Steps 2-4 (and queueing or GetClassMethods) are done once per class per dump, not per
//! frame ([`LazyResolver`]): a class stays pinned until the dump ends, so its `Klass*`
//! cannot be reused and its trace ID cannot change in between, and a class whose frames
//! were refused at step 2 or 3 stays refused for the rest of the dump (a conservative
//! answer). Steps 1, 5, 6 and 7 stay per frame: they are about the method. The class name
//! comes from JVMTI, once per class (`methods/resolve.rs`). Later samples of the class
//! carry the real IDs and are named through JVMTI like any other.

use crate::methods::word_map::WordMap;

use jni::sys::{jclass, JNIEnv};

use super::JniRefs;
use crate::counters::Counter;
use crate::jvmti::{self, redefine, Jvmti};
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
}

impl Refused {
    fn count(self) {
        match self {
            Refused::Unloaded => Counter::MethodResolveLazyUnloaded,
            Refused::Stale => Counter::MethodResolveLazyStale,
            Refused::NotCurrent => Counter::MethodResolveLazyNotCurrent,
            Refused::Redefined => Counter::MethodResolveLazyRedefined,
        }
        .inc();
    }
}

/// Pool keys of accepted frames whose class has no jmethodIDs yet: the `Method*` with this
/// bit set. jmethodIDs are pointers below 2^47, so the two kinds of key never collide.
pub const NO_ID_KEY: u64 = 1 << 62;

/// A tagged frame that passed every check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Accepted {
    /// Its method-pool key: the method's jmethodID, or, while its class has none (they
    /// are being made by `ids.rs`), the `Method*` | [`NO_ID_KEY`]; such a frame always
    /// has its metadata in [`LazyResolver::take_parts`].
    pub key: u64,
    /// Its holder, pinned until the [`LazyResolver`] is dropped.
    pub klass: usize,
    /// A local reference to the holder's mirror, valid as long as the resolver.
    pub class: jclass,
}

/// Where a pinned class's jmethodIDs stand in this dump.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ids {
    /// Not looked at yet (the class may have them).
    Unknown,
    /// Made by GetClassMethods in this dump.
    Made,
    /// Queued for the ID thread (`ids.rs`).
    Queued,
}

/// A class met in this dump: pinned (with the trace ID read after pinning), or refused
/// for every frame of this dump.
#[derive(Clone, Copy)]
enum ClassState {
    Pinned {
        class: jclass,
        trace_id: Option<u64>,
        ids: Ids,
    },
    Refused(Refused),
}

/// The lazy checks for one dump, on the dumping thread (`jni` is its env). Caches the
/// answer per distinct (untagged `Method*`, tag) and the pinned state per class. Holds
/// one local reference per pinned class, in a JNI local frame of its own that is popped
/// when the resolver is dropped.
pub struct LazyResolver {
    jvmti: Jvmti,
    jni: *mut JNIEnv,
    classes: WordMap<usize, ClassState>,
    frames: WordMap<(u64, Tag), Result<Accepted, Refused>>,
    /// Metadata of accepted methods, by jmethodID, until [`Self::take_parts`].
    parts: WordMap<u64, MethodParts>,
    /// The compressed-stream encoding of line tables (the VM walker's).
    encoding: Option<Encoding>,
    /// Classes without IDs may be queued for the ID thread (`ids.rs`) instead of getting
    /// them during the dump.
    defer_ids: bool,
    /// Local references the pushed frame can hold; 0 until the first pin pushes it.
    local_capacity: i32,
    pinned: i32,
}

impl LazyResolver {
    /// `defer_ids`: leave the jmethodIDs of classes that have none to the ID thread
    /// (`ids.rs`) rather than making them during this dump (false for the last chunk of a
    /// session: no sample follows it).
    pub fn new(jvmti: Jvmti, jni: *mut JNIEnv, defer_ids: bool) -> LazyResolver {
        LazyResolver {
            jvmti,
            jni,
            classes: WordMap::default(),
            frames: WordMap::default(),
            parts: WordMap::default(),
            encoding: crate::sample::walk::vm::VmWalker::get().map(|w| w.encoding()),
            defer_ids,
            local_capacity: 0,
            pinned: 0,
        }
    }

    /// The checked jmethodID of a tagged raw frame's method, or `None` when refused (each
    /// distinct frame counted once, by reason). Repeats come from the cache
    /// (`raw_frame_resolve_cache_hits`).
    pub fn method_id(&mut self, method: u64, tag: Tag) -> Option<Accepted> {
        if let Some(a) = self.frames.get(&(method, tag)) {
            Counter::RawFrameResolveCacheHits.inc();
            return a.ok();
        }
        let result = layout::get()
            .and_then(|l| l.method.as_ref())
            .ok_or(Refused::Unloaded)
            .and_then(|m| self.checked_id(m, method as usize, tag));
        if let Err(r) = result {
            r.count();
        }
        self.frames.insert((method, tag), result);
        result.ok()
    }

    /// Why [`Self::method_id`] refused this frame, if it did.
    pub fn refusal(&self, method: u64, tag: Tag) -> Option<Refused> {
        self.frames.get(&(method, tag))?.err()
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
        let (class, trace_id, ids) = match self.class_state(holder) {
            ClassState::Pinned {
                class,
                trace_id,
                ids,
            } => (class, trace_id, ids),
            ClassState::Refused(r) => return Err(r),
        };
        // 4. Against the ID read once the class was pinned.
        let trace_id = match trace_id {
            Some(id) if tag.matches(id) => id,
            _ => return Err(Refused::Stale),
        };
        // 5.
        let (data, len) = klass::methods(m, holder).ok_or(Refused::NotCurrent)?;
        if klass::methods_contain(data, len, method, idnum, SCAN_CAP, load_usize) != Contains::Yes {
            return Err(Refused::NotCurrent);
        }
        // 6.
        let parts = self.encoding.and_then(|e| raw::method_parts(m, method, e));
        let id = match (method::jmethod_id(m, method), ids) {
            (Some(id), _) => Some(id as u64),
            // GetClassMethods made every current method's ID in this dump already.
            (None, Ids::Made) => return Err(Refused::NotCurrent),
            (None, Ids::Queued) if parts.is_some() => None,
            (None, _) => {
                let queued = self.defer_ids
                    && parts.is_some()
                    && match super::ids::request(holder, trace_id) {
                        super::ids::Requested::Queued => {
                            Counter::MethodResolveLazyClassLoaded.inc();
                            true
                        }
                        super::ids::Requested::AlreadyQueued => true,
                        super::ids::Requested::Unavailable => false,
                    };
                if queued {
                    self.set_ids(holder, Ids::Queued);
                    None
                } else {
                    // No ID thread, or the metadata could not be read (then JVMTI names
                    // the method, which takes its ID): make the IDs now.
                    super::prefetch::warm_class_methods(m, data, len);
                    if let Ok(n) = self.jvmti.load_method_ids(class) {
                        Counter::MethodResolveLazyIdsCreated.add(n as i64);
                    }
                    Counter::MethodResolveLazyClassLoaded.inc();
                    self.set_ids(holder, Ids::Made);
                    Some(method::jmethod_id(m, method).ok_or(Refused::NotCurrent)? as u64)
                }
            }
        };
        // 7.
        if redefine::is_marked(holder) {
            return Err(Refused::Redefined);
        }
        let key = id.unwrap_or(method as u64 | NO_ID_KEY);
        if let Some(p) = parts {
            self.parts.insert(key, p);
        }
        Ok(Accepted {
            key,
            klass: holder,
            class,
        })
    }

    fn set_ids(&mut self, holder: usize, to: Ids) {
        if let Some(ClassState::Pinned { ids, .. }) = self.classes.get_mut(&holder) {
            *ids = to;
        }
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
        let state = if redefine::is_marked(holder) {
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
                        ids: Ids::Unknown,
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
