//! Our own Java stack walker (`cstack=vm`): HotSpot frames read through VMStructs and
//! crash-protected loads, from inside the signal handler. The walk, in order
//! (docs/hotspot.md 4.6): find the JavaThread; start from the interrupted registers when the
//! thread runs Java, else from its frame anchor; then, frame by frame, classify the pc
//! (interpreter, nmethod, call stub, other stub, outside the code cache) and unwind.
//! Any doubt ends the walk with an error frame and a `walkvm_*` counter; no read can
//! fault the JVM.

use std::sync::OnceLock;

use super::arch::{self, Regs, Top};
use super::chain_cache::ChainCache;
use super::memo::{InterpretedMethod, InterpretedMethods, Keyed, NmethodFacts, Nmethods, WalkMemo};
use super::native::Cursor;
use super::nmethod_cache::NmethodCache;
use super::stack::MAX_FRAME_BYTES;
use super::{native, SignalContext, StackWalker, Walk};
use crate::counters::Counter;
use crate::sample::frame::{frame_type, Frame};
use crate::sample::load_census::{self, Site};
use crate::sample::safe_access::{load_usize, load_usize_at};
use crate::sample::tags;
use crate::sample::vm::codecache::{
    load_field, load_field_at, Blob, CodeCacheView, HeapHighs, NmethodNames,
};
use crate::sample::vm::current_thread::{self, Lookup};
use crate::sample::vm::debuginfo::{
    self, ChainEnd, Encoding, NmethodScopes, PcDescCache, PcDescLayout, ScopeFormat, ScopeFrame,
};
use crate::sample::vm::layout::{self, CodeCacheGroup, VmLayout};
use crate::sample::vm::SiteMemory;
use crate::sample::vm::{method, receiver};
use crate::sample::walk::own_stack::{self, OwnStack};

/// Reasons a walk ended early, recorded as the `bci` of an error frame. Negative and
/// below AsyncGetCallTrace's codes so the two never mix.
pub mod reason {
    pub const NOT_JAVA_THREAD: i32 = -100;
    pub const NO_JAVA_FRAME: i32 = -101;
    pub const UNKNOWN_PC: i32 = -102;
    pub const BAD_SP: i32 = -103;
    pub const BAD_FRAME: i32 = -104;
    pub const NO_SCOPE: i32 = -105;
    pub const UNAVAILABLE: i32 = -106;
    /// Lazy mode: a method without a jmethodID whose frame could not be tagged. The walk
    /// goes on; this frame is named `unknown`.
    pub const UNTAGGABLE: i32 = -107;
    /// The thread is deoptimizing and the walk reached the deoptimization or uncommon-trap
    /// blob: the interpreter frames below it may be skeletal, pushed but not yet filled in
    /// (their method slots hold whatever the stack held), so nothing below is read.
    pub const DEOPTIMIZING: i32 = -108;
}

/// Inlining depth decoded per compiled frame.
const MAX_SCOPES: usize = 64;

pub struct VmWalker {
    layout: &'static VmLayout,
    format: ScopeFormat,
    pc_desc: PcDescLayout,
    /// Blob name pointers known to be nmethods (JDK <= 22), for this layout.
    nmethod_names: NmethodNames,
    /// jmethodIDs found by earlier walks (validated on every use).
    ids: method::IdCache,
    /// PcDescs found by earlier walks (validated on every use).
    pc_descs: PcDescCache,
    /// nmethod headers read by earlier walks (checked by compile id on every use).
    nmethods: NmethodCache,
    /// Inline chains decoded by earlier walks (keyed by pc and compile id).
    chains: ChainCache,
    /// The code heaps, interpreter and call stub, read once (they never move); None if
    /// that read came up short, and then each walk reads them.
    code: Option<CodeCacheView>,
}

static WALKER: OnceLock<Option<VmWalker>> = OnceLock::new();

impl VmWalker {
    /// Builds the walker once every layout group it needs is resolved (`None` if one is
    /// missing: `crate::hotspot::vmstructs::missing` says which). Not signal-safe.
    /// `java_feature` picks the compressed-stream encoding, the one format fact that
    /// VMStructs does not describe (JDK-8292758 changed it in 20).
    pub fn init(java_feature: u32) -> Option<&'static VmWalker> {
        WALKER
            .get_or_init(|| {
                arch::configure(java_feature);
                let layout = layout::get()?;
                if !layout.complete() {
                    return None;
                }
                let frame = layout.frame.as_ref()?;
                let pcd = layout.pc_desc.as_ref()?;
                Some(VmWalker {
                    layout,
                    format: ScopeFormat {
                        encoding: Encoding::for_feature_version(java_feature),
                        invocation_entry_bci: frame.invocation_entry_bci as i32,
                    },
                    pc_desc: PcDescLayout {
                        size: pcd.size,
                        pc_offset: pcd.pc_offset.offset,
                        scope_decode_offset: pcd.scope_decode_offset.offset,
                    },
                    nmethod_names: NmethodNames::default(),
                    ids: method::IdCache::new(),
                    pc_descs: PcDescCache::new(),
                    nmethods: NmethodCache::new(),
                    chains: ChainCache::new(),
                    code: layout
                        .code_cache
                        .as_ref()
                        .map(|cc| cc.view())
                        .filter(CodeCacheView::complete),
                })
            })
            .as_ref()
    }

    /// The compressed-stream encoding of this JVM (debug info and line tables).
    pub fn encoding(&self) -> Encoding {
        self.format.encoding
    }

    /// The walker if `init` succeeded. Signal-safe.
    pub fn get() -> Option<&'static VmWalker> {
        WALKER.get()?.as_ref()
    }
}

