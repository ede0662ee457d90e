//! The code maps for native profilers, `perfmap` (perfmap.rs) and `jitdump` (jitdump.rs): both
//! are fed by the same JVMTI events, enabled and replayed once here, and each event is named
//! once and handed to whichever is on. Callbacks run on whatever thread posts the event (a
//! compiler thread, or the starting thread during the replay), never in a signal handler.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr};

use jni::sys::{jint, jlong, jmethodID};

use super::{jitdump, perfmap};
use crate::args::Args;
use crate::jvmti::BciLine;
use crate::jvmti::{self, Capabilities, Jvmti, JvmtiEnvPtr};
use crate::log;
use jitdump::DebugEntry;

/// Opens the maps `args` asks for and has the JVM report its code (what exists already is
/// replayed by `GenerateEvents`). On a JVM thread in the live phase, under the profiler lock.
/// What cannot be written is a warning; the session runs without it.
pub fn start(jvmti: Jvmti, args: &Args, warnings: &mut Vec<String>) {
    stop();
    let mut on = Vec::new();
    if args.perfmap {
        match perfmap::open_sink() {
            Ok(path) => {
                log::info(&format!("perf map: {}", path.display()));
                on.push("perfmap");
            }
            Err(e) => warnings.push(format!("perfmap: {e}; no perf map is written")),
        }
    }
    if let Some(choice) = &args.jitdump {
        match jitdump::open_sink(choice) {
            Ok(path) => {
                log::info(&format!("jitdump: {}", path.display()));
                on.push("jitdump");
            }
            Err(e) => warnings.push(format!("jitdump: {e}; no jitdump is written")),
        }
    }
    if on.is_empty() {
        return;
    }
    if let Err(e) = report_code(jvmti) {
        stop();
        warnings.push(format!("{}: {e}; no code map is written", on.join(", ")));
    }
}

/// Stops both maps (their files stay for the tools that read them).
pub fn stop() {
    perfmap::stop();
    jitdump::stop();
}

fn report_code(jvmti: Jvmti) -> Result<(), String> {
    let caps = Capabilities::default().with(Capabilities::GENERATE_COMPILED_METHOD_LOAD_EVENTS);
    jvmti
        .add_capabilities(&caps)
        .map_err(|e| format!("JVMTI capability for compiled-method events refused ({e})"))?;
    for event in [
        jvmti::EVENT_COMPILED_METHOD_LOAD,
        jvmti::EVENT_DYNAMIC_CODE_GENERATED,
    ] {
        jvmti
            .enable_event(event)
            .and_then(|_| jvmti.generate_events(event))
            .map_err(|e| format!("JVMTI code events refused ({e})"))?;
    }
    Ok(())
}

/// The CompiledMethodLoad callback.
///
/// # Safety
/// Called by JVMTI only, with a live `jvmtiEnv` and the event's arguments.
pub unsafe extern "C" fn on_compiled_method_load(
    env: *mut JvmtiEnvPtr,
    method: jmethodID,
    code_size: jint,
    code_addr: *const c_void,
    map_length: jint,
    map: *const c_void,
    compile_info: *const c_void,
) {
    let _ = std::panic::catch_unwind(|| {
        let dump = jitdump::is_active();
        if !(perfmap::is_active() || dump) || env.is_null() {
            return;
        }
        let Some(jvmti) = crate::jvmti::jvm::jvmti() else {
            return;
        };
        let name = (|| {
            let class = jvmti.method_declaring_class(method).ok()?;
            let signature = jvmti.class_signature(class).ok()?;
            let (name, descriptor) = jvmti.method_name(method).ok()?;
            Some(perfmap::method_name(&signature, &name, &descriptor))
        })();
        let name = name.as_deref().unwrap_or("[unknown compiled method]");
        let size = usize::try_from(code_size).unwrap_or(0);
        perfmap::write(code_addr as usize, size, name);
        if dump {
            // SAFETY: JVMTI's arguments, valid during the callback.
            let pcs = unsafe { pc_frames(method, map_length, map, compile_info) };
            let entries = Lines::new(jvmti).entries(pcs);
            // SAFETY: the nmethod's code is live during its load event.
            unsafe { jitdump::write_code(name, code_addr as usize, size, &entries) };
        }
    });
}

