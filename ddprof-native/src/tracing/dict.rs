//! A bounded set of strings shared by the events that name them: a known string is found,
//! a new one is added only while the set is below its limit. Values are `Arc<str>`, so a
//! buffered event holds its name without a copy and the dump needs no lookup.

use std::collections::HashSet;
use std::sync::Arc;

use crate::footprint::Category;

pub struct BoundedNames {
    names: HashSet<Arc<str>>,
    /// What the names and their table are charged to.
    category: Category,
}

impl Default for BoundedNames {
    fn default() -> BoundedNames {
        BoundedNames::charged_to(Category::Dictionary)
    }
}

impl BoundedNames {
    /// An empty set whose memory is charged to `category`.
    pub fn charged_to(category: Category) -> BoundedNames {
        BoundedNames {
            names: HashSet::new(),
            category,
        }
    }

    /// The stored name equal to `s`; if new, added when fewer than `limit` are stored,
    /// else `None` (a limit of 0 or less accepts nothing new).
    pub fn lookup(&mut self, s: &str, limit: i64) -> Option<Arc<str>> {
        if let Some(n) = self.names.get(s) {
            return Some(n.clone());
        }
        if (self.names.len() as i64) >= limit {
            return None;
        }
        let _mem = crate::footprint::scope(self.category);
        let n: Arc<str> = Arc::from(s);
        self.names.insert(n.clone());
        Some(n)
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }
}
