//! HotSpot's VMStructs tables, read once at load into a typed, immutable [`VmLayout`].
//!
//! libjvm exports four tables for its serviceability agent (`gHotSpotVMStructs`,
//! `gHotSpotVMTypes`, `gHotSpotVMIntConstants`, `gHotSpotVMLongConstants`), each an array
//! of entries whose stride and field offsets are exported as well (docs/hotspot.md 1.1, 1.2).
//! They name every field offset, static address, type size and constant a stack walker
//! and a method resolver need.
//!
//! Rules this module keeps:
//! - Everything is looked up BY NAME, never by JDK version. Where HotSpot renamed or
//!   reshaped something, each known spelling is accepted (docs/hotspot.md 1.3, 1.5): the first
//!   spelling found wins, and the shape found (pointer vs offset, in-blob vs immutable
//!   debug data) is recorded as an enum variant.
//! - Integer widths that changed across JDKs (`int` -> `int16_t`, `size_t` -> `uint32_t`,
//!   `u2` -> `u4`) come from the field's C++ type string, sized through the type table,
//!   so every scalar the walker reads is a [`Field`] carrying its width and signedness.
//! - Entries are grouped by the feature that needs them. A missing entry disables only
//!   its group, with one log line naming what is missing; [`missing`] lists them all.
//!
//! Reading the tables allocates and happens once, in [`init`] at library load. The signal
//! path only calls [`layout`] (an atomic load) and reads the plain integers inside.
//! The VM memory those integers point into is read by `codecache` and the walker, through
//! crash-protected loads.

use std::ffi::{c_int, c_void, CStr, CString};
use std::sync::OnceLock;

use crate::sample::vm::layout::{self, *};

#[path = "vmstructs_flags.rs"]
pub mod flags;
#[path = "vmstructs_groups.rs"]
mod groups;
#[path = "vmstructs_tables.rs"]
mod tables;

pub use tables::{
    ConstantTable, FieldEntry, RawTables, StructTable, TypeInfo, TypeTable, VmTables,
};

// ---------------------------------------------------------------------------------------
// Loading from the running JVM.
// ---------------------------------------------------------------------------------------

static MISSING: OnceLock<Vec<String>> = OnceLock::new();

/// Reads libjvm's tables and resolves the layout; `also_keep` takes what else it needs from
/// the same tables (`crate::hotspot::init`: ZGC's globals). Call once at library load (later
/// calls do nothing). Not signal-safe: allocates and logs.
pub fn init(also_keep: fn(&VmTables)) {
    MISSING.get_or_init(|| {
        let (layout, missing) = match load_tables() {
            Ok(tables) => {
                let enabled = flags::init(&tables)
                    .is_some_and(|t| t.enable_if_default("DebugNonSafepoints"));
                if !enabled {
                    crate::log::info("DebugNonSafepoints could not be enabled: compiled frames are located at safepoints only");
                }
                also_keep(&tables);
                let layout = VmLayout::resolve(&tables);
                let missing = layout.missing.clone();
                (Some(layout), missing)
            }
            Err(reason) => {
                crate::log::warn(&format!("VMStructs unavailable: {reason}"));
                (None, vec![reason])
            }
        };
        if let Some(layout) = layout {
            layout::publish(layout);
        }
        missing
    });
}

/// Every entry that disabled a group ("group: entry"), or why no tables were found.
/// Empty before [`init`].
pub fn missing() -> &'static [String] {
    MISSING.get().map(Vec::as_slice).unwrap_or(&[])
}

fn load_tables() -> Result<VmTables, String> {
    let jvm = Libjvm::open();
    let raw = jvm.raw_tables()?;
    // SAFETY: the addresses and layouts come from libjvm's own gHotSpotVM* symbols,
    // which describe static, null-terminated arrays that live as long as libjvm.
    let tables = unsafe { raw.read() };
    let (fields, types, constants) = tables.counts();
    crate::log::info(&format!(
        "VMStructs: {fields} fields, {types} types, {constants} constants"
    ));
    Ok(tables)
}

/// A handle on the already loaded libjvm (or the global scope as a last resort).
struct Libjvm {
    handle: *mut c_void,
    /// Whether `handle` came from dlopen and must be closed.
    opened: bool,
}

impl Libjvm {
    fn open() -> Libjvm {
        let by_name = noload(c"libjvm.so");
        let handle = if by_name.is_null() {
            loaded_libjvm_path().map_or(std::ptr::null_mut(), |p| noload(&p))
        } else {
            by_name
        };
        if handle.is_null() {
            // The java launcher loads libjvm RTLD_GLOBAL, so its symbols are in scope.
            Libjvm {
                handle: libc::RTLD_DEFAULT,
                opened: false,
            }
        } else {
            Libjvm {
                handle,
                opened: true,
            }
        }
    }