/// The code part of the DynamicCodeGenerated callback (stubs).
///
/// # Safety
/// `name` is NUL-terminated or null and `[address, address + length)` is the stub's code
/// (JVMTI's arguments, valid during the callback).
pub unsafe fn on_dynamic_code(name: *const c_char, address: *const c_void, length: jint) {
    if name.is_null() || !(perfmap::is_active() || jitdump::is_active()) {
        return;
    }
    // SAFETY: as the caller promises.
    let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
    let size = usize::try_from(length).unwrap_or(0);
    perfmap::write(address as usize, size, &name);
    // SAFETY: as the caller promises.
    unsafe { jitdump::write_code(&name, address as usize, size, &[]) };
}

/// `jvmtiCompiledMethodLoadRecordHeader` (jvmticmlr.h): a list of records of some kind.
#[repr(C)]
struct RecordHeader {
    kind: c_int,
    major_version: jint,
    minor_version: jint,
    next: *const RecordHeader,
}

/// `JVMTI_CMLR_INLINE_INFO`: the record that lists, per pc, the inlined frames there.
const CMLR_INLINE_INFO: c_int = 2;

/// `jvmtiCompiledMethodLoadInlineRecord`.
#[repr(C)]
struct InlineRecord {
    header: RecordHeader,
    numpcs: jint,
    pcinfo: *const PcStackInfo,
}

/// `PcStackInfo`: the frames at one pc, innermost (the most deeply inlined method) first.
#[repr(C)]
struct PcStackInfo {
    pc: *const c_void,
    numstackframes: jint,
    methods: *const jmethodID,
    bcis: *const jint,
}

/// `jvmtiAddrLocationMap`: a pc and the compiled method's own bytecode index there.
#[repr(C)]
struct AddrLocation {
    start_address: *const c_void,
    location: jlong,
}

/// (pc, innermost method, its bci) for every pc the VM describes: from the inline record of
/// `compile_info` when there is one (inlined methods named), else from the address-location
/// map (the compiled method's own bcis only).
///
/// # Safety
/// The arguments are a CompiledMethodLoad event's, read during its callback.
unsafe fn pc_frames(
    method: jmethodID,
    map_length: jint,
    map: *const c_void,
    compile_info: *const c_void,
) -> Vec<(u64, jmethodID, i64)> {
    let mut out = Vec::new();
    let mut record = compile_info as *const RecordHeader;
    while !record.is_null() {
        // SAFETY: a record list of the VM's, valid during the callback.
        let header = unsafe { &*record };
        if header.kind == CMLR_INLINE_INFO && header.major_version == 1 {
            // SAFETY: an INLINE_INFO record is an InlineRecord.
            let inline = unsafe { &*(record as *const InlineRecord) };
            if !inline.pcinfo.is_null() && inline.numpcs > 0 {
                // SAFETY: `numpcs` entries.
                let pcs =
                    unsafe { std::slice::from_raw_parts(inline.pcinfo, inline.numpcs as usize) };
                for pc in pcs {
                    if pc.numstackframes > 0 && !pc.methods.is_null() && !pc.bcis.is_null() {
                        // SAFETY: `numstackframes` >= 1 entries in both arrays; index 0 is
                        // the innermost frame.
                        let (m, bci) = unsafe { (*pc.methods, *pc.bcis) };
                        out.push((pc.pc as u64, m, i64::from(bci)));
                    }
                }
            }
            if !out.is_empty() {
                return out;
            }
        }
        record = header.next;
    }
    if !map.is_null() && map_length > 0 {
        // SAFETY: `map_length` entries.
        let map =
            unsafe { std::slice::from_raw_parts(map as *const AddrLocation, map_length as usize) };
        out.extend(
            map.iter()
                .map(|e| (e.start_address as u64, method, e.location)),
        );
    }
    out
}

/// A method's source path and its (start bci, line) table.
type MethodLines = (String, Vec<BciLine>);

