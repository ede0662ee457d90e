//! What a start resolves from `cstack` and `fjmethodid` before any source runs: the walker of
//! signal samples, the walker of allocation stacks, the native frames they record, and the
//! `fjmethodid` mode the walker allows. Each fallback is a warning, never a failed start.

use jni::sys::JNIEnv;

use super::sigaction_message;
use crate::args::{Args, CStack, FjMethodId};
use crate::counters;
use crate::hotspot::vmstructs;
use crate::jvmti::jvm;
use crate::methods::lazy;
use crate::sample::handler::{self, WalkerKind};
use crate::sample::safe_access;
use crate::sample::vm::current_thread;
use crate::sample::walk::native::{set_record, Record};
use crate::sample::walk::vm::VmWalker;

/// The stack walker `cstack` resolves to: `vm`/`vmx` (and `default`) take our VMStructs
/// walker when this JVM's layout, the current-thread lookup and the crash protection are
/// all available; everything else, or a failure of any of those, uses AsyncGetCallTrace.
pub fn resolve_walker(args: &Args, warnings: &mut Vec<String>) -> WalkerKind {
    if !matches!(args.cstack, CStack::Vm | CStack::Vmx | CStack::Default) {
        return WalkerKind::Agct;
    }
    if !crate::sample::walk::arch::VM_WALKER {
        if args.cstack != CStack::Default {
            warnings.push(format!(
                "cstack={}: the VMStructs walker does not read this architecture's frames; using AsyncGetCallTrace",
                args.cstack_requested
            ));
        }
        return WalkerKind::Agct;
    }
    let ready = safe_access::install()
        .map_err(sigaction_message)
        .and_then(|_| {
            if current_thread::available() {
                Ok(())
            } else {
                Err("the current JavaThread cannot be found from a signal handler".into())
            }
        })
        .and_then(|_| match init_vm_walker() {
            Some(_) => Ok(()),
            None => Err(match vmstructs::missing() {
                [] => "VMStructs are not available".to_string(),
                missing => format!("VMStructs entries missing: {}", missing.join(", ")),
            }),
        });
    match ready {
        Ok(()) => WalkerKind::Vm,
        Err(e) => {
            if args.cstack != CStack::Default {
                warnings.push(format!(
                    "cstack={}: the VMStructs walker is unavailable ({e}); using AsyncGetCallTrace",
                    args.cstack_requested
                ));
            }
            crate::log::info(&format!("VMStructs walker unavailable: {e}"));
            WalkerKind::Agct
        }
    }
}

/// The VM walker, with the thread stacks' guard zones it needs to read stacks plainly.
fn init_vm_walker() -> Option<&'static VmWalker> {
    crate::sample::walk::own_stack::set_guard_zones(crate::sample::walk::own_stack::GuardZones(
        crate::hotspot::vmstructs::flags::stack_guard_bytes(),
    ));
    VmWalker::init(jvm::java_feature_version())
}

/// The walker of allocation stacks: ours whenever it can run, whatever `cstack` chose for CPU
/// samples. `cstack` names how signal samples are unwound; upstream takes allocation stacks
/// with JVMTI whatever it says, and AsyncGetCallTrace started from a callback fails on a share
/// of them (the thread's last frame is not always walkable for it). Raw frames it records in
/// the preloading modes are named as in `fjmethodid=false`.
pub fn allocation_walker(walker: WalkerKind) -> WalkerKind {
    if walker == WalkerKind::Vm {
        return walker;
    }
    let ready = crate::sample::walk::arch::VM_WALKER
        && safe_access::install().is_ok()
        && current_thread::available()
        && init_vm_walker().is_some();
    if ready {
        WalkerKind::Vm
    } else {
        WalkerKind::Agct
    }
}
/// The native frames a session's signal samples record, resolved at start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NativeFrames {
    /// `cstack=vmx` with the VM walker: native frames between Java frames too.
    pub mixed: bool,
    /// `cstack=fp|dwarf|lbr` with AsyncGetCallTrace: the VM walker's C frames above the top
    /// Java frame.
    pub native_top: bool,
}

