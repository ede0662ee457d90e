//! `JNI_OnLoad` (System.load from the Java API), `Agent_OnLoad` (`-agentpath:`) and
//! `Agent_OnAttach` (dynamic attach).

use std::ffi::{c_char, c_void, CStr};
use std::panic::catch_unwind;

use jni::sys::{jint, JavaVM, JNI_ERR, JNI_OK, JNI_VERSION_1_6};

use super::events;
use crate::jvmti::jvm;
use crate::jvmti::Jvmti;

/// Property naming the library that `-agentpath` loaded, so the Java API loads this same
/// copy instead of extracting a second one (two copies would fight over SIGPROF).
const AGENT_LIB_PROPERTY: &str = "ddprof.agent.lib";

/// The JVM handle (`jvm::init`) and, the first time, what needs the VM before anything else
/// runs: the memory gauges' names, the thread contexts' key, HotSpot's VMStructs (libjvm's
/// static initialisers fill them, so they are readable from `Agent_OnLoad` on) and the
/// redefinition hooks (before any agent can redefine a class through us or others,
/// docs/hotspot.md 8.4). Every entry point comes through here.
///
/// # Safety
/// `vm` must be the process's valid `JavaVM*`.
unsafe fn attach(vm: *mut JavaVM) -> Result<Jvmti, String> {
    // SAFETY: the caller guarantees `vm`.
    let (jvmti, first) = unsafe { jvm::init(vm, &events::callbacks()) }?;
    if first {
        crate::counters::name_gauges(crate::footprint::gauge_names);
        crate::threads::init_contexts();
        crate::hotspot::init();
        crate::jvmti::redefine::install(jvmti);
    }
    Ok(jvmti)
}

#[no_mangle]
pub extern "system" fn JNI_OnLoad(vm: *mut JavaVM, _reserved: *mut c_void) -> jint {
    // Before anything else: the Java loader deletes an extracted copy once System.load returns.
    crate::libs::elf::keep_own_file();
    // SAFETY: the JVM passes its valid JavaVM*.
    match catch_unwind(|| unsafe { attach(vm) }) {
        Ok(Ok(_)) => JNI_VERSION_1_6,
        Ok(Err(e)) => {
            eprintln!("[ddprof] initialisation failed: {e}");
            JNI_VERSION_1_6
        }
        Err(_) => JNI_ERR,
    }
}

fn options(options: *const c_char) -> String {
    if options.is_null() {
        return String::new();
    }
    // SAFETY: the JVM passes a NUL-terminated option string.
    unsafe { CStr::from_ptr(options) }
        .to_string_lossy()
        .into_owned()
}

/// Path of this shared object, found from the address of one of its functions.
fn own_path() -> Option<String> {
    // SAFETY: dladdr fills `info` for an address inside a loaded object.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(own_path as *const c_void, &mut info) == 0 || info.dli_fname.is_null() {
            return None;
        }
        Some(
            CStr::from_ptr(info.dli_fname)
                .to_string_lossy()
                .into_owned(),
        )
    }
}

#[no_mangle]
pub extern "system" fn Agent_OnLoad(
    vm: *mut JavaVM,
    opts: *const c_char,
    _reserved: *mut c_void,
) -> jint {
    crate::libs::elf::keep_own_file();
    let result = catch_unwind(|| {
        // SAFETY: the JVM passes its valid JavaVM*.
        let jvmti = unsafe { attach(vm) }?;
        if let Some(path) = own_path() {
            let _ = jvmti.set_system_property(AGENT_LIB_PROPERTY, &path);
        }
        events::set_agent_command(options(opts));
        Ok::<(), String>(())
    });
    match result {
        Ok(Ok(())) => JNI_OK,
        Ok(Err(e)) => {
            eprintln!("[ddprof] agent initialisation failed: {e}");
            JNI_ERR
        }
        Err(_) => JNI_ERR,
    }
}

#[no_mangle]
pub extern "system" fn Agent_OnAttach(
    vm: *mut JavaVM,
    opts: *const c_char,
    _reserved: *mut c_void,
) -> jint {
    crate::libs::elf::keep_own_file();
    let result = catch_unwind(|| {
        // SAFETY: the JVM passes its valid JavaVM*.
        unsafe { attach(vm) }?;
        events::set_agent_command(options(opts));
        let mut env: *mut c_void = std::ptr::null_mut();
        // SAFETY: attach-time calls run on an attached thread, so GetEnv succeeds.
        unsafe { ((**vm).GetEnv.ok_or("no GetEnv")?)(vm, &mut env, JNI_VERSION_1_6) };
        // A command that fails makes the attach fail: Agent_OnAttach's non-zero return is what
        // `jcmd JVMTI.agent_load` prints as its return code and what makes
        // VirtualMachine.loadAgentPath throw AgentInitializationException.
        events::run_agent_command(env as *mut jni::sys::JNIEnv)
    });
    match result {
        Ok(Ok(())) => JNI_OK,
        Ok(Err(e)) => {
            eprintln!("[ddprof] attach failed: {e}");
            JNI_ERR
        }
        Err(_) => JNI_ERR,
    }
}
