//! Names of sampled objects' classes, read from the `Klass` (its `_name` Symbol) under crash
//! protection, in the JVM's internal slashed form (`java/lang/String`, `[I`,
//! `[Ljava/lang/Integer;`), and interned once for the process: ObjectSample and
//! HeapLiveObject name a class by the same id, so the Class pool never holds one class twice.
//! The callback reads the name while it holds the object, so the class cannot unload under
//! the read. Without the VM's layout (another JVM) JVMTI `GetClassSignature` names it.

use std::collections::HashMap;
use std::sync::Arc;

use jni::sys::jclass;
use parking_lot::Mutex;

use crate::footprint::{self, Category};
use crate::sample::safe_access::{load_u8, load_usize};
use crate::sample::vm::codecache::load_field;
use crate::sample::vm::{klass, layout};

/// Distinct class names kept; beyond it, every new class is [`OVERFLOW_NAME`] (hidden
/// classes can be made without end, and their names with them).
const MAX_NAMES: usize = 1 << 16;
const OVERFLOW_NAME: &str = "<too many classes>";
/// Longest name read from a Symbol onto the stack; longer ones go through JVMTI.
const MAX_NAME_BYTES: usize = 1024;

#[derive(Default)]
struct Names {
    ids: HashMap<Arc<str>, u32>,
    /// Id `i + 1` is `names[i]`.
    names: Vec<Arc<str>>,
}

static NAMES: Mutex<Option<Names>> = Mutex::new(None);

/// The class-name id of `class` (a JNI reference to the object's class), 0 if it cannot be
/// named. Runs in the SampledObjectAlloc callback.
pub fn id_of(class: jclass) -> u32 {
    let mut buf = [0u8; MAX_NAME_BYTES];
    if let Some(n) = read_klass_name(class, &mut buf) {
        if let Ok(name) = std::str::from_utf8(buf.get(..n).unwrap_or(&[])) {
            return intern(name);
        }
    }
    let Some(jvmti) = crate::jvmti::jvm::jvmti() else {
        return 0;
    };
    match jvmti.class_signature(class) {
        Ok(sig) => intern(&internal_name(&sig)),
        Err(_) => 0,
    }
}

/// `Lfoo/Bar;` -> `foo/Bar`; arrays and primitives stay as they are.
fn internal_name(signature: &str) -> String {
    match signature
        .strip_prefix('L')
        .and_then(|s| s.strip_suffix(';'))
    {
        Some(inner) => inner.to_string(),
        None => signature.to_string(),
    }
}

/// The bytes of the class's `Klass::_name` into `buf`; their count, or None.
fn read_klass_name(class: jclass, buf: &mut [u8]) -> Option<usize> {
    let m = layout::get()?.method.as_ref()?;
    let k = klass::of_class_ref(m, class)?;
    let sym = load_usize(k.checked_add(m.klass.name)?)?;
    if sym == 0 {
        return None;
    }
    let raw = load_field(sym, m.symbol.length)? as u64;
    let len = (raw >> m.symbol.length_shift) as usize & 0xffff;
    if len == 0 || len > buf.len() {
        return None;
    }
    let body = sym.checked_add(m.symbol.body)?;
    for (i, b) in buf.iter_mut().take(len).enumerate() {
        *b = load_u8(body + i)?;
    }
    Some(len)
}

fn intern(name: &str) -> u32 {
    let mut guard = NAMES.lock();
    let names = guard.get_or_insert_with(Names::default);
    if let Some(&id) = names.ids.get(name) {
        return id;
    }
    let _mem = footprint::scope(Category::LiveHeap);
    let name: &str = if names.names.len() >= MAX_NAMES {
        if let Some(&id) = names.ids.get(OVERFLOW_NAME) {
            return id;
        }
        OVERFLOW_NAME
    } else {
        name
    };
    let shared: Arc<str> = Arc::from(name);
    names.names.push(shared.clone());
    let id = names.names.len() as u32;
    names.ids.insert(shared, id);
    id
}

/// The name of an id from [`id_of`] (None for 0 or an unknown id).
pub fn name(id: u32) -> Option<Arc<str>> {
    let guard = NAMES.lock();
    let names = guard.as_ref()?;
    names.names.get((id as usize).checked_sub(1)?).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_become_internal_names_and_names_intern_once() {
        assert_eq!(internal_name("Ljava/lang/String;"), "java/lang/String");
        assert_eq!(internal_name("[I"), "[I");
        assert_eq!(
            internal_name("[Ljava/lang/Integer;"),
            "[Ljava/lang/Integer;"
        );
        let a = intern("test/Interned");
        assert_eq!(intern("test/Interned"), a);
        assert_ne!(intern("test/Other"), a);
        assert_eq!(name(a).as_deref(), Some("test/Interned"));
        assert_eq!(name(0), None);
    }
}
