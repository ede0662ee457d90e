//! Test mode `walkcompare`: the VM walker and AsyncGetCallTrace walk the same signal and
//! we count how often they name the same methods in the same order. Signal-safe.

use crate::counters::Counter;
use crate::sample::frame::{kind, Frame};
use crate::sample::safe_access::load_usize;
use crate::sample::tags;

/// The Method* a frame stands for: a jmethodID points at a slot holding it.
fn method_of(f: &Frame) -> Option<usize> {
    match f.kind {
        kind::JAVA_METHOD_ID => load_usize(f.method as usize),
        kind::RAW_METHOD => Some(tags::untag(f).method as usize),
        _ => None,
    }
}

/// Signal-safe.
pub fn count(vm: &[Frame], agct: &[Frame]) {
    Counter::WalkCompareSamples.inc();
    if agct.first().is_none_or(|f| f.kind == kind::ERROR) {
        Counter::WalkCompareAgctFailed.inc();
        return;
    }
    // Native frames (cstack=vmx) and vtable stub frames have no AsyncGetCallTrace
    // counterpart: compare the rest.
    let java = |f: &&Frame| !matches!(f.kind, kind::NATIVE_PC | kind::VTABLE_RECEIVER | kind::STUB);
    let same_methods = vm.iter().filter(java).count() == agct.len()
        && vm
            .iter()
            .filter(java)
            .zip(agct)
            .all(|(a, b)| method_of(a).is_some() && method_of(a) == method_of(b));
    if !same_methods {
        Counter::WalkCompareDiffer.inc();
        return;
    }
    Counter::WalkCompareSameMethods.inc();
    if vm.iter().filter(java).zip(agct).all(|(a, b)| {
        let (x, y) = (tags::bci(a), tags::bci(b));
        x == y || (x <= 0 && y <= 0)
    }) {
        Counter::WalkCompareSame.inc();
    }
}
