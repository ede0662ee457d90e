//! Naming raw `Method*` frames at dump time by reading VM metadata (docs/hotspot.md 5.1-5.2):
//! holder class name, method name and signature from the constant pool, modifiers, and
//! the compressed line number table. All reads are crash-protected; the result is only
//! as trustworthy as the `Method*` is live (the lazy mode adds the checks that make it
//! so; `fjmethodid=false` only keeps raw frames of classes that never unload, and
//! [`resolve_checked`] refuses those of redefined classes).

use std::sync::Arc;

use super::info::{internal_class_name, is_entry_point, BciLine, MethodInfo};
use crate::hotspot::linetable::LineNumbers;
use crate::jvmti::redefine;
use crate::sample::safe_access::load_usize;
use crate::sample::vm::codecache::load_field;
use crate::sample::vm::debuginfo::Encoding;
use crate::sample::vm::debuginfo::Memory;
use crate::sample::vm::klass::{self, Contains};
use crate::sample::vm::layout::{self, MethodGroup};
use crate::sample::vm::method::{self, symbol};
use crate::sample::vm::SAFE_MEMORY;

/// Superclass hops before giving up (a stale chain must not loop).
const MAX_SUPERS: usize = 64;

/// The `Symbol*` in constant pool slot `index`.
fn cp_symbol(m: &MethodGroup, constants: usize, index: usize) -> Option<String> {
    let slot = constants
        .checked_add(m.constant_pool.size)?
        .checked_add(index.checked_mul(8)?)?;
    // Symbol slots may carry tag bits in their low bits on some JDKs.
    symbol(m, load_usize(slot)? & !7)
}

fn klass_name(m: &MethodGroup, klass: usize) -> Option<String> {
    symbol(m, load_usize(klass.checked_add(m.klass.name)?)?)
}

/// Whether `klass` is java.lang.Thread or one of its subclasses.
fn is_thread_class(m: &MethodGroup, mut klass: usize) -> bool {
    for _ in 0..MAX_SUPERS {
        if klass == 0 {
            return false;
        }
        if klass_name(m, klass).as_deref() == Some("java/lang/Thread") {
            return true;
        }
        klass = match klass.checked_add(m.klass.super_klass).and_then(load_usize) {
            Some(s) => s,
            None => return false,
        };
    }
    false
}

/// [`is_entry_point`] of the method `parts` were read from, whose class is `holder` (its
/// supers read by name for the thread check).
fn entry_point(m: &MethodGroup, holder: usize, parts: &MethodParts) -> bool {
    is_entry_point(&parts.name, &parts.descriptor, || {
        is_thread_class(m, holder)
    })
}

/// What GetClassSignature and the thread check would make of `holder`, the holder of the
/// method `parts` were read from: its internal name (None for one with a `+`, which JVMTI
/// rewrites for a hidden class) and whether the method is a thread's entry point. JDK 17-24
/// only (`ahead_ids::Plan::class_names`); as trustworthy as `holder` is live.
pub fn class_of(m: &MethodGroup, holder: usize, parts: &MethodParts) -> Option<(Arc<str>, bool)> {
    let name = klass_name(m, holder)?;
    if name.contains('+') {
        return None;
    }
    Some((name.into(), entry_point(m, holder, parts)))
}

/// What a method's own metadata says about it: the same bytes JVMTI GetMethodName,
/// GetMethodModifiers and GetLineNumberTable return, read without a VM call.
pub struct MethodParts {
    pub name: String,
    pub descriptor: String,
    pub modifiers: i32,
    /// Sorted by bci.
    pub lines: Vec<BciLine>,
}

/// Name, descriptor (constant-pool symbols), modifiers and line table (the compressed
/// table after the bytecodes) of `method`. None when any read fails. Only as
/// trustworthy as `method` is live.
pub fn method_parts(m: &MethodGroup, method: usize, encoding: Encoding) -> Option<MethodParts> {
    let const_method = load_usize(method.checked_add(m.method.const_method)?)?;
    let constants = load_usize(const_method.checked_add(m.const_method.constants)?)?;
    let name = cp_symbol(
        m,
        constants,
        load_field(const_method, m.const_method.name_index)? as usize,
    )?;
    let descriptor = cp_symbol(
        m,
        constants,
        load_field(const_method, m.const_method.signature_index)? as usize,
    )?;
    let modifiers = load_field(method, m.method.access_flags).unwrap_or(0) as i32 & 0xffff;
    let flags = load_field(const_method, m.const_method.flags).unwrap_or(0);
    let mut lines: Vec<BciLine> = if flags & m.const_method.has_linenumber_table != 0 {
        let _mem = crate::footprint::scope(crate::footprint::Category::LineTables);
        let code_size = load_field(const_method, m.const_method.code_size).unwrap_or(0) as usize;
        // The compressed table starts right after the bytecodes.
        let table = const_method + m.const_method.size + code_size;
        LineNumbers::new(&Windowed::default(), table, encoding)
            .filter_map(|e| Some((u32::try_from(e.bci).ok()?, e.line)))
            .collect()
    } else {
        Vec::new()
    };
    lines.sort_unstable();
    // Collected by doubling: the spare half would stay with the name for the whole dump
    // (and for later ones, `lazy/kept.rs`).
    lines.shrink_to_fit();
    Some(MethodParts {
        name,
        descriptor,
        modifiers,
        lines,
    })
}