struct Out<'a> {
    frames: &'a mut [Frame],
    n: usize,
    /// How the methods met so far in this walk were recorded (see [`MethodCache`]).
    methods: MethodCache,
    /// Compiled frames already decoded in this walk, by pc (see [`Out::repeat_chain`]).
    chains: [Chain; CHAIN_SLOTS],
    /// What the interpreted frames of this walk found out about their methods.
    interpreted: InterpretedMethods,
    /// What the compiled frames of this walk read of their nmethods.
    nmethods: Nmethods,
    /// Frame counts, added to their counters once at the end of the walk: one atomic
    /// add per walk rather than one per frame (the counter's cache line moves between
    /// the CPUs that sample).
    ids: i64,
    raw: i64,
    untaggable: i64,
}

impl<'a> Out<'a> {
    fn new(frames: &'a mut [Frame]) -> Self {
        Out {
            frames,
            n: 0,
            methods: MethodCache::default(),
            chains: [Chain::default(); CHAIN_SLOTS],
            interpreted: InterpretedMethods::default(),
            nmethods: Nmethods::default(),
            ids: 0,
            raw: 0,
            untaggable: 0,
        }
    }
    fn full(&self) -> bool {
        self.n >= self.frames.len()
    }
    fn push(&mut self, f: Frame) {
        if let Some(slot) = self.frames.get_mut(self.n) {
            *slot = f;
            self.n += 1;
        }
    }
    /// Pushes again the frames that the compiled frame with the same pc pushed earlier
    /// in this walk, if it did and they all fit. A recursive stack returns to the same
    /// pc again and again, and each of those frames would decode the same inline chain
    /// (about five loads per scope). Within one walk the chain cannot differ: same pc,
    /// same nmethod, same PcDesc. Never kept across walks.
    fn repeat_chain(&mut self, key: usize) -> bool {
        let Some(&c) = self.chains.get(Chain::slot(key)) else {
            return false;
        };
        let (first, count) = (c.first as usize, c.count as usize);
        if key == 0 || c.key != key || first + count > self.n {
            return false;
        }
        if self.frames.len() - self.n < count {
            return false;
        }
        for i in 0..count {
            let Some(&f) = self.frames.get(first + i) else {
                return false;
            };
            self.push(f);
        }
        self.ids += i64::from(c.ids);
        self.raw += i64::from(c.raw);
        self.untaggable += i64::from(c.untaggable);
        true
    }

    /// Remembers that the frames from `before` (the state before the compiled frame
    /// `key` was pushed) to now are that frame's chain.
    fn remember_chain(&mut self, key: usize, before: (usize, i64, i64, i64)) {
        let (n, ids, raw, untaggable) = before;
        let count = |d: i64| u32::try_from(d).unwrap_or(0);
        if let Some(slot) = self.chains.get_mut(Chain::slot(key)) {
            *slot = Chain {
                key,
                first: n as u32,
                count: (self.n - n) as u32,
                ids: count(self.ids - ids),
                raw: count(self.raw - raw),
                untaggable: count(self.untaggable - untaggable),
            };
        }
    }

    fn counts(&self) -> (usize, i64, i64, i64) {
        (self.n, self.ids, self.raw, self.untaggable)
    }

    fn flush_counts(&self) {
        for (c, n) in [
            (Counter::WalkvmFramesId, self.ids),
            (Counter::WalkvmFramesRaw, self.raw),
            (Counter::WalkvmRawFrameUntaggable, self.untaggable),
        ] {
            if n != 0 {
                c.add(n);
            }
        }
    }
}

/// Slots of the per-walk chain memo (a power of two).
const CHAIN_SLOTS: usize = 8;

/// Where the frames of one decoded compiled frame went in this walk's buffer.
#[derive(Clone, Copy, Default)]
struct Chain {
    /// The pc the PcDesc was looked up for (0: empty slot).
    key: usize,
    first: u32,
    count: u32,
    ids: u32,
    raw: u32,
    untaggable: u32,
}

impl Chain {
    fn slot(key: usize) -> usize {
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - 3)) % CHAIN_SLOTS
    }
}

