//! Reading a `Method*` found on a stack: its holder, its jmethodID (if one was ever
//! made), and at dump time its names and line table. Every read goes through the
//! crash-protected loads: a `Method*` from a stack is a lookup key until proven live.

use super::codecache::load_field;
use super::vmstructs::MethodGroup;
use crate::signal::safe_access::{load_u8, load_usize};

/// ACC_NATIVE in `Method::_access_flags`.
const ACC_NATIVE: i64 = 0x0100;
/// More slots than any class can have (idnums are u2): a larger length is a stale read.
const MAX_IDNUM: usize = 1 << 16;

/// The holder (`InstanceKlass*`) of a method: constMethod -> constants -> pool_holder.
/// Signal-safe.
pub fn holder(m: &MethodGroup, method: usize) -> Option<usize> {
    let const_method = load_usize(method.checked_add(m.method.const_method)?)?;
    let constants = load_usize(const_method.checked_add(m.const_method.constants)?)?;
    let holder = load_usize(constants.checked_add(m.constant_pool.pool_holder)?)?;
    (holder != 0).then_some(holder)
}

/// The jmethodID HotSpot made for `method`, if any: the holder's ID cache slot
/// `idnum + 1` (slot 0 holds the length), accepted only if it points back at `method`.
/// Signal-safe.
pub fn jmethod_id(m: &MethodGroup, method: usize) -> Option<usize> {
    let const_method = load_usize(method.checked_add(m.method.const_method)?)?;
    let idnum = load_field(const_method, m.const_method.method_idnum)? as usize;
    let holder = holder(m, method)?;
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
    let Some(const_method) = method
        .checked_add(m.method.const_method)
        .and_then(load_usize)
    else {
        return 0;
    };
    let start = const_method.wrapping_add(m.const_method.size);
    let code_size = load_field(const_method, m.const_method.code_size).unwrap_or(0) as usize;
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
    let bytes: Option<Vec<u8>> = (0..len).map(|i| load_u8(body + i)).collect();
    Some(String::from_utf8_lossy(&bytes?).into_owned())
}
