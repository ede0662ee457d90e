//! The dictionary of context attribute values (`setContextValue`): string -> small id,
//! so a thread's context is a few integers the signal handler can copy.

use std::collections::HashMap;

use parking_lot::Mutex;

struct Dictionary {
    ids: HashMap<String, u32>,
    values: Vec<String>,
}

static DICTIONARY: Mutex<Option<Dictionary>> = Mutex::new(None);

/// Id of `value` (>= 1), adding it if new. Not signal-safe.
pub fn intern(value: &str) -> u32 {
    let mut guard = DICTIONARY.lock();
    let d = guard.get_or_insert_with(|| Dictionary {
        ids: HashMap::new(),
        values: Vec::new(),
    });
    if let Some(id) = d.ids.get(value) {
        return *id;
    }
    d.values.push(value.to_string());
    let id = d.values.len() as u32;
    d.ids.insert(value.to_string(), id);
    id
}

/// The value of an id, if known.
pub fn lookup(id: u32) -> Option<String> {
    let guard = DICTIONARY.lock();
    guard
        .as_ref()?
        .values
        .get((id as usize).checked_sub(1)?)
        .cloned()
}
