//! jmethodID names read ahead of the dump, on the library watcher's thread
//! (`profiler::ahead`): a method's name, descriptor, modifiers and line table from its own
//! metadata, as a dump reads them for a method of a class it holds (`resolve.rs`,
//! `parts_from_metadata`), for the jmethodIDs of traces published since the watcher's last
//! poll. A first dump otherwise reads them for every distinct Java method it names, cold
//! metadata behind each (the largest share of a first dump at `cpu=1ms`, docs/dump.md).
//!
//! The watcher is not a JVM thread, so it cannot hold the class while it reads. What a
//! dump takes from here is vouched for by the jmethodID's slot instead (JDK 11-24, where an
//! ID is a slot holding the `Method*`; from JDK 25 IDs are numbers and nothing is read ahead):
//! - the slot held the same `Method*` before the reads, after them, and when the dump takes
//!   the parts. Unloading a class clears its slots and a cleared slot is never set again, so
//!   the class was not unloaded from the first read until the dump: the metadata read was
//!   the method's own. (The dump's own path, which holds the class, trusts the same slot.)
//! - no redefinition began or ran from before the reads until the dump started naming
//!   (`KeptIds::stamp`, the stamp of `kept_ids.rs`): only a redefinition changes a loaded
//!   method's line table or makes it old.
//!
//! Anything else is named by the dump as before. On JDK 17-24 the holder's name is read
//! here too, where GetClassSignature would answer it unchanged ([`Plan::class_names`]), and
//! the dump then asks JVMTI nothing for the method; elsewhere the dump names each class
//! once through the reference it holds.

use parking_lot::Mutex;

use super::kept_ids::KeptIds;
use super::raw::MethodParts;
use crate::counters::Counter;
use crate::sample::safe_access::load_usize;
use crate::sample::vm::{layout, method};
use crate::word_map::WordMap;

/// A method's metadata as the watcher read it.
pub struct AheadParts {
    /// The `Method*` the jmethodID's slot held around the reads.
    method: usize,
    /// Its holder (`Klass*`), for the dump's class lookup.
    pub holder: usize,
    pub parts: MethodParts,
    /// The holder's internal name and whether the method is a thread's entry point, read with
    /// the parts ([`Plan::class_names`]); None: the dump names the class.
    pub class: Option<(std::sync::Arc<str>, bool)>,
}

/// What the watcher reads ahead, decided once on the starting JVM thread ([`plan`]).
#[derive(Clone, Copy, Default)]
pub struct Plan {
    /// jmethodIDs' metadata: where IDs are slots (JDK 11-24) and the walker's layout is known.
    pub ids: bool,
    /// Their holders' names too: JDK 17-24. GetClassSignature answers a class's own name
    /// symbol there for every class but a hidden one (it turns the last `+` into a `.`:
    /// such names are left to the dump); JDK 11-16 append the mirror's identity hash for a
    /// VM-anonymous class (lambdas on 11), which metadata cannot tell.
    pub class_names: bool,
}

struct Store {
    stamp: u64,
    parts: WordMap<u64, AheadParts>,
}

/// Entries kept at most; past it new ones are not read (a dump takes and empties them).
const MAX_ENTRIES: usize = 1 << 16;

static STORE: Mutex<Option<Store>> = Mutex::new(None);

/// What can be read ahead here ([`Plan`]). Asks JVMTI: call it on a JVM thread.
pub fn plan() -> Plan {
    let version = crate::jvmti::jvm::java_feature_version();
    let ids = version < 25
        && crate::sample::walk::vm::VmWalker::get().is_some()
        && layout::get().is_some_and(|l| l.method.is_some());
    Plan {
        ids,
        class_names: ids && version >= 17,
    }
}

/// Reads the metadata of `ids` (jmethodIDs of live traces) not read yet and not left by the
/// previous dump, and keeps it for the next dump. Returns how many were read.
pub fn read(ids: &[u64], plan: Plan) -> usize {
    if !plan.ids {
        return 0;
    }
    let Some(stamp) = KeptIds::stamp() else {
        return 0;
    };
    let (Some(g), Some(walker)) = (
        layout::get().and_then(|l| l.method.as_ref()),
        crate::sample::walk::vm::VmWalker::get(),
    ) else {
        return 0;
    };
    let encoding = walker.encoding();
    let _mem = crate::footprint::scope(crate::footprint::Category::MethodMap);
    let mut wanted: Vec<u64> = {
        let store = STORE.lock();
        let have = store.as_ref().filter(|s| s.stamp == stamp);
        if have.is_some_and(|s| s.parts.len() >= MAX_ENTRIES) {
            return 0;
        }
        ids.iter()
            .copied()
            .filter(|id| *id != 0 && !have.is_some_and(|s| s.parts.contains_key(id)))
            .collect()
    };
    // Names the previous dump left are taken by the next one anyway.
    KeptIds::retain_unkept(&mut wanted);
    let mut read = Vec::with_capacity(wanted.len());
    for id in wanted {
        let Some(m) = load_usize(id as usize).filter(|m| *m != 0) else {
            continue;
        };
        let Some(holder) = method::holder(g, m) else {
            continue;
        };
        let Some(mut parts) = super::raw::method_parts(g, m, encoding) else {
            continue;
        };
        parts.modifiers &= super::info::JVM_RECOGNIZED_METHOD_MODIFIERS;
        let class = if plan.class_names {
            super::raw::class_of(g, holder, &parts)
        } else {
            None
        };
        // The reads above before the slot's second read (a load-load order on every
        // architecture): a slot still holding `m` was not cleared before they ended.
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        if load_usize(id as usize) != Some(m) {
            continue;
        }
        read.push((
            id,
            AheadParts {
                method: m,
                holder,
                parts,
                class,
            },
        ));
    }
    // A redefinition that began during the reads may have changed what they saw.
    if read.is_empty() || KeptIds::stamp() != Some(stamp) {
        return 0;
    }
    let n = read.len();
    let mut store = STORE.lock();
    let s = match store.take() {
        Some(s) if s.stamp == stamp => s,
        _ => Store {
            stamp,
            parts: WordMap::default(),
        },
    };
    let s = store.insert(s);
    s.parts.extend(read);
    Counter::JmethodidNamesReadAhead.add(n as i64);
    n
}

/// What one dump took of the names read ahead.
#[derive(Default)]
pub struct Taken {
    parts: WordMap<u64, AheadParts>,
}

impl Taken {
    /// The names read ahead under `stamp` (the stamp the dump names under; nothing without
    /// one or under another).
    pub fn take(stamp: Option<u64>) -> Taken {
        let store = STORE.lock().take();
        match (store, stamp) {
            (Some(s), Some(now)) if s.stamp == now => Taken { parts: s.parts },
            _ => Taken::default(),
        }
    }

    /// The parts read ahead for `id`, taken out, if its slot still holds the `Method*`
    /// they were read from.
    pub fn remove(&mut self, id: u64) -> Option<AheadParts> {
        let a = self.parts.remove(&id)?;
        if load_usize(id as usize) != Some(a.method) {
            return None;
        }
        Counter::JmethodidNamesTakenAhead.inc();
        Some(a)
    }
}

/// Drops what was read ahead (at stop).
pub fn clear() {
    STORE.lock().take();
}