/// Protected reads of a line table through a window copied [`WINDOW`] bytes at a time (one
/// protected load per 8 bytes instead of one per byte: a table is read front to back, and a
/// dump reads thousands of them). A window never crosses a page boundary, so where the byte
/// asked for is readable, the whole window is.
#[derive(Default)]
struct Windowed {
    start: std::cell::Cell<usize>,
    len: std::cell::Cell<usize>,
    bytes: std::cell::RefCell<[u8; WINDOW]>,
}

const WINDOW: usize = 32;
/// The smallest page size of the platforms we run on.
const MIN_PAGE: usize = 4096;

impl Memory for Windowed {
    fn read_u8(&self, addr: usize) -> Option<u8> {
        let at = addr.wrapping_sub(self.start.get());
        if at < self.len.get() {
            return self.bytes.borrow().get(at).copied();
        }
        let n = WINDOW.min(MIN_PAGE - addr % MIN_PAGE);
        let mut bytes = self.bytes.borrow_mut();
        if !crate::sample::safe_access::copy(&mut bytes[..n], addr) {
            self.len.set(0);
            return None;
        }
        self.start.set(addr);
        self.len.set(n);
        bytes.first().copied()
    }
    fn read_u32(&self, addr: usize) -> Option<u32> {
        SAFE_MEMORY.read_u32(addr)
    }
    fn read_usize(&self, addr: usize) -> Option<usize> {
        SAFE_MEMORY.read_usize(addr)
    }
}

/// Reads what JFR needs about `method`. None when any read fails.
pub fn resolve(method: usize, encoding: Encoding) -> Option<MethodInfo> {
    let m = layout::get()?.method.as_ref()?;
    let parts = method_parts(m, method, encoding)?;
    let holder = method::holder(m, method)?;
    let class_name = internal_class_name(&klass_name(m, holder)?).into();
    let is_entry_point = entry_point(m, holder, &parts);
    Some(MethodInfo {
        class_name,
        name: parts.name,
        descriptor: parts.descriptor,
        modifiers: parts.modifiers,
        lines: parts.lines,
        is_entry_point,
    })
}

/// Why [`resolve_checked`] did not name a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RawRefusal {
    /// A read failed.
    Unreadable,
    /// The holder is being, or has been, redefined.
    Redefined,
    /// The method is not in its holder's current `_methods`.
    NotCurrent,
}

/// [`resolve`] for an untagged raw frame (`fjmethodid=false`, or a method the walker found
/// no jmethodID for), with the checks that make "classes that never unload" enough:
/// - its holder must not be marked by the redefinition hooks (`jvmti/redefine.rs`), checked
///   before and after the reads. A redefinition's old `Method*`s are freed once no stack
///   holds them and their memory is reused by later versions of the class, so a frame
///   sampled before (or during an old version's last calls) could be named after another
///   method of the class. Every current method of a redefined class has a jmethodID (the
///   hook makes them), so the refused frames are exactly those of old versions or sampled
///   before the redefinition: `unknown`, as the lazy mode's, never a guess.
/// - no redefinition of a class of the holder's name may run during the reads
///   ([`redefine::redefining_named`]): the new version's methods, allocated perhaps where an
///   old method was, belong to a scratch class of that name that no mark names until the
///   redefinition's safepoint swaps them in.
/// - the method must be one of its holder's current methods (its idnum's slot, else a scan
///   of at most `scan_cap` methods): anything else is not a method of a live class.
pub fn resolve_checked(
    method: usize,
    encoding: Encoding,
    scan_cap: usize,
) -> Result<MethodInfo, RawRefusal> {
    let m = layout::get()
        .and_then(|l| l.method.as_ref())
        .ok_or(RawRefusal::Unreadable)?;
    let stamp = redefine::stamp();
    let holder = method::holder(m, method).ok_or(RawRefusal::Unreadable)?;
    let name = holder
        .checked_add(m.klass.name)
        .and_then(load_usize)
        .ok_or(RawRefusal::Unreadable)?;
    if redefine::is_marked(holder) || redefine::redefining_named(name, stamp) {
        return Err(RawRefusal::Redefined);
    }
    let idnum = method::idnum(m, method).ok_or(RawRefusal::Unreadable)?;
    let (data, len) = klass::methods(m, holder).ok_or(RawRefusal::NotCurrent)?;
    if klass::methods_contain(data, len, method, idnum, scan_cap, load_usize) != Contains::Yes {
        return Err(RawRefusal::NotCurrent);
    }
    let info = resolve(method, encoding).ok_or(RawRefusal::Unreadable)?;
    // A redefinition that started during the reads may have changed what they read.
    if redefine::redefining_named(name, stamp)
        || redefine::is_marked(holder)
        || method::holder(m, method) != Some(holder)
    {
        return Err(RawRefusal::Redefined);
    }
    Ok(info)
}