    /// The value of a `uint64_t`/pointer variable exported by libjvm.
    fn value(&self, name: &CStr) -> Option<usize> {
        // SAFETY: dlsym on a valid handle; a found gHotSpotVM* symbol is a (u)int64 or
        // pointer variable initialised when libjvm was loaded.
        unsafe {
            let p = libc::dlsym(self.handle, name.as_ptr());
            (!p.is_null()).then(|| (p as *const usize).read())
        }
    }

    fn need(&self, name: &CStr) -> Result<usize, String> {
        self.value(name)
            .ok_or_else(|| format!("libjvm symbol {} not found", name.to_string_lossy()))
    }

    fn raw_tables(&self) -> Result<RawTables, String> {
        let structs = StructTable {
            base: self.need(c"gHotSpotVMStructs")?,
            stride: self.need(c"gHotSpotVMStructEntryArrayStride")?,
            type_name: self.need(c"gHotSpotVMStructEntryTypeNameOffset")?,
            field_name: self.need(c"gHotSpotVMStructEntryFieldNameOffset")?,
            type_string: self.value(c"gHotSpotVMStructEntryTypeStringOffset"),
            is_static: self.need(c"gHotSpotVMStructEntryIsStaticOffset")?,
            offset: self.need(c"gHotSpotVMStructEntryOffsetOffset")?,
            address: self.need(c"gHotSpotVMStructEntryAddressOffset")?,
        };
        // Types and constants are optional as tables: without them the groups that need
        // a size or a constant report those entries missing.
        let types = TypeTable {
            base: self.value(c"gHotSpotVMTypes").unwrap_or(0),
            stride: self.value(c"gHotSpotVMTypeEntryArrayStride").unwrap_or(0),
            type_name: self
                .value(c"gHotSpotVMTypeEntryTypeNameOffset")
                .unwrap_or(0),
            is_unsigned: self
                .value(c"gHotSpotVMTypeEntryIsUnsignedOffset")
                .unwrap_or(0),
            size: self.value(c"gHotSpotVMTypeEntrySizeOffset").unwrap_or(0),
        };
        let constants = |base: &CStr, stride: &CStr, name: &CStr, value: &CStr| ConstantTable {
            base: self.value(base).unwrap_or(0),
            stride: self.value(stride).unwrap_or(0),
            name: self.value(name).unwrap_or(0),
            value: self.value(value).unwrap_or(0),
        };
        Ok(RawTables {
            structs,
            types,
            int_constants: constants(
                c"gHotSpotVMIntConstants",
                c"gHotSpotVMIntConstantEntryArrayStride",
                c"gHotSpotVMIntConstantEntryNameOffset",
                c"gHotSpotVMIntConstantEntryValueOffset",
            ),
            long_constants: constants(
                c"gHotSpotVMLongConstants",
                c"gHotSpotVMLongConstantEntryArrayStride",
                c"gHotSpotVMLongConstantEntryNameOffset",
                c"gHotSpotVMLongConstantEntryValueOffset",
            ),
        })
    }
}

impl Drop for Libjvm {
    fn drop(&mut self) {
        if self.opened {
            // SAFETY: balances the RTLD_NOLOAD dlopen; libjvm stays loaded by the launcher.
            unsafe { libc::dlclose(self.handle) };
        }
    }
}

/// dlopen without loading: a handle only if the object is already in the process.
fn noload(name: &CStr) -> *mut c_void {
    // SAFETY: RTLD_NOLOAD never loads or initialises anything.
    unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_NOW) }
}

/// The path of a loaded object named `libjvm.so`, for JVMs whose libjvm is not findable
/// by bare name (e.g. loaded by full path from a non-standard directory).
fn loaded_libjvm_path() -> Option<CString> {
    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: dl_iterate_phdr passes a valid info for the duration of the call, and
        // `data` is the `Option<CString>` owned by the caller below.
        unsafe {
            let name = (*info).dlpi_name;
            if name.is_null() {
                return 0;
            }
            let name = CStr::from_ptr(name);
            if !name.to_bytes().ends_with(b"/libjvm.so") {
                return 0;
            }
            *(data as *mut Option<CString>) = Some(name.to_owned());
            1
        }
    }
    let mut found: Option<CString> = None;
    // SAFETY: `visit` only writes to `found`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(visit), &mut found as *mut _ as *mut c_void) };
    found
}

#[cfg(test)]
#[path = "vmstructs_tests.rs"]
mod tests;
