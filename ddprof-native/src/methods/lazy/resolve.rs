//! Turning a tagged raw frame into a method-pool key at dump time, or refusing it. No
//! jmethodID is ever made here: an accepted frame is named from its method's metadata.
//!
//! The `Method*` in the frame may be stale: its class may have unloaded, its memory may
//! hold another method now, or the class may have been redefined. It is used as a lookup
//! key until proven live, in this order:
//! 1. under crash protection, read only its holder `Klass*`;
//! 2. note when the class's latest redefinition ended, if it had one;
//! 3. pin the holder through the registry: a strong local reference to its mirror, so it
//!    cannot unload from here on (not registered or collected: `method_resolve_lazy_unloaded`);
//! 4. the pinned class's trace ID must match the frame's tag, else the `Klass*` now
//!    belongs to another class (`method_resolve_lazy_stale`);
//! 5. the `Method*` must be one of the class's current methods: the slot of its idnum,
//!    else a scan of classes of at most [`SCAN_CAP`] methods (`method_resolve_lazy_not_current`),
//!    with the idnum it was sampled with, read after the methods array (an idnum read before
//!    it can be that of a method freed since, whose memory now holds another current method);
//! 6. only now is the method dereferenced: its name, descriptor, modifiers and line table
//!    are read from its metadata (`methods/raw.rs`: the content JVMTI would return for its
//!    jmethodID; `method_resolve_lazy_metadata`; unreadable: `method_resolve_lazy_unreadable`).
//!    The key is the method's jmethodID if something else made one (so it shares a pool
//!    entry with frames sampled with that ID), else the `Method*` | [`NO_ID_KEY`], or
//!    another key when that address named other content earlier in the dump (an old
//!    version's methods freed and their memory reused: `version_keys.rs`);
//! 7. the class's methods array must still be the one step 5 read: a redefinition swaps
//!    in a new array at a safepoint, and only after that can the methods of the old one be
//!    freed; if it was replaced, steps 5-6 are read again (a few times at most, then the
//!    frame is refused, `method_resolve_lazy_redefined`). A redefinition still running
//!    may or may not have swapped the methods yet (its end is recorded only when
//!    RedefineClasses returns), so a frame checked then is named only by its idnum's
//!    method and without lines, as one sampled before a redefinition; before its swap the
//!    new methods belong to a scratch class, and a stale frame that reads one fails at
//!    step 3 or 4.
//!
//! A redefined class (one whose redefinition succeeded, at any time): the walker recorded,
//! beside the tag, the method's idnum as sampled, which a method keeps across versions. A
//! frame whose `Method*` is current and had that idnum is that method; one whose `Method*`
//! is an older version's (not current at step 5) is named by the current method of its
//! idnum. Either way the name is right; the line numbers are those of the version that ran
//! only if every sample of the trace was taken after the class's latest redefinition ended
//! ([`LazyResolver::method_id`]'s `since`: a sample's time is read before its stack is
//! walked, so such a frame was walked from the class as it is now), and are left out
//! otherwise. A frame without a recorded idnum keeps the older rule: refused in traces
//! sampled before the redefinition ended (`method_resolve_lazy_redefined`).
//!
//! Steps 2-4 are done once per class per dump, not per frame ([`LazyResolver`]): a class
//! stays pinned until the dump ends, so its `Klass*` cannot be reused and its trace ID
//! cannot change in between, and a class whose frames were refused at step 2 or 3 stays
//! refused for the rest of the dump (a conservative answer). Steps 1, 5, 6 and 7 stay per
//! frame: they are about the method. The class name comes from JVMTI, once per class
//! (`methods/resolve.rs`), which needs no jmethodID.

use crate::word_map::WordMap;

use jni::sys::{jclass, JNIEnv};

use super::kept::{self, KeptNames};
use super::version_keys::VersionKeys;
use super::JniRefs;
use crate::counters::Counter;
use crate::jvmti::{self, redefine};
use crate::methods::info::MethodInfo;
use crate::methods::raw::{self, MethodParts};
use crate::sample::safe_access::load_usize;
use crate::sample::tags::Tag;
use crate::sample::vm::debuginfo::Encoding;
use crate::sample::vm::klass::{self, Contains};
use crate::sample::vm::layout::{self, MethodGroup};
use crate::sample::vm::{method, trace_id};

/// Largest class whose methods array is scanned when the idnum slot does not match.
pub const SCAN_CAP: usize = 256;

