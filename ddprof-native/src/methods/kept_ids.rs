//! Names of jmethodIDs kept from one dump to the next.
//!
//! A dump names each distinct jmethodID of its frames through JVMTI (declaring class, name,
//! descriptor, modifiers, line table: about five calls a method), and a service's later dumps
//! mostly sample the methods the one before sampled. A name made once stands in later dumps:
//! - HotSpot never hands out one jmethodID for two methods: before JDK 25 an ID is a slot in
//!   its class loader's block, cleared when the loader is unloaded and never handed out again
//!   (the block is never freed); from JDK 25 it is a number that only grows. An ID of an
//!   unloaded class keeps its name here, which is right for the samples taken before the
//!   unload, the only ones that can carry it.
//! - A method's name, descriptor, modifiers and declaring class never change while it is
//!   loaded: a redefinition may not rename, add or remove methods, or change their
//!   modifiers. Its line table may change, so nothing is kept across a redefinition of any
//!   class (the hooks of `jvmti/redefine.rs` count the calls begun and ended), nor made
//!   while one runs, nor when those hooks are not installed (a redefinition would then go
//!   unseen).
//!
//! Each dump takes the names the previous one left and leaves the names it used or made
//! (`jmethodid_names_kept` counts reuses, `jmethodid_names_kept_entries` the names left):
//! memory follows the working set of sampled methods, not the run's history. `stop` drops
//! them.

use parking_lot::Mutex;

use crate::counters::Counter;
use crate::jvmti::redefine;
use crate::word_map::WordMap;

use super::info::MethodInfo;

/// The names a dump took from the one before it, by jmethodID.
#[derive(Default)]
pub struct KeptIds {
    names: WordMap<u64, MethodInfo>,
}

struct Left {
    names: WordMap<u64, MethodInfo>,
    stamp: u64,
}

static LEFT: Mutex<Option<Left>> = Mutex::new(None);

impl KeptIds {
    /// The names the previous dump left, if no redefinition began since they were made
    /// (empty otherwise, or if none were left).
    pub fn take() -> KeptIds {
        let left = LEFT.lock().take();
        match (left, Self::stamp()) {
            (Some(l), Some(now)) if l.stamp == now => KeptIds { names: l.names },
            _ => KeptIds::default(),
        }
    }

    /// Keeps in `ids` those the previous dump left no name for.
    pub fn retain_unkept(ids: &mut Vec<u64>) {
        if let Some(left) = LEFT.lock().as_ref() {
            ids.retain(|id| !left.names.contains_key(id));
        }
    }

    /// The name kept for `id`, taken out (once).
    pub fn remove(&mut self, id: u64) -> Option<MethodInfo> {
        let info = self.names.remove(&id)?;
        Counter::JmethodidNamesKept.inc();
        Some(info)
    }

    /// Leaves for the next dump `names` (this dump's, by jmethodID; named ones only), made
    /// under `stamp` ([`Self::stamp`]), instead of whatever was left before.
    pub fn leave(mut names: WordMap<u64, MethodInfo>, stamp: Option<u64>) {
        let Some(stamp) = stamp else {
            Counter::JmethodidNamesKeptEntries.set(0);
            return;
        };
        names.retain(|_, info| !info.class_name.is_empty());
        // Mostly emptied: not worth its table.
        if names.capacity() > 4 * names.len() {
            names.shrink_to_fit();
        }
        Counter::JmethodidNamesKeptEntries.set(names.len() as i64);
        *LEFT.lock() = Some(Left { names, stamp });
    }

    /// The stamp names made now are valid under, to pass to [`Self::leave`] (taken before the
    /// dump names anything, so that a redefinition that begins while it names makes its names
    /// unkept): `None` while a redefinition runs or when redefinitions cannot be seen.
    pub fn stamp() -> Option<u64> {
        if !redefine::installed() {
            return None;
        }
        redefine::settled()
    }
}

/// Drops every kept name (at stop).
pub fn clear() {
    LEFT.lock().take();
    Counter::JmethodidNamesKeptEntries.set(0);
}
