//! The dictionary of context attribute values (`setContextValue`, `registerConstant`):
//! string -> small id, so a thread's context is a few integers the signal handler can copy.
//!
//! One dictionary per recording: `clear` runs when a recording starts (`profiler::start`),
//! and it starts a new encoding epoch so that encodings still held by threads read as unset
//! (`sample::context`). Bounded by [`MAX_VALUES`]: when full, `intern` answers None and
//! `setContextValue` returns false. The `dictionary_context_keys` counter is the number of
//! distinct values; the dump writes the values of the recorded encodings as the
//! AttributeValue pool.

use std::collections::HashMap;

use parking_lot::Mutex;

use crate::counters::Counter;
use crate::footprint::{self, Category};

/// Most distinct values in one recording (the limit released tracers' `ContextSetter` cache
/// also has).
pub const MAX_VALUES: usize = 1 << 16;

#[derive(Default)]
struct Dictionary {
    ids: HashMap<String, u32>,
    values: Vec<String>,
}

static DICTIONARY: Mutex<Option<Dictionary>> = Mutex::new(None);

/// Id of `value` (>= 1), adding it if new; None when the dictionary is full. Not
/// signal-safe.
pub fn intern(value: &str) -> Option<u32> {
    let mut guard = DICTIONARY.lock();
    let d = guard.get_or_insert_with(Dictionary::default);
    if let Some(id) = d.ids.get(value) {
        return Some(*id);
    }
    if d.values.len() >= MAX_VALUES {
        return None;
    }
    let _mem = footprint::scope(Category::Dictionary);
    d.values.push(value.to_string());
    let id = d.values.len() as u32;
    d.ids.insert(value.to_string(), id);
    Counter::DictionaryContextKeys.set(d.values.len() as i64);
    Some(id)
}

/// The value of an id, if known.
pub fn lookup(id: u32) -> Option<String> {
    with_value(id, str::to_string)
}

/// `f` applied to the value of `id`, under the dictionary's lock.
pub fn with_value<T>(id: u32, f: impl FnOnce(&str) -> T) -> Option<T> {
    let guard = DICTIONARY.lock();
    let v = guard.as_ref()?.values.get((id as usize).checked_sub(1)?)?;
    Some(f(v))
}

/// Forgets every value (a new recording) and starts a new encoding epoch.
pub fn clear() {
    let mut guard = DICTIONARY.lock();
    *guard = None;
    crate::sample::context::next_dictionary_epoch();
    Counter::DictionaryContextKeys.set(0);
}

/// The current encoding epoch (changes at every `clear`).
pub fn epoch() -> u32 {
    crate::sample::context::dictionary_epoch()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_dense_stable_and_cleared_per_recording() {
        let _g = crate::sample::context::tests::EPOCH_LOCK
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        clear();
        let before = epoch();
        let a = intern("a").unwrap();
        assert_eq!(intern("b"), Some(a + 1));
        assert_eq!(intern("a"), Some(a));
        assert_eq!(lookup(a + 1).as_deref(), Some("b"));
        clear();
        assert_ne!(epoch(), before);
        assert_eq!(lookup(a), None);
        for i in 0..MAX_VALUES {
            assert!(intern(&i.to_string()).is_some());
        }
        assert_eq!(intern("one too many"), None);
        assert!(intern("7").is_some(), "known values still resolve");
        clear();
    }
}
