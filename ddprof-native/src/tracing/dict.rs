//! A bounded set of strings shared by the events that name them: a known string is found,
//! a new one is added only while the set is below its limit. Values are `Arc<str>`, so a
//! buffered event holds its name without a copy and the dump needs no lookup.

use std::collections::HashSet;
use std::sync::Arc;

#[derive(Default)]
pub struct BoundedNames {
    names: HashSet<Arc<str>>,
}

impl BoundedNames {
    /// The stored name equal to `s`; if new, added when fewer than `limit` are stored,
    /// else `None` (a limit of 0 or less accepts nothing new).
    pub fn lookup(&mut self, s: &str, limit: i64) -> Option<Arc<str>> {
        if let Some(n) = self.names.get(s) {
            return Some(n.clone());
        }
        if (self.names.len() as i64) >= limit {
            return None;
        }
        let _mem = crate::memory::scope(crate::memory::Category::Dictionary);
        let n: Arc<str> = Arc::from(s);
        self.names.insert(n.clone());
        Some(n)
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }
}
