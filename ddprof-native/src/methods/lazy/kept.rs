//! Names of lazily resolved methods kept from one dump to the next.
//!
//! Every dump checks each raw frame again (steps 1-5 and 7 of `resolve.rs`: holder, pin,
//! tag, current method, unchanged methods array); only the naming (step 6: name,
//! descriptor, modifiers and line table read from the metadata, and the class name) is
//! what a later dump can reuse. It may when nothing about the method can have changed since
//! it was named: its class never was redefined and none is running (a redefinition is the
//! only thing that replaces a class's methods or their metadata), the class is the same one
//! (the trace ID read after pinning it, as then), and the `Method*` sits in the same methods
//! array. A class that was never redefined keeps its methods array and every method in it
//! for as long as it is loaded, and the pin keeps it loaded while the dump runs.
//!
//! Each dump takes the names the previous one kept and leaves behind those it used or made
//! (`method_resolve_lazy_kept` counts reuses, `method_resolve_lazy_kept_entries` the names
//! left behind): memory follows the working set of sampled methods, not the run's history.
//! `stop` drops them.

use parking_lot::Mutex;

use crate::counters::Counter;
use crate::methods::info::MethodInfo;
use crate::word_map::WordMap;

/// Names of methods named by an earlier dump, by pool key (`Method*` | `NO_ID_KEY`), and
/// what must still hold for each to stand.
#[derive(Default)]
pub struct KeptNames {
    names: WordMap<u64, MethodInfo>,
    /// The holder's trace ID and methods array (`InstanceKlass::_methods`) the method was
    /// found in, when named.
    checks: WordMap<u64, (u64, usize)>,
}

impl KeptNames {
    /// What a dump leaves: of `names` (its names, by key), those `checks` holds the checks
    /// of. Filtered in place: the dump's own tables are kept, not copied (a first dump names
    /// thousands of methods, and fresh pages are much of its cost).
    pub fn from_dump(
        mut names: WordMap<u64, MethodInfo>,
        mut checks: WordMap<u64, (u64, usize)>,
    ) -> KeptNames {
        names.retain(|key, info| !info.class_name.is_empty() && checks.contains_key(key));
        checks.retain(|key, _| names.contains_key(key));
        // Mostly emptied (a dump of few lazily named frames): not worth its table.
        if names.capacity() > 4 * names.len() {
            names.shrink_to_fit();
            checks.shrink_to_fit();
        }
        KeptNames { names, checks }
    }

    /// Whether the name kept for `key` was made for the holder with `trace_id` and this
    /// `methods` array.
    pub fn holds(&self, key: u64, trace_id: u64, methods: usize) -> bool {
        self.checks.get(&key) == Some(&(trace_id, methods))
    }

    /// The name kept for `key`, taken out.
    pub fn remove(&mut self, key: u64) -> Option<MethodInfo> {
        self.checks.remove(&key);
        self.names.remove(&key)
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

static KEPT: Mutex<Option<KeptNames>> = Mutex::new(None);

/// The names the previous dump left (empty if none, or if another dump holds them).
pub fn take() -> KeptNames {
    KEPT.lock().take().unwrap_or_default()
}

/// Leaves `names` for the next dump, instead of whatever was left before.
pub fn leave(names: KeptNames) {
    *KEPT.lock() = Some(names);
}

/// Drops every kept name (at stop).
pub fn clear() {
    KEPT.lock().take();
    Counter::MethodResolveLazyKeptEntries.set(0);
}