/// Line tables and source files of the methods of one event, each looked up once.
struct Lines {
    jvmti: Jvmti,
    methods: HashMap<usize, Option<MethodLines>>,
}

impl Lines {
    fn new(jvmti: Jvmti) -> Self {
        Lines {
            jvmti,
            methods: HashMap::new(),
        }
    }

    /// The debug entries of `pcs`, sorted by pc, one per change of file or line; pcs whose
    /// method has no line table are left out (they keep the previous entry's line).
    fn entries(&mut self, mut pcs: Vec<(u64, jmethodID, i64)>) -> Vec<DebugEntry> {
        pcs.sort_by_key(|&(pc, _, _)| pc);
        let mut out: Vec<DebugEntry> = Vec::new();
        for (pc, m, bci) in pcs {
            let jvmti = self.jvmti;
            let info = self
                .methods
                .entry(m as usize)
                .or_insert_with(|| method_lines(jvmti, m));
            let Some((file, table)) = info else {
                continue;
            };
            let Some(line) = line_at(table, bci) else {
                continue;
            };
            if out
                .last()
                .is_some_and(|e| e.line == line && e.file == *file)
            {
                continue;
            }
            out.push(DebugEntry {
                addr: pc,
                line,
                file: file.clone(),
            });
        }
        out
    }
}

/// A method's source path (`com/example/Foo.java`) and line table, `None` without lines.
fn method_lines(jvmti: Jvmti, m: jmethodID) -> Option<MethodLines> {
    let table = jvmti.line_number_table(m);
    if table.is_empty() {
        return None;
    }
    let class = jvmti.method_declaring_class(m).ok()?;
    let signature = jvmti.class_signature(class).ok()?;
    let source = jvmti.source_file_name(class).ok();
    Some((source_path(&signature, source.as_deref()), table))
}

/// The source path of a class as debuggers look it up: its package's directories and its
/// `SourceFile` attribute (`Lcom/example/Foo$Bar;`, `Foo.java` -> `com/example/Foo.java`);
/// without the attribute, the top-level class's name with `.java`.
pub fn source_path(class_signature: &str, source_file: Option<&str>) -> String {
    let name = class_signature
        .strip_prefix('L')
        .and_then(|c| c.strip_suffix(';'))
        .unwrap_or(class_signature);
    let (package, simple) = match name.rfind('/') {
        Some(i) => (&name[..=i], &name[i + 1..]),
        None => ("", name),
    };
    match source_file {
        Some(f) if !f.is_empty() => format!("{package}{f}"),
        _ => {
            let top = simple.split('$').next().unwrap_or(simple);
            format!("{package}{top}.java")
        }
    }
}

/// The line of bytecode index `bci` in a (start bci, line) table sorted by bci: the last entry
/// starting at or before it; a negative bci (method entry, as in synchronized entry) is the
/// first line.
pub fn line_at(table: &[BciLine], bci: i64) -> Option<u32> {
    let line = if bci < 0 {
        table.first()?.1
    } else {
        let after = table.partition_point(|&(start, _)| i64::from(start) <= bci);
        table.get(after.checked_sub(1)?)?.1
    };
    u32::try_from(line).ok().filter(|&l| l > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_found_by_bci() {
        let table = [(0, 10), (4, 11), (9, 14)];
        assert_eq!(line_at(&table, 0), Some(10));
        assert_eq!(line_at(&table, 3), Some(10));
        assert_eq!(line_at(&table, 4), Some(11));
        assert_eq!(line_at(&table, 100), Some(14));
        assert_eq!(line_at(&table, -1), Some(10));
        assert_eq!(line_at(&[(2, 5)], 1), None);
        assert_eq!(line_at(&[], 1), None);
    }

    #[test]
    fn source_paths_follow_the_package() {
        assert_eq!(
            source_path("Lcom/example/Foo$Bar;", Some("Foo.java")),
            "com/example/Foo.java"
        );
        assert_eq!(
            source_path("Lcom/example/Foo$Bar;", None),
            "com/example/Foo.java"
        );
        assert_eq!(source_path("LMain;", Some("Main.kt")), "Main.kt");
    }
}