/// How a `Method*` is recorded: its jmethodID, raw, raw with a lazy-mode tag, or (lazy
/// mode, no tag readable) as an error frame.
///
/// `repr(u64)`: a word of discriminant, then the payload in the next word, so that a copy
/// (every frame returns one and the walk's memo keeps one) moves whole words. Rust's own
/// layout put the jmethodID at an offset the copies reached in 4- and 8-byte parts, and
/// each frame's read of a kind just written stalled on store forwarding (a perf profile of
/// warm walks: a quarter of their cycles on two such loads).
#[derive(Clone, Copy, Default)]
#[repr(u64)]
enum MethodKind {
    Id(usize),
    #[default]
    Raw,
    /// The holder's tag and the method's idnum.
    Tagged(tags::Tag, Option<u16>),
    Untaggable,
}

/// How a `Method*` of this walk was recorded, kept for its next frame ([`MethodCache`]).
#[derive(Clone, Copy, Default)]
struct CachedMethod {
    /// 0: an empty slot (a null Method* is never looked up).
    method: usize,
    kind: MethodKind,
}

impl Keyed for CachedMethod {
    fn key(&self) -> usize {
        self.method
    }
}

/// The methods of one walk and how each was recorded. A stack repeats few methods many
/// times (recursion, the same caller on every path, inlined helpers), and finding a
/// jmethodID costs eight protected loads on cold metadata: asking once per distinct
/// method makes the walk cheaper.
type MethodCache = WalkMemo<CachedMethod, 32>;

fn count(reason: i32) {
    let c = match reason {
        reason::NOT_JAVA_THREAD => Counter::WalkvmNotJavaThread,
        reason::NO_JAVA_FRAME => Counter::WalkvmNoJavaFrame,
        reason::UNKNOWN_PC => Counter::WalkvmUnknownPc,
        reason::BAD_SP => Counter::WalkvmBadSp,
        reason::BAD_FRAME => Counter::WalkvmBadFrame,
        reason::NO_SCOPE => Counter::WalkvmNoScope,
        reason::DEOPTIMIZING => Counter::WalkvmDeoptimizing,
        _ => Counter::WalkvmUnavailable,
    };
    c.inc();
}

/// Outcome of one step of the walk.
enum Step {
    Next(Cursor),
    /// The outermost Java frame was reached.
    Done,
    Fail(i32),
}

impl StackWalker for VmWalker {
    fn name(&self) -> &'static str {
        "vm"
    }

    /// Signal-safe.
    fn walk(&self, uc: SignalContext, frames: &mut [Frame]) -> Walk {
        self.walk_from(Start::Signal(uc), Lookup::Later, frames)
    }
}

/// Where a walk starts.
#[derive(Clone, Copy)]
enum Start {
    /// A signal handler's interrupted registers.
    Signal(SignalContext),
    /// The calling thread's frame anchor: Java frames only.
    Anchor,
    /// The calling thread's own registers ([`Regs::here`]): its native frames first, as
    /// from a signal, then its Java frames.
    Here(Regs),
}

impl VmWalker {
    /// Walks the calling thread's Java stack from its last Java frame (the frame anchor
    /// HotSpot sets whenever Java calls into the VM or native code), without a signal
    /// context: for a JVMTI callback running on the thread itself, such as
    /// SampledObjectAlloc, whose Java caller is stopped at the anchor while we walk.
    /// Native frames between the callback and the anchor are not recorded. Allocation-free
    /// and lock-free, like the signal walk; an empty anchor gives one error frame.
    pub fn walk_from_anchor(&self, frames: &mut [Frame]) -> Walk {
        self.walk_from(Start::Anchor, Lookup::Later, frames)
    }

    /// [`StackWalker::walk`] of a signal whose handler looked the interrupted thread's
    /// JavaThread up already (for the sample's mode): the walk takes it from `thread` rather
    /// than reading it again. Signal-safe.
    #[link_section = sample_path_section!()]
    pub fn walk_signal(&self, uc: SignalContext, thread: Lookup, frames: &mut [Frame]) -> Walk {
        self.walk_from(Start::Signal(uc), thread, frames)
    }

    /// Walks the calling thread's whole stack from `regs` (its own registers, taken by
    /// [`Regs::here`] in a frame still live): the native frames from there to the anchor
    /// (recorded where the mode records native frames above Java's, as a signal's), then
    /// the Java frames; a thread without Java frames gets its native stack. For hooks
    /// called by native code (malloc, sockets): the frames of this library at the top (the
    /// hook and what it called) are the caller's to drop. Allocation-free and lock-free.
    pub fn walk_from_here(&self, regs: Regs, frames: &mut [Frame]) -> Walk {
        self.walk_from(Start::Here(regs), Lookup::Later, frames)
    }