/// Times steps 5-7 are read again when the class's methods array was replaced during them.
const REDEFINITION_RETRIES: usize = 4;

/// What steps 5-7 found.
enum Version {
    Named {
        key: u64,
        by_idnum: bool,
    },
    /// A redefinition replaced the class's methods array during the reads.
    Replaced,
}

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

pub use super::version_keys::NO_ID_KEY;

/// The key of [`LazyResolver`]'s frame cache: (untagged `Method*`, tag, idnum + 1 or 0).
fn frame_key(method: u64, tag: Tag, idnum: Option<u16>) -> (u64, Tag, u16) {
    (method, tag, idnum.map_or(0, |n| n.wrapping_add(1)))
}

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
    /// When the holder's latest redefinition ended, if it was ever redefined: the frame's
    /// line numbers stand only in traces sampled after that.
    pub redefined_at: Option<i64>,
    /// Named through the idnum it was sampled with (its `Method*` is an older version's):
    /// the method is right, its line table is not that of the version that ran.
    pub by_idnum: bool,
    /// A redefinition of the holder was running when the frame was checked: its methods may
    /// have been swapped already, so the frame is treated as sampled before a redefinition.
    pub in_flight: bool,
}

impl Accepted {
    /// Whether the frame, in a trace whose earliest sample was taken at `since`, may have run
    /// in another version of its method than the one its `Method*` is now.
    fn straddles(&self, since: i64) -> bool {
        self.in_flight || self.redefined_at.is_some_and(|at| at >= since)
    }
}

/// What [`LazyResolver::method_id`] gives an accepted frame: its method and whether its
/// line numbers can be trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Named {
    pub accepted: Accepted,
    /// False for a frame that may have run in an older version of its method than the one
    /// named (a redefinition ended after its trace's earliest sample, or it was named by
    /// idnum): its bci does not index the current line table, so it gets no line.
    pub lines: bool,
}

