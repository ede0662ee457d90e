//! Reading a `Method*` found on a stack: its holder, its jmethodID (if one was ever
//! made), and at dump time its names and line table. Every read goes through the
//! crash-protected loads: a `Method*` from a stack is a lookup key until proven live.

use super::super::hint_cache::HintCache;
use super::codecache::load_field_at;
use super::layout::MethodGroup;
use crate::sample::load_census::Site;
use crate::sample::safe_access::load_usize_at;

/// Loads of `Method*` and the structures it leads to, for the load census.
#[inline]
fn load_usize(addr: usize) -> Option<usize> {
    load_usize_at(Site::Method, addr)
}

#[inline]
fn load_field(base: usize, field: super::layout::Field) -> Option<i64> {
    load_field_at(Site::Method, base, field)
}

/// ACC_NATIVE in `Method::_access_flags`.
const ACC_NATIVE: i64 = 0x0100;
/// More slots than any class can have (idnums are u2): a larger length is a stale read.
const MAX_IDNUM: usize = 1 << 16;

/// The holder (`InstanceKlass*`) of a method: constMethod -> constants -> pool_holder.
/// Signal-safe.
pub fn holder(m: &MethodGroup, method: usize) -> Option<usize> {
    let const_method = load_usize(method.checked_add(m.method.const_method)?)?;
    holder_of(m, const_method)
}

/// The idnum of `method` (`ConstMethod::_method_idnum`), as read now. Signal-safe.
pub fn idnum(m: &MethodGroup, method: usize) -> Option<usize> {
    let const_method = load_usize(method.checked_add(m.method.const_method)?)?;
    load_field(const_method, m.const_method.method_idnum).map(|v| v as usize)
}

/// The holder and the idnum (`None` if unreadable, or HotSpot's unset 0xffff) of `method`,
/// from one read of its `ConstMethod*`. Signal-safe.
pub fn holder_and_idnum(m: &MethodGroup, method: usize) -> Option<(usize, Option<u16>)> {
    let const_method = load_usize(method.checked_add(m.method.const_method)?)?;
    let holder = holder_of(m, const_method)?;
    let idnum = load_field(const_method, m.const_method.method_idnum)
        .and_then(|n| u16::try_from(n).ok())
        .filter(|&n| n != u16::MAX);
    Some((holder, idnum))
}

/// The holder from an already read `ConstMethod*`: constants -> pool_holder.
/// Signal-safe.
fn holder_of(m: &MethodGroup, const_method: usize) -> Option<usize> {
    let constants = load_usize(const_method.checked_add(m.const_method.constants)?)?;
    let holder = load_usize(constants.checked_add(m.constant_pool.pool_holder)?)?;
    (holder != 0).then_some(holder)
}

/// The jmethodID HotSpot made for `method`, if any: the holder's ID cache slot
/// `idnum + 1` (slot 0 holds the length), accepted only if it points back at `method`.
/// Eight protected loads; the walker calls it once per distinct method of a walk.
/// Signal-safe.
pub fn jmethod_id(m: &MethodGroup, method: usize) -> Option<usize> {
    // One read of `_constMethod` serves both the idnum and the holder chain.
    let const_method = load_usize(method.checked_add(m.method.const_method)?)?;
    let idnum = load_field(const_method, m.const_method.method_idnum)? as usize;
    let holder = holder_of(m, const_method)?;
    let ids = load_usize(holder.checked_add(m.instance_klass.methods_jmethod_ids)?)?;
    if ids == 0 {
        return None;
    }
    let len = load_usize(ids)?;
    if idnum >= len || len > MAX_IDNUM {
        return None;
    }
    let id = load_usize(ids.checked_add((idnum + 1).checked_mul(8)?)?)?;
    (id != 0 && load_usize(id)? == method).then_some(id)
}

/// Pairs an [`IdCache`] holds: 64 KiB. A large program's sampled stacks meet thousands of
/// distinct methods (the Kotlin compiler: docs/benchmarks.md, "Loads per sample"), more
/// than the 1,024 pairs a hint cache holds by default; 32,768 measured no better.
const ID_SLOTS: usize = 4096;

/// `Method*` -> jmethodID pairs found by [`jmethod_id`], shared by every walk of one
/// layout: the walker owns it. A hit costs one protected load instead of eight, and
/// touches one line of metadata instead of six.
///
/// Nothing needs to be invalidated, because a pair proves itself: a jmethodID is a slot
/// holding the method's current `Method*`, and HotSpot (JDK <= 25) never frees or reuses
/// those slots; it clears them when the class unloads, and points them at the new
/// `Method*` when a redefinition replaces the method. So `*id == method` at the time
/// of the sample is exactly the test that [`jmethod_id`] ends with, and a pair that
/// fails it is looked up again. The same test makes torn pairs harmless: two handlers
/// may write one slot at once, and a reader may see the method of one and the ID of the
/// other. Signal-safe: relaxed atomics, no allocation after `new`.
pub struct IdCache {
    pairs: HintCache,
}