    #[link_section = sample_path_section!()]
    fn walk_from(&self, start: Start, thread: Lookup, frames: &mut [Frame]) -> Walk {
        let mut out = Out::new(frames);
        let end = self.walk_into(start, thread, &mut out);
        out.flush_counts();
        if let Err(r) = end {
            count(r);
            // A failure below Java frames already recorded keeps them and marks the gap.
            if out.full() {
                if let Some(last) = out.frames.last_mut() {
                    *last = Frame::error(r);
                }
            } else {
                out.push(Frame::error(r));
            }
            return Walk {
                frames: out.n,
                truncated: false,
            };
        }
        let truncated = end == Ok(false);
        Walk {
            frames: out.n,
            truncated,
        }
    }
}

/// Where a native unwind starts: the interrupted registers.
fn cursor_of(regs: &Regs) -> Cursor {
    Cursor {
        pc: regs.pc,
        sp: regs.sp,
        fp: regs.fp,
    }
}

impl VmWalker {
    /// The code heaps, interpreter and call stub: read at setup, else once per walk (kept in
    /// `fresh`, the caller's).
    fn code_view<'a>(
        &'a self,
        cc: &CodeCacheGroup,
        fresh: &'a mut Option<CodeCacheView>,
    ) -> &'a CodeCacheView {
        match &self.code {
            Some(view) => view,
            None => fresh.insert(cc.view()),
        }
    }

    /// For AsyncGetCallTrace, which walks Java frames only (`cstack=fp|dwarf|lbr`): the
    /// native frames above the interrupted thread's top Java frame, leaf first, into
    /// `frames` (recorded as `cstack=vm` records them, `native::Record::Leaf`). Returns how
    /// many, and whether Java frames follow them for AsyncGetCallTrace to add (false: the
    /// thread has none, and its native stack, if any, is all there is). Signal-safe.
    pub fn native_top(&self, uc: SignalContext, frames: &mut [Frame]) -> (usize, bool) {
        let l = self.layout;
        let (Some(threads), Some(cc)) = (l.threads.as_ref(), l.code_cache.as_ref()) else {
            return (0, true);
        };
        let Some(regs) = Regs::from_context(uc) else {
            return (0, true);
        };
        let mut fresh = None;
        let code = self.code_view(cc, &mut fresh);
        let in_code = |pc: usize| code.contains(pc);
        let top = cursor_of(&regs);
        let mut n = 0usize;
        let Some(thread) = current_thread::java_thread() else {
            let bounds = native::thread_bounds(
                current_thread::any_thread(),
                threads.stack_base,
                threads.stack_size,
                regs.sp,
            );
            let java =
                native::native_only(top, regs.lr, bounds, &in_code, frames, &mut n).is_none();
            return (n, java);
        };
        if in_code(regs.pc) {
            return (0, true);
        }
        let state = load_field(thread, threads.thread_state).unwrap_or(0) as i32;
        let anchor_sp = load_usize(thread + threads.anchor + threads.anchor_sp).unwrap_or(0);
        let stack_base = load_usize(thread + threads.stack_base).unwrap_or(0);
        let stack_size = load_usize(thread + threads.stack_size).unwrap_or(0);
        let bounds = native::Bounds::of_stack(stack_base, stack_size, regs.sp);
        let in_java = state == threads.states.in_java || state == threads.states.in_java_trans;
        if in_java || anchor_sp != 0 {
            // A leaf call from compiled code (no anchor), or native code below an anchor.
            let stop_sp = if in_java { 0 } else { anchor_sp };
            native::to_java(
                top, regs.lr, bounds, stop_sp, true, &in_code, frames, &mut n,
            );
            return (n, true);
        }
        let java = native::native_only(top, regs.lr, bounds, &in_code, frames, &mut n).is_none();
        (n, java)
    }

    /// Ok(true): complete; Ok(false): the buffer filled up; Err(reason). From the frame
    /// anchor ([`Start::Anchor`]), the walk starts at the thread's last Java frame.
    fn walk_into(&self, start: Start, thread: Lookup, out: &mut Out) -> Result<bool, i32> {
        load_census::walk();
        let l = self.layout;
        let (Some(threads), Some(cc)) = (l.threads.as_ref(), l.code_cache.as_ref()) else {
            return Err(reason::UNAVAILABLE);
        };
        let regs = match start {
            Start::Signal(uc) => Regs::from_context(uc).ok_or(reason::UNAVAILABLE)?,
            Start::Here(regs) => regs,
            // Only the stack bounds read sp then: any address of this frame will do.
            Start::Anchor => {
                let here = 0u8;
                Regs {
                    sp: std::ptr::addr_of!(here) as usize,
                    ..Regs::default()
                }
            }
        };
        // Registers of the thread's code (a signal's or its own): native frames first.
        let from_regs = !matches!(start, Start::Anchor);
        let mut fresh = None;
        let code = self.code_view(cc, &mut fresh);
        // Native frames (native.rs): pcs outside the code cache are unwound by DWARF
        // rules and frame pointers; those above the top Java frame are recorded (all of
        // them with cstack=vmx), and threads without Java frames give their native stack.
        let in_code = |pc: usize| code.contains(pc);
        let top = cursor_of(&regs);
        let Some(thread) = thread.java_thread() else {
            if !from_regs {
                return Err(reason::NOT_JAVA_THREAD);
            }
            let bounds = native::thread_bounds(
                current_thread::any_thread(),
                threads.stack_base,
                threads.stack_size,
                regs.sp,
            );
            let (frames, n) = (&mut *out.frames, &mut out.n);
            return native::native_only(top, regs.lr, bounds, &in_code, frames, n)
                .ok_or(reason::NOT_JAVA_THREAD);
        };
        let state = load_field_at(Site::Thread, thread, threads.thread_state)
            .ok_or(reason::NOT_JAVA_THREAD)? as i32;
        let anchor = thread + threads.anchor;
        let anchor_sp = load_usize_at(Site::Thread, anchor + threads.anchor_sp).unwrap_or(0);
        let stack_base = load_usize_at(Site::Thread, thread + threads.stack_base).unwrap_or(0);
        let stack_size = load_usize_at(Site::Thread, thread + threads.stack_size).unwrap_or(0);
        let stack_low = stack_base.saturating_sub(stack_size);
        let bounds = native::Bounds::of_stack(stack_base, stack_size, regs.sp);
        // `regs.sp` is this thread's: the interrupted sp of its signal, or its own.
        let stack = OwnStack::of_current_thread(
            regs.sp,
            stack_low,
            stack_base,
            own_stack::guard_zones(),
            Site::FrameSlot,
        );

        let in_java = state == threads.states.in_java || state == threads.states.in_java_trans;
        // From the end of `Deoptimization::fetch_unroll_info` to the end of `unpack_frames`
        // (cleared there): the blob replaces the deoptimized frame by skeletal interpreter
        // frames and fills them in, all in Java state (a JRT_LEAF call), so the registers
        // lead through it.
        let deoptimizing =
            load_usize_at(Site::Thread, thread + threads.vframe_array_head).is_some_and(|v| v != 0);
        let mut anchor_used = false;
        let mut cur = Cursor {
            pc: regs.pc,
            sp: regs.sp,
            fp: regs.fp,
        };
        if !from_regs {
            // Called on the thread itself from the VM (a JVMTI callback): its Java frames
            // start at the anchor, which stays put while we run.
            if anchor_sp == 0 {
                return Err(reason::NO_JAVA_FRAME);
            }
            cur = self
                .resume_at_anchor(anchor, &stack)
                .ok_or(reason::NO_JAVA_FRAME)?;
            anchor_used = true;
        } else if !in_java {
            let (frames, n) = (&mut *out.frames, &mut out.n);
            if anchor_sp == 0 {
                return native::native_only(top, regs.lr, bounds, &in_code, frames, n)
                    .ok_or(reason::NO_JAVA_FRAME);
            }
            if !native::to_anchor(top, regs.lr, bounds, anchor_sp, &in_code, frames, n) {
                return Ok(false);
            }
            // In the VM, native code or blocked: Java frames start at the anchor.
            cur = self
                .resume_at_anchor(anchor, &stack)
                .ok_or(reason::NO_JAVA_FRAME)?;
            anchor_used = true;
        }
        let call_stub = code.call_stub_return_address();
        let mut highs = HeapHighs::default();
        let mut depth = 0usize;
        // Whether `cur` is the caller of a Java frame (interpreted or compiled).
        let mut caller_of_java = false;
        // Stubs add no frame: bound the steps, not only the frames.
        let max_steps = out.frames.len().saturating_mul(2).saturating_add(64);
        loop {
            if out.full() {
                return Ok(false);
            }
            if depth > max_steps {
                return Err(reason::BAD_FRAME);
            }
            if cur.sp < stack_low || cur.sp >= stack_base || !cur.sp.is_multiple_of(8) {
                return Err(reason::BAD_SP);
            }
            let after_java = std::mem::replace(&mut caller_of_java, false);
            let step = if Some(cur.pc) == call_stub {
                self.entry_frame(cur, &stack)
            } else if code.is_interpreter(cur.pc) {
                // The interpreter's code is one blob of the code cache: no lookup needed
                // (it would cost about four loads a frame).
                caller_of_java = true;
                self.interpreted_frame(cur, depth, &regs, &stack, out)
            } else if let Some(blob) = code.find_blob_in_walk(cc, cur.pc, &mut highs) {
                if out.nmethods.get(blob.addr).is_some()
                    || l.code_blob
                        .as_ref()
                        .is_some_and(|b| b.is_nmethod_cached(blob, &self.nmethod_names))
                {
                    caller_of_java = true;
                    self.compiled_frame(blob, cur, depth, &regs, &stack, out)
                } else if deoptimizing {
                    // The deoptimization or uncommon-trap blob (AsyncGetCallTrace answers
                    // ticks_deopt for the whole sample here).
                    return Err(reason::DEOPTIMIZING);
                } else {
                    // A stub gets a frame of its own in signal samples (`Math.sin` in
                    // `libmSin`, an arraycopy, an adapter): as the leaf, where the CPU is
                    // in it, and with cstack=vmx, which records all code, at any depth
                    // (a runtime stub between the VM's frames and Java's). Allocation
                    // stacks, which start at the anchor, keep naming the allocating Java
                    // method first.
                    let receiver = depth == 0
                        && !anchor_used
                        && self.vtable_frames(blob, cur.pc, regs.receiver, out);
                    let leaf = depth == 0 && !anchor_used;
                    if !receiver && from_regs && (leaf || native::mixed()) {
                        out.push(Frame::stub(cur.pc as u64));
                    }
                    self.stub_frame(blob, cur, depth, &regs, &stack, bounds, &in_code)
                }
            } else if after_java {
                // A Java frame is called by Java code, a stub or the call stub, all in the
                // code cache, never by native code: this return address was misread (a
                // native unwind from it once "recovered" into the right frames below a
                // garbage one, VmWalkerNativeFramesTest on JDK 21).
                return Err(reason::UNKNOWN_PC);
            } else {
                // Native or VM code called from Java: its Java caller by native unwinding,
                // else the anchor (once), where Java frames resume.
                let stop_sp = if anchor_used { 0 } else { anchor_sp };
                let top = depth == 0 && !anchor_used && from_regs;
                let (frames, n) = (&mut *out.frames, &mut out.n);
                let lr = if top { regs.lr } else { 0 };
                match native::to_java(cur, lr, bounds, stop_sp, top, &in_code, frames, n) {
                    native::End::Java(c) => Step::Next(c),
                    native::End::Full => return Ok(false),
                    _ if stop_sp != 0 => {
                        anchor_used = true;
                        match self.resume_at_anchor(anchor, &stack) {
                            Some(c) => Step::Next(c),
                            None => Step::Fail(reason::UNKNOWN_PC),
                        }
                    }
                    _ => Step::Fail(reason::UNKNOWN_PC),
                }
            };
            match step {
                Step::Done => return Ok(true),
                Step::Fail(r) => return Err(r),
                Step::Next(next) => {
                    // sp moves towards the stack base, by a bounded amount.
                    if next.sp < cur.sp || next.sp - cur.sp > MAX_FRAME_BYTES {
                        return Err(reason::BAD_SP);
                    }
                    // Every pc a step found is a return address (or the anchor's pc):
                    // usable once stripped (pointer authentication on aarch64).
                    cur = Cursor {
                        pc: arch::strip_pc(next.pc),
                        ..next
                    };
                }
            }
            depth += 1;
        }
    }

    /// The frame anchor's (pc, sp, fp). `_last_Java_pc` may be 0: then the return address
    /// sits just below sp.
    fn resume_at_anchor(&self, anchor: usize, stack: &OwnStack) -> Option<Cursor> {
        let t = self.layout.threads.as_ref()?;
        // A JavaThread's anchor, or a call wrapper's (on the stack).
        let fields = stack.at(Site::Thread);
        let sp = fields.word(anchor + t.anchor_sp)?;
        if sp == 0 {
            return None;
        }
        let pc = match fields.word(anchor + t.anchor_pc)? {
            0 => stack.word(sp.checked_sub(8)?)?,
            pc => pc,
        };
        let fp = fields.word(anchor + t.anchor_fp).unwrap_or(0);
        Some(Cursor { pc, sp, fp })
    }

    /// The frame of a method that is running, not calling: Native (bci -1) if the method is
    /// native (the interpreter's native entry, a native wrapper), else `frame_type` at `bci`.
    #[link_section = sample_path_section!()]
    fn push_method_or_native(
        &self,
        out: &mut Out,
        native: bool,
        m: usize,
        bci: i32,
        frame_type: u8,
    ) {
        if native {
            self.push_method(out, m, -1, frame_type::NATIVE);
        } else {
            self.push_method(out, m, bci, frame_type);
        }
    }

    /// Records a Method* as a jmethodID frame when it has one, else as a raw frame. In
    /// the lazy mode a raw frame carries its holder's tag; one that cannot be tagged
    /// becomes an error frame in its place (counted in `walkvm_raw_frame_untaggable`), so
    /// the frames around it keep their positions and nothing unverifiable is stored.
    #[link_section = sample_path_section!()]
    fn push_method(&self, out: &mut Out, m: usize, bci: i32, frame_type: u8) {
        let Some(mg) = self.layout.method.as_ref() else {
            return;
        };
        let kind = self.kind_in_walk(out, mg, m);
        let frame = match kind {
            MethodKind::Id(id) => Some(Frame::java(id as u64, bci, frame_type)),
            MethodKind::Raw => Some(Frame::raw(m as u64, bci, frame_type)),
            // The bci is part of the tagged encoding and may not fit.
            MethodKind::Tagged(t, idnum) => tags::tagged_frame(m as u64, bci, frame_type, t, idnum),
            MethodKind::Untaggable => None,
        };
        match (frame, kind) {
            (Some(f), MethodKind::Id(_)) => {
                out.ids += 1;
                out.push(f);
            }
            (Some(f), _) => {
                out.raw += 1;
                out.push(f);
            }
            (None, _) => {
                out.untaggable += 1;
                out.push(Frame::error(reason::UNTAGGABLE));
            }
        }
    }

    /// How `m` is recorded, asked once per walk. Signal-safe.
    #[link_section = sample_path_section!()]
    fn kind_in_walk(&self, out: &mut Out, mg: &layout::MethodGroup, m: usize) -> MethodKind {
        match out.methods.get(m) {
            Some(cached) => cached.kind,
            None => {
                let kind = self.method_kind(mg, m);
                out.methods.put(CachedMethod { method: m, kind });
                kind
            }
        }
    }

    /// How `m` is recorded, from VM metadata (protected loads). Signal-safe.
    fn method_kind(&self, mg: &layout::MethodGroup, m: usize) -> MethodKind {
        if let Some(id) = self.ids.get(m) {
            return MethodKind::Id(id);
        }
        if let Some(id) = method::jmethod_id(mg, m) {
            self.ids.put(m, id);
            return MethodKind::Id(id);
        }
        if !tags::is_active() {
            return MethodKind::Raw;
        }
        match tags::tag_of(mg, m) {
            Some((t, idnum)) => MethodKind::Tagged(t, idnum),
            None => MethodKind::Untaggable,
        }
    }

    /// Template interpreter frame (docs/hotspot.md 4.2).
    fn interpreted_frame(
        &self,
        cur: Cursor,
        depth: usize,
        regs: &Regs,
        stack: &OwnStack,
        out: &mut Out,
    ) -> Step {
        let slots = stack.at(Site::Interpreter);
        let Some(mg) = self.layout.method.as_ref() else {
            return Step::Fail(reason::UNAVAILABLE);
        };
        let fp = cur.fp;
        let built = fp.is_multiple_of(8)
            && fp > cur.sp
            && fp - cur.sp < MAX_FRAME_BYTES
            && cur.sp <= fp.wrapping_sub(arch::INTERP_BCP_SLOT * 8);
        if !built {
            if depth != 0 {
                return Step::Fail(reason::BAD_FRAME);
            }
            // Method entry, frame not built yet: a register holds the Method*, and the
            // architecture says where the return address is.
            if !method::is_plausible(mg, regs.method) {
                return Step::Fail(reason::BAD_FRAME);
            }
            // The native entry too runs here: a native method's frame is Native, as below.
            let native = method::is_native(mg, regs.method);
            self.push_method_or_native(out, native, regs.method, 0, frame_type::INTERPRETED);
            return arch::interpreter_entry(stack, cur, regs)
                .map_or(Step::Fail(reason::BAD_FRAME), Step::Next);
        }
        let (Some(m), Some(bcp)) = (
            slots.word(fp - arch::INTERP_METHOD_SLOT * 8),
            slots.word(fp - arch::INTERP_BCP_SLOT * 8),
        ) else {
            return Step::Fail(reason::BAD_FRAME);
        };
        let facts = match out.interpreted.get(m) {
            Some(facts) => facts,
            None => {
                // A jmethodID that still points at `m` proves it a live method (the check
                // `method_kind` ends with): one load where the holder chain costs three.
                // The kind is kept for the frame's push below.
                let proven = matches!(self.kind_in_walk(out, mg, m), MethodKind::Id(_));
                if !proven && !method::is_plausible(mg, m) {
                    return Step::Fail(reason::BAD_FRAME);
                }
                let native = method::is_native(mg, m);
                let facts = InterpretedMethod {
                    method: m,
                    native,
                    bytecodes: match native {
                        true => (0, 0),
                        false => method::bytecodes(mg, m).unwrap_or((0, 0)),
                    },
                };
                out.interpreted.put(facts);
                facts
            }
        };
        // The interpreter's native entry runs native methods that have no wrapper yet.
        let bci = method::bci_in(facts.bytecodes, bcp);
        self.push_method_or_native(out, facts.native, m, bci, frame_type::INTERPRETED);
        let Some(f) = self.layout.frame.as_ref() else {
            return Step::Fail(reason::UNAVAILABLE);
        };
        let sender_sp_slot = fp.wrapping_add((f.interpreter_frame_sender_sp_offset * 8) as usize);
        match (
            slots.word(sender_sp_slot),
            slots.word(fp + arch::RETURN_AT_FP),
            slots.word(fp + arch::LINK_AT_FP),
        ) {
            (Some(sp), Some(pc), Some(caller_fp)) => Step::Next(Cursor {
                pc,
                sp,
                fp: caller_fp,
            }),
            _ => Step::Fail(reason::BAD_FRAME),
        }
    }

    /// A sample whose leaf is a vtable/itable stub, with receiver frames on: the receiver's
    /// class (read from the first Java argument register, `receiver`), then the stub
    /// (docs/hotspot.md 3.8). Only the leaf: deeper, the register holds something else.
    /// Whether it recorded the two frames.
    fn vtable_frames(&self, blob: Blob, pc: usize, receiver: usize, out: &mut Out) -> bool {
        let Some(rl) = receiver::active() else {
            return false;
        };
        if receiver == 0
            || !self
                .layout
                .code_blob
                .as_ref()
                .is_some_and(|b| b.is_vtable_blob(blob))
        {
            return false;
        }
        let frame = match receiver::receiver_of(rl, receiver) {
            Some(r) => {
                Counter::WalkvmVtableReceivers.inc();
                Frame::vtable_receiver(r.klass as u64, receiver::recorded_trace_id(r))
            }
            None => {
                Counter::WalkvmVtableReceiverUnread.inc();
                Frame::vtable_receiver(0, 0)
            }
        };
        out.push(frame);
        out.push(Frame::stub(pc as u64));
        true
    }

    /// Stubs and adapters: no Java frame of their own (docs/hotspot.md 4.5 `unwindStub`).
    #[allow(clippy::too_many_arguments)]
    fn stub_frame(
        &self,
        blob: Blob,
        cur: Cursor,
        depth: usize,
        regs: &Regs,
        stack: &OwnStack,
        bounds: native::Bounds,
        in_code: &dyn Fn(usize) -> bool,
    ) -> Step {
        let Some(cb) = self.layout.code_blob.as_ref() else {
            return Step::Fail(reason::UNAVAILABLE);
        };
        let frame_bytes = cb.frame_size_words(blob).unwrap_or(0) * 8;
        let Some(start) = cb.code_begin(blob) else {
            return Step::Fail(reason::BAD_FRAME);
        };
        let complete = match cb.frame_complete_offset(blob) {
            Some(o) if o >= 0 => start.wrapping_add(o as usize),
            _ => start,
        };
        if frame_bytes > 0 && (depth > 0 || cur.pc >= complete) {
            return sized_frame_caller(stack, cur.sp + frame_bytes);
        }
        if depth == 0 {
            return arch::stub_top(stack, cur, regs, start, bounds, in_code)
                .map_or(Step::Fail(reason::BAD_FRAME), Step::Next);
        }
        Step::Fail(reason::BAD_FRAME)
    }

    /// The call stub: Java called from the VM. The JavaCallWrapper's saved anchor says
    /// where the previous Java frames are, or that there are none (docs/hotspot.md 4.4).
    fn entry_frame(&self, cur: Cursor, stack: &OwnStack) -> Step {
        let (Some(f), Some(t)) = (self.layout.frame.as_ref(), self.layout.threads.as_ref()) else {
            return Step::Fail(reason::UNAVAILABLE);
        };
        let slot = cur
            .fp
            .wrapping_add((f.entry_frame_call_wrapper_offset * 8) as usize);
        // The slot, the wrapper and its anchor are all on this thread's stack.
        let words = stack.at(Site::Thread);
        let Some(wrapper) = words.word(slot) else {
            return Step::Fail(reason::BAD_FRAME);
        };
        if !wrapper.is_multiple_of(8) || wrapper < 4096 || wrapper.wrapping_sub(cur.fp) > 512 {
            return Step::Fail(reason::BAD_FRAME);
        }
        let anchor = wrapper + t.call_wrapper_anchor;
        match words.word(anchor + t.anchor_sp) {
            Some(0) => Step::Done,
            Some(_) => self
                .resume_at_anchor(anchor, stack)
                .map_or(Step::Fail(reason::BAD_FRAME), Step::Next),
            None => Step::Fail(reason::BAD_FRAME),
        }
    }
}

/// The caller of a frame of known size (compiled, or a stub with a frame size), from its
/// sender's sp: the return address and the saved fp sit just below it.
#[link_section = sample_path_section!()]
fn sized_frame_caller(stack: &OwnStack, sp: usize) -> Step {
    match (
        stack.word(sp - arch::RETURN_BELOW_SENDER_SP),
        stack.word(sp - arch::LINK_BELOW_SENDER_SP),
    ) {
        (Some(pc), Some(fp)) => Step::Next(Cursor { pc, sp, fp }),
        _ => Step::Fail(reason::BAD_FRAME),
    }
}

// Compiled frames: the nmethod's header and the inline chain at a pc.
#[path = "vm_compiled.rs"]
mod compiled;

#[cfg(test)]
#[path = "vm_tests.rs"]
mod tests;
