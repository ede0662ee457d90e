//! The load census: the walker's reads of VM and stack memory counted by call site, to see
//! where a sample's loads go (docs/benchmarks.md, "The tracer's full configuration").
//!
//! Only a measurement build counts: `cargo build --release -p ddprof-native --features
//! load-census`. There every counted load costs a relaxed atomic add on a counter shared by
//! all threads (`load_census_*`, read with `getDebugCounters`); in any other build [`count`]
//! is empty and compiles to nothing, and the counters do not exist. Signal-safe.

/// Who asked for a load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Site {
    /// A compiled or stub frame's return address and saved fp, the top frame's
    /// prologue/epilogue reads (crash-protected).
    FrameSlot,
    /// A read of the sampled thread's own stack between its sp and its base as a plain load
    /// (`walk/own_stack.rs`), whoever asked for it.
    StackPlain,
    /// The code-cache lookup: heap bounds, segment map, block headers.
    CodeCache,
    /// A code blob's or nmethod's header fields (frame size, code begin, Method*, debug-info
    /// offsets, the name check).
    NmethodHeader,
    /// The PcDesc search (and its cache check).
    PcDesc,
    /// Scope decoding: the compressed scope stream and the metadata array.
    Scope,
    /// An interpreter frame's slots (Method*, bcp, sender sp, return address, saved fp).
    Interpreter,
    /// `Method*` / `ConstMethod*` / holder fields: jmethodID lookup, flags, bci.
    Method,
    /// The current thread's fields: state, frame anchor, stack bounds, call wrappers.
    Thread,
    /// Native frames (DWARF rules and frame pointers outside the code cache).
    Native,
    /// Anything else (receiver classes, tags, dump-time readers).
    Other,
}

/// Whether this build counts (the `load-census` feature).
pub const ENABLED: bool = cfg!(feature = "load-census");

/// Counts one load at `site`. Nothing outside a measurement build.
#[inline(always)]
pub fn count(site: Site) {
    #[cfg(feature = "load-census")]
    counter(site).inc();
    #[cfg(not(feature = "load-census"))]
    let _ = site;
}

/// Counts one VM walk (the denominator of loads per sample). Nothing outside a measurement
/// build.
#[inline(always)]
pub fn walk() {
    #[cfg(feature = "load-census")]
    crate::counters::Counter::LoadCensusWalks.inc();
}

#[cfg(feature = "load-census")]
fn counter(site: Site) -> crate::counters::Counter {
    use crate::counters::Counter as C;
    match site {
        Site::FrameSlot => C::LoadCensusFrameSlot,
        Site::StackPlain => C::LoadCensusStackPlain,
        Site::CodeCache => C::LoadCensusCodeCache,
        Site::NmethodHeader => C::LoadCensusNmethodHeader,
        Site::PcDesc => C::LoadCensusPcDesc,
        Site::Scope => C::LoadCensusScope,
        Site::Interpreter => C::LoadCensusInterpreter,
        Site::Method => C::LoadCensusMethod,
        Site::Thread => C::LoadCensusThread,
        Site::Native => C::LoadCensusNative,
        Site::Other => C::LoadCensusOther,
    }
}
