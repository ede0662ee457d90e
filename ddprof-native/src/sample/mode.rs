//! What the sampled thread was doing, as JFR's ExecutionMode and ThreadState say it (the
//! pool keys of docs/jfr-format.md 8): in Java, in the VM, in native code, blocked for a
//! safepoint, or in a system call; its state RUNNABLE, or SYSCALL when the signal
//! interrupted a system call. Read from the JavaThread's `_thread_state` and the
//! interrupted instruction. Signal-safe.

use super::vm::codecache::load_field;
use super::vm::current_thread;
use super::vm::layout;
use super::walk::SignalContext;

/// `ExecutionMode` pool keys.
pub mod execution {
    pub const UNKNOWN: u8 = 0;
    pub const JAVA: u8 = 1;
    pub const JVM: u8 = 2;
    pub const NATIVE: u8 = 3;
    pub const SAFEPOINT: u8 = 4;
    pub const SYSCALL: u8 = 5;
}

/// `ThreadState` pool keys used for samples of running threads.
pub mod state {
    pub const RUNNABLE: u8 = 2;
    pub const SYSCALL: u8 = 9;
}

/// (mode, state) of the interrupted thread. Signal-safe.
pub fn of_interrupted(uc: SignalContext) -> (u8, u8) {
    if in_syscall(uc) {
        return (execution::SYSCALL, state::SYSCALL);
    }
    (vm_mode(), state::RUNNABLE)
}

/// The mode HotSpot's thread state gives: JAVA, JVM, NATIVE or SAFEPOINT for a Java
/// thread, JVM for the VM's own threads (GC, compiler), NATIVE for threads HotSpot does
/// not know; UNKNOWN only without the VM's layout (another JVM).
fn vm_mode() -> u8 {
    let Some(threads) = layout::get().and_then(|l| l.threads.as_ref()) else {
        return execution::UNKNOWN;
    };
    let Some(thread) = current_thread::java_thread() else {
        return if current_thread::any_thread().is_some() {
            execution::JVM
        } else {
            execution::NATIVE
        };
    };
    let Some(s) = load_field(thread, threads.thread_state).map(|v| v as i32) else {
        return execution::UNKNOWN;
    };
    let st = &threads.states;
    if s == st.in_java || s == st.in_java_trans {
        execution::JAVA
    } else if s == st.in_vm || s == st.in_vm_trans {
        execution::JVM
    } else if s == st.in_native || s == st.in_native_trans {
        execution::NATIVE
    } else if s == st.blocked || s == st.blocked_trans {
        execution::SAFEPOINT
    } else {
        execution::JVM
    }
}

/// Whether the signal interrupted a system call: the pc is just after a `syscall`
/// instruction (the kernel delivers the signal on its way out of the call).
#[cfg(target_arch = "x86_64")]
fn in_syscall(uc: SignalContext) -> bool {
    const SYSCALL: u16 = 0x050f; // 0f 05, read little-endian
    let Some(regs) = super::walk::regs::Regs::from_context(uc) else {
        return false;
    };
    regs.pc
        .checked_sub(2)
        .and_then(super::safe_access::load_u16)
        .is_some_and(|op| op == SYSCALL)
}

/// Other architectures: not recognised yet (the sample keeps the VM's mode).
#[cfg(not(target_arch = "x86_64"))]
fn in_syscall(_uc: SignalContext) -> bool {
    false
}
