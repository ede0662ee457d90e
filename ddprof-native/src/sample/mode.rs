//! What the sampled thread was doing, as JFR's ExecutionMode and ThreadState say it (the
//! pool keys of docs/jfr-format.md 8): in Java, in the VM, in native code, blocked for a
//! safepoint, or in a system call. A CPU sample's state is always RUNNABLE, as upstream
//! writes it (readers parse it with `Thread.State.valueOf`); a system call shows in its mode.
//! Read from the JavaThread's `_thread_state` and the interrupted instruction. Signal-safe.

use super::vm::codecache::load_field;
use super::vm::current_thread::{self, Lookup};
use super::vm::layout;
use super::vm::SAFE_MEMORY;
use super::walk::arch::{self, Regs};
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

/// `ThreadState` pool keys. They follow HotSpot's `OSThread` `ThreadState` values
/// (allocated, initialized, runnable, monitor wait, condvar wait, object wait, breakpointed,
/// sleeping, zombie), plus SYSCALL for a signal that interrupted a system call.
pub mod state {
    pub const UNKNOWN: u8 = 0;
    pub const NEW: u8 = 1;
    pub const RUNNABLE: u8 = 2;
    /// Monitor enter, contended.
    pub const CONTENDED: u8 = 3;
    /// Condition variable (LockSupport.park).
    pub const PARKED: u8 = 4;
    /// Object.wait.
    pub const WAITING: u8 = 5;
    pub const SLEEPING: u8 = 7;
    pub const TERMINATED: u8 = 8;
    pub const SYSCALL: u8 = 9;
}

/// (mode, state) of a CPU sample of the interrupted thread: mode SYSCALL when the signal
/// interrupted a system call, else the VM's; the state RUNNABLE whatever the mode, because
/// the thread was on a CPU and upstream's readers (its ContextCpuTest, backends) call
/// `Thread.State.valueOf` on a CPU sample's state, where SYSCALL throws. `thread`: the
/// interrupted thread's JavaThread as the handler looked it up. Signal-safe.
#[link_section = sample_path_section!()]
pub fn of_interrupted(uc: SignalContext, thread: Lookup) -> (u8, u8) {
    if in_syscall(uc) {
        return (execution::SYSCALL, state::RUNNABLE);
    }
    (vm_mode(thread), state::RUNNABLE)
}

/// (mode, state) of a wall-clock sample: the state is the Java thread's OSThread state;
/// where that is unknown (not a Java thread, or unreadable) SYSCALL when the signal
/// interrupted a system call (mode SYSCALL too), else RUNNABLE. `thread` as for
/// [`of_interrupted`]. Signal-safe.
pub fn of_wall(uc: SignalContext, thread: Lookup) -> (u8, u8) {
    let st = os_thread_state(thread);
    if st != state::UNKNOWN {
        return (vm_mode(thread), st);
    }
    if in_syscall(uc) || at_syscall(uc) {
        return (execution::SYSCALL, state::SYSCALL);
    }
    (vm_mode(thread), state::RUNNABLE)
}

/// The current Java thread's `OSThread::_state` as a ThreadState key, UNKNOWN when there is
/// no Java thread, no exported field, or a value outside HotSpot's range.
fn os_thread_state(thread: Lookup) -> u8 {
    let Some(threads) = layout::get().and_then(|l| l.threads.as_ref()) else {
        return state::UNKNOWN;
    };
    let Some(offset) = threads.osthread_state else {
        return state::UNKNOWN;
    };
    let Some(thread) = thread.java_thread() else {
        return state::UNKNOWN;
    };
    let Some(osthread) = super::safe_access::load_usize(thread + threads.osthread) else {
        return state::UNKNOWN;
    };
    if osthread == 0 {
        return state::UNKNOWN;
    }
    match super::safe_access::load_u32(osthread + offset) {
        // ALLOCATED (0) reads as UNKNOWN; INITIALIZED..ZOMBIE map one to one.
        Some(v @ 1..=8) => v as u8,
        _ => state::UNKNOWN,
    }
}

/// The calling thread's mode (for samples taken on the thread itself, without a signal).
pub fn of_current_thread() -> u8 {
    vm_mode(Lookup::Later)
}

/// The mode HotSpot's thread state gives: JAVA, JVM, NATIVE or SAFEPOINT for a Java
/// thread, JVM for the VM's own threads (GC, compiler), NATIVE for threads HotSpot does
/// not know; UNKNOWN only without the VM's layout (another JVM).
#[link_section = sample_path_section!()]
fn vm_mode(thread: Lookup) -> u8 {
    let Some(threads) = layout::get().and_then(|l| l.threads.as_ref()) else {
        return execution::UNKNOWN;
    };
    let Some(thread) = thread.java_thread() else {
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

/// Whether the signal interrupted a system call: the pc is just after the architecture's
/// system-call instruction (the kernel delivers the signal on its way out of the call).
fn in_syscall(uc: SignalContext) -> bool {
    Regs::from_context(uc).is_some_and(|r| arch::after_syscall(&SAFE_MEMORY, r.pc))
}

/// Whether the pc is at a system-call instruction: a restartable system call interrupted by
/// the signal, which the kernel rewound to run again after the handler.
fn at_syscall(uc: SignalContext) -> bool {
    Regs::from_context(uc).is_some_and(|r| arch::at_syscall(&SAFE_MEMORY, r.pc))
}