/// A pinned holder as [`LazyResolver::current_version`] checks its methods: its `Klass*`,
/// when its latest redefinition ended as the class state has it, its trace ID read after the
/// pin.
#[derive(Clone, Copy)]
struct Holder {
    klass: usize,
    redefined_at: Option<i64>,
    trace_id: Option<u64>,
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
    /// By (untagged `Method*`, tag, idnum as sampled + 1, 0 unknown).
    frames: WordMap<(u64, Tag, u16), Result<Accepted, Refused>>,
    /// The metadata the latest check read, by its key, until [`Self::take_parts`]: the
    /// resolver takes it right after the check that read it, or never (its key was named
    /// already), so one slot does what a map by key would, without the map's fresh pages.
    parts: Option<(u64, MethodParts)>,
    /// One key per method version met at an address (`version_keys.rs`).
    versions: VersionKeys,
    /// Names the previous dump kept (`kept.rs`), taken out as this dump reuses them.
    kept: KeptNames,
    /// Keys of this dump whose names the next dump may reuse: (holder's trace ID, methods
    /// array) as checked.
    keepable: WordMap<u64, (u64, usize)>,
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
            parts: None,
            versions: VersionKeys::default(),
            kept: kept::take(),
            keepable: WordMap::default(),
            encoding: crate::sample::walk::vm::VmWalker::get().map(|w| w.encoding()),
            local_capacity: 0,
            pinned: 0,
        }
    }

    /// The checked pool key of a tagged raw frame's method (`idnum`: as sampled, if read)
    /// in a trace whose earliest sample was taken at `since` (`sample::handler::ticks`), or
    /// `None` when refused (each distinct frame counted once, by reason). A frame of a class
    /// redefined after `since` is named by its idnum without lines, or refused when its idnum
    /// is unknown (counted once per trace). Repeats come from the cache
    /// (`raw_frame_resolve_cache_hits`).
    pub fn method_id(
        &mut self,
        method: u64,
        tag: Tag,
        idnum: Option<u16>,
        since: i64,
    ) -> Option<Named> {
        let cache_key = frame_key(method, tag, idnum);
        let result = match self.frames.get(&cache_key) {
            Some(a) => {
                Counter::RawFrameResolveCacheHits.inc();
                *a
            }
            None => {
                let result = layout::get()
                    .and_then(|l| l.method.as_ref())
                    .ok_or(Refused::Unloaded)
                    .and_then(|m| self.checked_id(m, method as usize, tag, idnum));
                if let Err(r) = result {
                    r.count();
                }
                self.frames.insert(cache_key, result);
                result
            }
        };
        let a = result.ok()?;
        let straddles = a.straddles(since);
        if straddles && idnum.is_none() {
            Refused::Redefined.count();
            return None;
        }
        if straddles || a.by_idnum {
            Counter::MethodResolveLazyByIdnum.inc();
        }
        Some(Named {
            accepted: a,
            lines: !straddles && !a.by_idnum,
        })
    }

    /// Why [`Self::method_id`] refused this frame, if it did: its own refusal, else, for a
    /// frame without an idnum of a class redefined after `since`, that one.
    pub fn refusal(
        &self,
        method: u64,
        tag: Tag,
        idnum: Option<u16>,
        since: i64,
    ) -> Option<Refused> {
        match self.frames.get(&frame_key(method, tag, idnum))? {
            Err(r) => Some(*r),
            Ok(a) if idnum.is_none() && a.straddles(since) => Some(Refused::Redefined),
            Ok(_) => None,
        }
    }

    fn checked_id(
        &mut self,
        m: &MethodGroup,
        method: usize,
        tag: Tag,
        sampled_idnum: Option<u16>,
    ) -> Result<Accepted, Refused> {
        // 1. The holder only (the idnum is read at step 5, after the methods array).
        let holder = method::holder(m, method).ok_or(Refused::Unloaded)?;
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
        // 5-7, read again if the class's methods array was replaced meanwhile.
        for _ in 0..REDEFINITION_RETRIES {
            let h = Holder {
                klass: holder,
                redefined_at,
                trace_id,
            };
            if let Version::Named { key, by_idnum } =
                self.current_version(m, h, method, sampled_idnum)?
            {
                // The latest redefinition as of the reads: a frame of a trace sampled before it
                // gets no line numbers. One still running may have swapped the methods already
                // (its end is recorded only once RedefineClasses returns): no lines either.
                let now = redefine::redefinition(holder);
                let redefined_at = now.ended_at.max(redefined_at);
                let in_flight = now.in_flight;
                self.classes.insert(
                    holder,
                    ClassState::Pinned {
                        class,
                        trace_id,
                        redefined_at,
                    },
                );
                return Ok(Accepted {
                    key,
                    klass: holder,
                    class,
                    redefined_at,
                    by_idnum,
                    in_flight,
                });
            }
        }
        Err(Refused::Redefined)
    }

    /// Steps 5-7 for a method of `holder`, pinned.
    fn current_version(
        &mut self,
        m: &MethodGroup,
        holder: Holder,
        method: usize,
        sampled_idnum: Option<u16>,
    ) -> Result<Version, Refused> {
        let Holder {
            klass: holder,
            redefined_at,
            trace_id,
        } = holder;
        // 5. A current method, sampled as the method it is now; else, in a redefined class,
        // the current version of the method the frame was sampled in (its idnum).
        let (data, len) = klass::methods(m, holder).ok_or(Refused::NotCurrent)?;
        // The idnum is read after the array, never before: memory that held the sampled
        // method may since hold a newer version's other method, current in this array,
        // and only an idnum read now is that method's (an earlier read named `work`'s frame
        // after `other`, which never ran: docs/lazy.md, the lazy checks).
        let idnum = method::idnum(m, method).ok_or(Refused::Unloaded)?;
        let current = klass::methods_contain(data, len, method, idnum, SCAN_CAP, load_usize)
            == Contains::Yes
            && sampled_idnum.is_none_or(|n| usize::from(n) == idnum);
        let now = redefine::redefinition(holder);
        let ever_redefined = redefined_at.is_some() || now.ended_at.is_some();
        // A name kept from an earlier dump stands only for a class no redefinition ever
        // touched (`kept.rs`): the class is the same (trace ID) and so is its methods array.
        let keep = trace_id.filter(|_| !ever_redefined && !now.in_flight);
        let (method, by_idnum) = match (current, sampled_idnum, ever_redefined) {
            (true, _, _) => (method, false),
            (false, Some(n), true) => {
                let version =
                    klass::method_with_idnum(data, len, usize::from(n), load_usize, |x| {
                        method::idnum(m, x)
                    });
                (version.ok_or(Refused::NotCurrent)?, true)
            }
            _ => return Err(Refused::NotCurrent),
        };
        // 6. The metadata (unless an earlier dump named this very method); an ID only if
        // something else made it.
        let id = method::jmethod_id(m, method).map(|id| id as u64);
        let no_id_key = method as u64 | NO_ID_KEY;
        let reuse = id.is_none() && keep.is_some_and(|t| self.kept.holds(no_id_key, t, data));
        let parts = match reuse {
            true => None,
            false => self.encoding.and_then(|e| raw::method_parts(m, method, e)),
        };
        // 7. The methods read are current only if the array is still the class's: a
        // redefinition swaps in a new one (at a safepoint), and only then can the old one's
        // methods be freed.
        if klass::methods(m, holder).map(|(d, _)| d) != Some(data) {
            return Ok(Version::Replaced);
        }
        let key = match (id, &parts) {
            (Some(id), _) => id,
            (None, Some(p)) => self.versions.key(no_id_key, (holder, trace_id), p),
            (None, None) if reuse => no_id_key,
            (None, None) => return Err(Refused::Unreadable),
        };
        if let Some(t) = keep.filter(|_| key == no_id_key) {
            self.keepable.insert(key, (t, data));
        }
        if let Some(p) = parts {
            Counter::MethodResolveLazyMetadata.inc();
            self.parts = Some((key, p));
        }
        Ok(Version::Named { key, by_idnum })
    }

    /// Warms the cache for the distinct tagged frames the dump is about to check
    /// (`prefetch.rs`; `methods`: their untagged `Method*`s, in the order it will meet them)
    /// and sizes the per-frame maps for them instead of doubling them (each doubling moves
    /// every entry; docs/benchmarks.md, "Fresh pages in the first dump").
    pub fn warm(&mut self, methods: &[usize]) {
        self.frames.reserve(methods.len());
        self.versions.reserve(methods.len());
        self.keepable.reserve(methods.len());
        if let Some(m) = layout::get().and_then(|l| l.method.as_ref()) {
            super::prefetch::warm_frames(m, methods);
        }
    }

    /// The metadata read for an accepted frame, by its key, right after the
    /// [`Self::method_id`] that checked it (once; `None` if the reads failed, then JVMTI names
    /// it by its jmethodID, or if [`Self::take_kept`] has it).
    pub fn take_parts(&mut self, key: u64) -> Option<MethodParts> {
        match self.parts.take() {
            Some((k, p)) if k == key => Some(p),
            _ => None,
        }
    }

    /// The name an earlier dump gave the accepted frame of `key`, if its checks let this
    /// dump reuse it (then it has no [`Self::take_parts`]); once.
    pub fn take_kept(&mut self, key: u64) -> Option<MethodInfo> {
        // Only a name made under the checks this dump's frame passed: the same holder (trace
        // ID) and methods array. A key is an address, and a class unloaded since the name was
        // kept may have left it to a same-shaped method of another class: that frame's key is
        // keepable too (for the next dump), but the name kept for the key is the old class's
        // (the misnaming of class churn: docs/lazy.md, the lazy checks).
        let &(trace_id, methods) = self.keepable.get(&key)?;
        if !self.kept.holds(key, trace_id, methods) {
            return None;
        }
        let info = self.kept.remove(key)?;
        Counter::MethodResolveLazyKept.inc();
        Some(info)
    }

    /// Whether [`Self::keep`] would leave the name of `key`.
    pub fn is_keepable(&self, key: u64) -> bool {
        self.keepable.contains_key(&key)
    }

    /// Leaves for the next dump the names of `named` (this dump's, by key) that it may
    /// reuse, and only those; the names the previous dump left and this one did not use
    /// are dropped.
    pub fn keep(&mut self, named: WordMap<u64, MethodInfo>) {
        let left = KeptNames::from_dump(named, std::mem::take(&mut self.keepable));
        Counter::MethodResolveLazyKeptEntries.set(left.len() as i64);
        self.kept = KeptNames::default();
        kept::leave(left);
    }

    /// Steps 2-3 (and the trace-ID read of step 4) for a class first met in this dump.
    fn class_state(&mut self, holder: usize) -> ClassState {
        if let Some(s) = self.classes.get(&holder) {
            return *s;
        }
        let redefinition = redefine::redefinition(holder);
        let state = if !self.reserve_local() {
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
            // Checked JNI (-Xcheck:jni) counts the capacity asked for as the frame's total,
            // not as more: ask for the total, or for one step where that is past the VM's
            // limit (plain JNI only checks the number against it).
            jvmti::ensure_local_capacity(self.jni, self.local_capacity + PIN_CAPACITY_STEP)
                || jvmti::ensure_local_capacity(self.jni, PIN_CAPACITY_STEP)
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
