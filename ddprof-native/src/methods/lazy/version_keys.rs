//! Method-pool keys for methods named from metadata (no jmethodID), one per method version.
//!
//! Such a key is the method's `Method*` (with [`NO_ID_KEY`]), and a `Method*` is unique only
//! while its method lives. Pinning the holder keeps the class, not its old methods: while a
//! dump runs, a redefinition can free an old version's methods (once no thread runs them)
//! and the next one can place the new version's methods in that memory. Two frames of one
//! dump can then meet the same address as two different methods (`hot` of one version,
//! `helperB` of a later one), and one pool entry would name both. So each address keeps the
//! content it was first named with (its holder: `Klass*` and trace ID; name, descriptor,
//! modifiers, line table), and other content at the same address gets a key of its own
//! (`method_resolve_lazy_version_keys` counts them). The holder is part of the content: a
//! same-shaped method of another class (generated, proxy, per-tenant classes) at an address
//! an unloaded class left is another method, whatever the checks' order of pinning. Equal
//! content shares a key: nothing in the pool could tell them apart.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use crate::counters::Counter;
use crate::methods::raw::MethodParts;
use crate::word_map::WordMap;

/// Pool keys of accepted frames of methods without a jmethodID: the `Method*` with this bit
/// set. jmethodIDs are pointers below 2^47, so the two kinds of key never collide.
pub const NO_ID_KEY: u64 = 1 << 62;

/// Set, beside [`NO_ID_KEY`], in keys that are not a `Method*`: a `Method*` is below 2^47.
const ALIAS_KEY: u64 = 1 << 61;

/// The keys given so far in one dump.
#[derive(Default)]
pub struct VersionKeys {
    /// Per `Method*` key: the fingerprint of the content it names.
    first: WordMap<u64, u64>,
    /// Keys for other content met at an address: by (`Method*` key, fingerprint).
    aliases: HashMap<(u64, u64), u64>,
}

impl VersionKeys {
    /// Room for `methods` addresses (the dump's distinct tagged methods), instead of
    /// doubling from empty.
    pub fn reserve(&mut self, methods: usize) {
        self.first.reserve(methods);
    }

    /// The key for `parts`, read from the method at `key` (a `Method*` | [`NO_ID_KEY`]) of
    /// the class `holder` (its `Klass*` and trace ID, as pinned).
    pub fn key(&mut self, key: u64, holder: (usize, Option<u64>), parts: &MethodParts) -> u64 {
        let print = fingerprint(holder, parts);
        match self.first.get(&key) {
            None => {
                self.first.insert(key, print);
                key
            }
            Some(&p) if p == print => key,
            Some(_) => {
                Counter::MethodResolveLazyVersionKeys.inc();
                let next = NO_ID_KEY | ALIAS_KEY | self.aliases.len() as u64;
                *self.aliases.entry((key, print)).or_insert(next)
            }
        }
    }
}

fn fingerprint(holder: (usize, Option<u64>), p: &MethodParts) -> u64 {
    let mut h = DefaultHasher::new();
    (holder, &p.name, &p.descriptor, p.modifiers, &p.lines).hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: (usize, Option<u64>) = (0x8_0000_1000, Some(7 << 16));

    fn parts(name: &str, lines: &[crate::methods::info::BciLine]) -> MethodParts {
        MethodParts {
            name: name.into(),
            descriptor: "(J)J".into(),
            modifiers: 8,
            lines: lines.to_vec(),
        }
    }

    #[test]
    fn an_address_reused_by_another_method_gets_another_key() {
        let mut k = VersionKeys::default();
        let at = 0x7f00_1000 | NO_ID_KEY;
        assert_eq!(k.key(at, A, &parts("hot", &[(0, 20)])), at);
        let b = k.key(at, A, &parts("helperB", &[(0, 40)]));
        assert_ne!(b, at);
        assert_ne!(b & NO_ID_KEY, 0, "still a key without a jmethodID");
        // The same content again, at either address state, keeps its key.
        assert_eq!(k.key(at, A, &parts("helperB", &[(0, 40)])), b);
        assert_eq!(k.key(at, A, &parts("hot", &[(0, 20)])), at);
        // Another version of the same method with other lines is another entry too.
        let c = k.key(at, A, &parts("hot", &[(0, 21)]));
        assert!(c != at && c != b);
    }

    #[test]
    fn the_same_shape_in_another_class_gets_another_key() {
        let mut k = VersionKeys::default();
        let at = 0x7f00_1000 | NO_ID_KEY;
        let lines = [(0, 20)];
        assert_eq!(k.key(at, A, &parts("applyAsInt", &lines)), at);
        // An unloaded class's method memory reused by a same-shaped method of the next class,
        // at the same `Klass*` or another: other keys, each kept.
        let b = k.key(at, (A.0, Some(8 << 16)), &parts("applyAsInt", &lines));
        let c = k.key(
            at,
            (0x8_0000_2000, Some(9 << 16)),
            &parts("applyAsInt", &lines),
        );
        assert!(b != at && c != at && b != c);
        assert_eq!(k.key(at, A, &parts("applyAsInt", &lines)), at);
    }

    #[test]
    fn distinct_addresses_keep_their_own_keys() {
        let mut k = VersionKeys::default();
        let (x, y) = (0x1000 | NO_ID_KEY, 0x2000 | NO_ID_KEY);
        assert_eq!(k.key(x, A, &parts("hot", &[])), x);
        assert_eq!(k.key(y, A, &parts("hot", &[])), y);
    }
}
