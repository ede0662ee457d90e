//! What a chunk says about the machine and the process (`jdk.OSInformation`,
//! `jdk.CPUInformation`, `jdk.JVMInformation`, `jdk.InitialSystemProperty`,
//! `jdk.NativeLibrary`), and reading it ahead of the first dump ([`prepare`]).

use std::collections::HashMap;

use super::{NO_NATIVE_LIBS, NO_SYSTEM_INFO, NO_SYSTEM_PROPS};
use crate::args::Args;
use crate::jfr::ChunkBuilder;
use crate::jvmti::jvm;

pub(super) fn write_system_info(chunk: &mut ChunkBuilder, args: &Args, ticks: i64) {
    let jvmti = jvm::jvmti();
    let prop = |k: &str| jvmti.and_then(|j| j.system_property(k)).unwrap_or_default();
    if args.jfr_mask & NO_SYSTEM_INFO == 0 {
        let host = Host::get();
        chunk.os_information(ticks, &host.os_version);
        chunk.cpu_information(ticks, &host.cpu, &host.cpu, host.cores, host.cores);
        chunk.jvm_information(
            ticks,
            &prop("java.vm.name"),
            &format!("{} ({})", prop("java.vm.version"), prop("java.vm.info")),
            &host.command_line,
            "",
            &prop("sun.java.command"),
            host.start_ms,
            std::process::id() as i64,
        );
    }
    if args.jfr_mask & NO_SYSTEM_PROPS == 0 {
        if let Some(j) = jvmti {
            for key in j.system_property_names() {
                let value = j.system_property(&key).unwrap_or_default();
                chunk.initial_system_property(ticks, &key, &value);
            }
        }
    }
    if args.jfr_mask & NO_NATIVE_LIBS == 0 {
        for f in crate::libs::mappings::current().files.iter() {
            let build_id = build_id_of(f);
            chunk.native_library(ticks, &f.path, f.start, f.end, &build_id, f.start);
        }
    }
}

/// Reads now what the first dump would otherwise read (at start, before the memory peaks start
/// again, and on the library watcher's thread after a library change): the host facts, each
/// library's build id and, where native frames are recorded, the symbol tables (and kallsyms
/// where kernel frames are).
pub fn prepare(symbols: bool, kernel_symbols: bool) {
    if kernel_symbols {
        crate::libs::kallsyms::get();
    }
    Host::get();
    crate::profiler::cpu_load::prepare();
    for f in &crate::libs::mappings::current().files {
        build_id_of(f);
    }
    if symbols {
        crate::libs::symbols::preload();
    }
}

/// What every chunk repeats about the machine and the process, read once: each of these is a
/// file read or a cgroup walk (`available_parallelism`), none changes while the JVM runs.
struct Host {
    os_version: String,
    cpu: String,
    cores: i32,
    command_line: String,
    start_ms: i64,
}

impl Host {
    fn get() -> &'static Host {
        static HOST: std::sync::OnceLock<Host> = std::sync::OnceLock::new();
        HOST.get_or_init(|| {
            let cmdline = std::fs::read("/proc/self/cmdline").unwrap_or_default();
            Host {
                os_version: os_version(),
                cpu: cpu_model(),
                cores: std::thread::available_parallelism().map_or(1, |n| n.get()) as i32,
                command_line: cmdline
                    .split(|b| *b == 0)
                    .filter(|a| !a.is_empty())
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect::<Vec<_>>()
                    .join(" "),
                start_ms: jvm_start_ms(),
            }
        })
    }
}

fn os_version() -> String {
    // SAFETY: uname fills a zeroed struct of NUL-terminated fields.
    let u = unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        libc::uname(&mut u);
        u
    };
    let f = |b: &[libc::c_char]| {
        // SAFETY: uname's fields are NUL-terminated within their arrays.
        unsafe { std::ffi::CStr::from_ptr(b.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    };
    format!(
        "uname: {} {} {} {}",
        f(&u.sysname),
        f(&u.release),
        f(&u.version),
        f(&u.machine)
    )
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

/// Process start time, from /proc/self/stat (field 22, clock ticks since boot).
fn jvm_start_ms() -> i64 {
    let ticks = crate::profiler::cpu_load::start_ticks()
        .and_then(|t| i64::try_from(t).ok())
        .unwrap_or(0);
    let btime: i64 = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("btime"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0);
    // SAFETY: sysconf has no memory effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1);
    btime * 1000 + ticks * 1000 / hz
}

/// The build id of the library mapped as `f` (`""` without one), read from its file once per
/// mapping: every chunk lists every library again.
fn build_id_of(f: &crate::libs::elf::MappedFile) -> String {
    static IDS: parking_lot::Mutex<Option<HashMap<(String, u64), String>>> =
        parking_lot::Mutex::new(None);
    let mut ids = IDS.lock();
    ids.get_or_insert_with(HashMap::new)
        .entry((f.path.clone(), f.start))
        .or_insert_with(|| f.open().and_then(|e| e.build_id()).unwrap_or_default())
        .clone()
}
