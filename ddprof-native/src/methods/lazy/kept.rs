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
use crate::methods::word_map::WordMap;

/// A method named by an earlier dump, and what must still hold for its name to stand.
pub struct Kept {
    /// The holder's trace ID when named.
    pub trace_id: u64,
    /// The holder's methods array (`InstanceKlass::_methods`) the method was found in.
    pub methods: usize,
    pub info: MethodInfo,
}

/// By pool key (`Method*` | `NO_ID_KEY`).
pub type KeptNames = WordMap<u64, Kept>;

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
