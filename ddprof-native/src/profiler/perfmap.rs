//! `perfmap`: a map of the JIT's code for native profilers (Linux `perf`, samply), which can
//! name code in anonymous memory only from `/tmp/perf-<pid>.map`: one `START SIZE name` line
//! per code range, hexadecimal without `0x`, appended as code appears. While the profiler
//! runs, every compiled method (JVMTI CompiledMethodLoad: `com.example.Foo::bar(I)V`) and
//! every stub the VM generates (DynamicCodeGenerated: `Interpreter`, `vtable stub`, ...) gets
//! a line; at start `GenerateEvents` replays what exists already. Freed code is not removed
//! (the format has no removal; code that later reuses the range gets a line of its own).
//! Callbacks run on whatever thread posts the event, never in a signal handler.

use std::ffi::{c_char, c_void, CStr};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use jni::sys::{jint, jmethodID};
use parking_lot::Mutex;

use crate::jvmti::{self, Capabilities, Jvmti, JvmtiEnvPtr};

/// The open map while `perfmap` is on.
static MAP: Mutex<Option<File>> = Mutex::new(None);
/// Whether lines are written (checked before taking the lock).
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Where `perf` looks for the map of process `pid`.
pub fn path_of(pid: u32) -> PathBuf {
    PathBuf::from(format!("/tmp/perf-{pid}.map"))
}

/// Opens (appending) this process's map and has the JVM report its code. On a JVM thread in
/// the live phase, under the profiler lock. An error changes nothing.
pub fn start(jvmti: Jvmti) -> Result<PathBuf, String> {
    let path = path_of(std::process::id());
    let file = open(&path)?;
    let caps = Capabilities::default().with(Capabilities::GENERATE_COMPILED_METHOD_LOAD_EVENTS);
    jvmti
        .add_capabilities(&caps)
        .map_err(|e| format!("JVMTI capability for compiled-method events refused ({e})"))?;
    *MAP.lock() = Some(file);
    ACTIVE.store(true, Ordering::Release);
    for event in [
        jvmti::EVENT_COMPILED_METHOD_LOAD,
        jvmti::EVENT_DYNAMIC_CODE_GENERATED,
    ] {
        let replayed = jvmti
            .enable_event(event)
            .and_then(|_| jvmti.generate_events(event));
        if let Err(e) = replayed {
            stop();
            return Err(format!("JVMTI events for {} refused ({e})", path.display()));
        }
    }
    Ok(path)
}

/// Stops writing and closes the map (the file stays for the tools that read it).
pub fn stop() {
    ACTIVE.store(false, Ordering::Release);
    *MAP.lock() = None;
}

/// The map file, appended to; refused if it is not a regular file of ours (`/tmp` is shared:
/// never follow a symlink, never write into someone else's file).
fn open(path: &PathBuf) -> Result<File, String> {
    let file = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot stat {}: {e}", path.display()))?;
    // SAFETY: geteuid has no memory effects.
    let me = unsafe { libc::geteuid() };
    if !meta.file_type().is_file() || meta.uid() != me {
        return Err(format!(
            "{} is not a regular file of this user",
            path.display()
        ));
    }
    Ok(file)
}

/// One map line: `START SIZE name`, hexadecimal, no `0x`; newlines in a name become spaces.
pub fn line(start: usize, size: usize, name: &str) -> String {
    let name: String = name
        .chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect();
    format!("{start:x} {size:x} {name}\n")
}

/// A method as the map names it: `com.example.Foo::bar(I)V` from JVMTI's class signature
/// (`Lcom/example/Foo;`), name and descriptor.
pub fn method_name(class_signature: &str, name: &str, descriptor: &str) -> String {
    let class = class_signature
        .strip_prefix('L')
        .and_then(|c| c.strip_suffix(';'))
        .unwrap_or(class_signature)
        .replace('/', ".");
    format!("{class}::{name}{descriptor}")
}

fn write(start: usize, size: usize, name: &str) {
    if !ACTIVE.load(Ordering::Acquire) || start == 0 || size == 0 {
        return;
    }
    let text = line(start, size, name);
    if let Some(f) = MAP.lock().as_mut() {
        // One write per line, on an O_APPEND file: readers never see half a line.
        let _ = f.write_all(text.as_bytes());
    }
}

/// The CompiledMethodLoad callback.
///
/// # Safety
/// Called by JVMTI only, with a live `jvmtiEnv`.
pub unsafe extern "C" fn on_compiled_method_load(
    env: *mut JvmtiEnvPtr,
    method: jmethodID,
    code_size: jint,
    code_addr: *const c_void,
    _map_length: jint,
    _map: *const c_void,
    _compile_info: *const c_void,
) {
    let _ = std::panic::catch_unwind(|| {
        if !ACTIVE.load(Ordering::Acquire) || env.is_null() {
            return;
        }
        let Some(jvmti) = crate::vm::jvmti() else {
            return;
        };
        let name = (|| {
            let class = jvmti.method_declaring_class(method).ok()?;
            let signature = jvmti.class_signature(class).ok()?;
            let (name, descriptor) = jvmti.method_name(method).ok()?;
            Some(method_name(&signature, &name, &descriptor))
        })();
        let size = usize::try_from(code_size).unwrap_or(0);
        write(
            code_addr as usize,
            size,
            name.as_deref().unwrap_or("[unknown compiled method]"),
        );
    });
}

/// The stub part of the DynamicCodeGenerated callback.
///
/// # Safety
/// `name` is NUL-terminated or null (JVMTI's argument).
pub unsafe fn on_dynamic_code(name: *const c_char, address: *const c_void, length: jint) {
    if !ACTIVE.load(Ordering::Acquire) || name.is_null() {
        return;
    }
    // SAFETY: as the caller promises.
    let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
    write(
        address as usize,
        usize::try_from(length).unwrap_or(0),
        &name,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_perfs_format() {
        assert_eq!(
            line(0x7f12_3400_0a00, 0x1c0, "com.example.Foo::bar(I)V"),
            "7f1234000a00 1c0 com.example.Foo::bar(I)V\n"
        );
        assert_eq!(line(0x1000, 0x10, "a\nb"), "1000 10 a b\n");
    }

    #[test]
    fn methods_are_named_with_dots_and_descriptor() {
        assert_eq!(
            method_name("Lcom/example/Foo$Bar;", "run", "()V"),
            "com.example.Foo$Bar::run()V"
        );
        assert_eq!(
            method_name("[I", "clone", "()Ljava/lang/Object;"),
            "[I::clone()Ljava/lang/Object;"
        );
    }

    #[test]
    fn a_symlink_or_foreign_file_is_refused() {
        let dir = std::env::temp_dir().join(format!("ddprof-perfmap-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let target = dir.join("target");
        std::fs::write(&target, b"").unwrap();
        let link = dir.join("link.map");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(open(&link).is_err(), "followed a symlink");
        let own = dir.join("own.map");
        assert!(open(&own).is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