impl IdCache {
    /// An empty cache (allocates; not signal-safe).
    pub fn new() -> IdCache {
        IdCache {
            pairs: HintCache::with_slots(ID_SLOTS),
        }
    }

    /// `method`'s jmethodID, if a pair for it is cached and still holds. Signal-safe.
    pub fn get(&self, method: usize) -> Option<usize> {
        // Method*s are 8-byte aligned: the bits above the alignment are the key.
        let id = self.pairs.get(method >> 3)?;
        (method != 0 && id != 0 && load_usize(id)? == method).then_some(id)
    }

    /// Remembers a pair [`jmethod_id`] returned. Signal-safe.
    pub fn put(&self, method: usize, id: usize) {
        self.pairs.put(method >> 3, id);
    }
}

impl Default for IdCache {
    fn default() -> Self {
        IdCache::new()
    }
}

/// Whether the method is native (its frames are native wrappers). Signal-safe.
pub fn is_native(m: &MethodGroup, method: usize) -> bool {
    load_field(method, m.method.access_flags).is_some_and(|f| f & ACC_NATIVE != 0)
}

/// Whether `method` looks like a live Method*: its chain to a holder reads. Signal-safe.
pub fn is_plausible(m: &MethodGroup, method: usize) -> bool {
    method.is_multiple_of(8) && holder(m, method).is_some()
}

/// The bci of an interpreter bcp: offset from the first bytecode, 0 when outside.
/// Signal-safe.
pub fn bci_of_bcp(m: &MethodGroup, method: usize, bcp: usize) -> i32 {
    bytecodes(m, method).map_or(0, |code| bci_in(code, bcp))
}

/// Where `method`'s bytecodes are: `(start, length)`; `None` if its `ConstMethod*` is
/// unreadable (an unreadable length reads as 0). Signal-safe.
#[link_section = sample_path_section!()]
pub fn bytecodes(m: &MethodGroup, method: usize) -> Option<(usize, usize)> {
    let const_method = load_usize(method.checked_add(m.method.const_method)?)?;
    let start = const_method.wrapping_add(m.const_method.size);
    let code_size = load_field(const_method, m.const_method.code_size).unwrap_or(0) as usize;
    Some((start, code_size))
}

/// The bci of `bcp` in the bytecodes `(start, length)`, 0 when outside. Signal-safe.
pub fn bci_in((start, code_size): (usize, usize), bcp: usize) -> i32 {
    let bci = bcp.wrapping_sub(start);
    if bci < code_size {
        bci as i32
    } else {
        0
    }
}

/// Bytes of a `Symbol*` (class, method or signature name). Not signal-safe (allocates);
/// used at dump time.
pub fn symbol(m: &MethodGroup, sym: usize) -> Option<String> {
    if sym == 0 {
        return None;
    }
    let raw = load_field(sym, m.symbol.length)? as u64;
    let len = (raw >> m.symbol.length_shift) as usize & 0xffff;
    let body = sym.checked_add(m.symbol.body)?;
    // Eight bytes per protected load: a dump reads thousands of names.
    let mut bytes = vec![0u8; len];
    crate::sample::safe_access::copy(&mut bytes, body).then_some(())?;
    // Valid UTF-8 (every well-formed name) is taken as it is, without a second copy.
    Some(
        String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_cache_answers_only_while_the_id_points_back() {
        // Two "jmethodID slots" holding Method* values (never dereferenced here).
        let methods = [0x7f00_0000_1000usize, 0x7f00_0000_2000];
        let mut slots: Vec<usize> = methods.to_vec();
        let id_of = |slots: &Vec<usize>, i: usize| slots.as_ptr() as usize + 8 * i;
        let cache = IdCache::new();
        assert_eq!(cache.get(methods[0]), None, "empty");
        cache.put(methods[0], id_of(&slots, 0));
        cache.put(methods[1], id_of(&slots, 1));
        assert_eq!(cache.get(methods[0]), Some(id_of(&slots, 0)));
        assert_eq!(cache.get(methods[1]), Some(id_of(&slots, 1)));
        // The class unloaded (HotSpot clears the slot) or the method was redefined (the
        // slot names another Method*): the pair no longer proves itself.
        slots[0] = 0;
        assert_eq!(cache.get(methods[0]), None);
        slots[1] = 0x7f00_0000_3000;
        assert_eq!(cache.get(methods[1]), None);
        // A torn pair (method of one writer, ID of another) fails the same check.
        slots[1] = methods[1];
        cache.put(methods[0], id_of(&slots, 1));
        assert_eq!(cache.get(methods[0]), None);
        // Null and unreadable IDs are misses, not faults.
        assert_eq!(cache.get(0), None);
        cache.put(methods[0], 8);
        assert_eq!(cache.get(methods[0]), None);
        // Each cache is its own: nothing leaks from one layout's walker to another's.
        assert_eq!(IdCache::new().get(methods[1]), None);
    }
}