impl NativeFrames {
    /// Whether native frames are unwound at all, so their DWARF rules and symbols are wanted.
    pub fn unwound(self, walker: WalkerKind) -> bool {
        walker == WalkerKind::Vm || self.native_top
    }

    /// What the signal handler records.
    fn record(self, walker: WalkerKind) -> Record {
        match walker {
            WalkerKind::Vm if self.mixed => Record::Mixed,
            WalkerKind::Vm => Record::Leaf,
            WalkerKind::Agct if self.native_top => Record::Leaf,
            WalkerKind::Agct => Record::None,
        }
    }
}

/// Sets which native frames signal samples record, and reads the DWARF rules of the libraries
/// mapped now when any are unwound. The VM walker records the native frames above the top
/// Java frame, and with cstack=vmx those between Java frames too (sample/walk/native.rs).
/// cstack=fp|dwarf|lbr name upstream's native unwinders beside AsyncGetCallTrace: there the
/// VM walker's native unwinding gives the C frames above the top Java frame (when it can be
/// set up), AsyncGetCallTrace the Java frames.
pub fn set_native_frames(args: &Args, walker: WalkerKind) -> NativeFrames {
    let frames = NativeFrames {
        mixed: walker == WalkerKind::Vm && args.cstack == CStack::Vmx,
        native_top: walker == WalkerKind::Agct
            && matches!(args.cstack, CStack::Fp | CStack::Dwarf | CStack::Lbr)
            && allocation_walker(walker) == WalkerKind::Vm,
    };
    handler::set_native_top(frames.native_top);
    set_record(frames.record(walker));
    if frames.unwound(walker) {
        // DWARF rules for the libraries mapped now (rebuilt when they change, at starts
        // and dumps).
        let bytes = crate::libs::eh_frame::refresh();
        counters::Counter::NativeUnwindTableBytes.set(bytes as i64);
    }
    frames
}

/// `fjmethodid` as the resolved walker allows (docs/compatibility.md 5): raw frames need the
/// VM walker, so with AsyncGetCallTrace every mode preloads. `lazy` also needs what
/// `lazy::prerequisites` checks; without it, it behaves as `false`. Every fallback is a
/// returned warning (logged and written to the recording) and, for `lazy`, the counter
/// `fjmethodid_lazy_fallback`.
pub fn resolve_id_mode(
    args: &Args,
    walker: WalkerKind,
    jni: *mut JNIEnv,
    warnings: &mut Vec<String>,
) -> FjMethodId {
    match (args.fjmethodid, walker) {
        (FjMethodId::True, _) => FjMethodId::True,
        (mode, WalkerKind::Agct) => {
            warnings.push(format!("fjmethodid={} needs the VMStructs stack walker (cstack=vm); jmethodIDs are preloaded as with fjmethodid=true", mode.name()));
            if mode == FjMethodId::Lazy {
                counters::Counter::LazyFallback.set(1);
            }
            FjMethodId::True
        }
        (FjMethodId::Lazy, WalkerKind::Vm) => {
            match lazy::prerequisites(jni, jvm::java_feature_version()) {
                Ok(()) => FjMethodId::Lazy,
                Err(e) => {
                    warnings.push(format!("fjmethodid=lazy is unavailable: {e}; using fjmethodid=false (jmethodIDs only for classes that can unload)"));
                    counters::Counter::LazyFallback.set(1);
                    FjMethodId::False
                }
            }
        }
        (FjMethodId::False, WalkerKind::Vm) => FjMethodId::False,
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_frames_recorded_follow_the_walker_and_cstack() {
        let frames = |mixed, native_top| NativeFrames { mixed, native_top };
        assert_eq!(frames(true, false).record(WalkerKind::Vm), Record::Mixed);
        assert_eq!(frames(false, false).record(WalkerKind::Vm), Record::Leaf);
        assert_eq!(frames(false, true).record(WalkerKind::Agct), Record::Leaf);
        assert_eq!(frames(false, false).record(WalkerKind::Agct), Record::None);
        assert!(frames(false, false).unwound(WalkerKind::Vm));
        assert!(frames(false, true).unwound(WalkerKind::Agct));
        assert!(!frames(false, false).unwound(WalkerKind::Agct));
    }
}
