//! The trace context a thread sets for itself, and how a signal handler interrupting that
//! thread reads it (docs/context.md).
//!
//! Each thread that ever sets a context owns one heap [`ThreadContext`], reached through a
//! pthread key (no Rust thread-local: its first touch from a handler could allocate). It holds
//! - the OTel thread-context record ([`OtelRecord`], OTEP #4947 layout: trace and span id
//!   big-endian, a valid flag, `{key, len, utf8}` attribute entries), whose address the owner
//!   also publishes in the exported thread-local `otel_thread_ctx_v1` for out-of-process
//!   readers (`crate::context::otel_tls`, outside this wing);
//! - the sidecar the handler copies into every event: the local root span id and one
//!   dictionary encoding per attribute slot (`crate::context::dictionary`), tagged with the dictionary's
//!   epoch so that an encoding from an earlier recording reads as unset.
//!
//! Only the owning thread writes (JNI calls); the handler runs on that same thread, so it sees
//! each store either done or not. A write that changes several fields first clears `valid`
//! and sets it again last (`detach`/`attach`), so a handler, or an external reader, never takes
//! a half-written span: while `valid` is 0 the event gets no context. No lock, no allocation,
//! no crash-protected load needed on the read side: the memory is ours and lives as long as the
//! thread (the key's destructor runs after glibc has cleared the thread's value).

use std::cell::UnsafeCell;
use std::sync::atomic::{
    fence, AtomicBool, AtomicPtr, AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering,
};
use std::sync::OnceLock;

use super::block_run::FilterCell;

/// Attribute slots per thread (`JavaProfiler.MAX_CONTEXT_SLOTS`, `maxContextSlots0`).
pub const MAX_ATTRIBUTES: usize = 10;
/// The whole OTel record, header included.
pub const RECORD_SIZE: usize = 640;
/// trace_id 16 + span_id 8 + valid 1 + reserved 1 + attrs_data_size 2.
pub const RECORD_HEADER: usize = 28;
/// Room for attribute entries.
pub const ATTRS_CAPACITY: usize = RECORD_SIZE - RECORD_HEADER;
/// Attribute key 0 holds the local root span id as 16 lowercase hex digits; attribute slot
/// `i` is key `i + 1` (as upstream).
pub const LRS_KEY: u8 = 0;
/// Longest attribute value (the entry's length is one byte).
pub const MAX_VALUE_BYTES: usize = 255;

/// The dictionary's generation: bumped when a recording starts and the dictionary is cleared
/// (`crate::context::dictionary::clear`). A slot stores the epoch it was written in beside its encoding.
static DICTIONARY_EPOCH: AtomicU32 = AtomicU32::new(1);

/// The current dictionary epoch.
#[inline]
pub fn dictionary_epoch() -> u32 {
    DICTIONARY_EPOCH.load(Ordering::Relaxed)
}

/// Starts a new dictionary epoch; encodings written before read as unset from now on.
pub fn next_dictionary_epoch() -> u32 {
    DICTIONARY_EPOCH.fetch_add(1, Ordering::Relaxed) + 1
}

/// The OTEP #4947 thread-context record, byte for byte: offset 0 trace_id[16] (big-endian),
/// 16 span_id[8] (big-endian), 24 valid, 25 reserved (0), 26 attrs_data_size (u16, native
/// order), 28 attrs_data[612]. The ids are atomics holding big-endian bit patterns so that
/// they can be stored and loaded whole.
#[repr(C, align(8))]
pub struct OtelRecord {
    trace_id: [AtomicU64; 2],
    span_id: AtomicU64,
    valid: AtomicU8,
    reserved: u8,
    attrs_size: AtomicU16,
    /// Written only by the owning thread, read by it (the test hooks) and by other processes;
    /// the in-process signal handler never reads it.
    attrs: UnsafeCell<[u8; ATTRS_CAPACITY]>,
}

const _: () = assert!(std::mem::size_of::<OtelRecord>() == RECORD_SIZE);

// SAFETY: `attrs` is written and read only by the owning thread (see the field); every
// other field is an atomic.
unsafe impl Sync for OtelRecord {}

impl Default for OtelRecord {
    fn default() -> Self {
        OtelRecord {
            trace_id: Default::default(),
            span_id: AtomicU64::new(0),
            valid: AtomicU8::new(0),
            reserved: 0,
            attrs_size: AtomicU16::new(0),
            attrs: UnsafeCell::new([0; ATTRS_CAPACITY]),
        }
    }
}

impl OtelRecord {
    /// Whether the record is complete (published).
    pub fn is_valid(&self) -> bool {
        self.valid.load(Ordering::Acquire) == 1
    }

    pub fn span_id(&self) -> u64 {
        u64::from_be(self.span_id.load(Ordering::Relaxed))
    }

    /// (high, low) halves of the 128-bit trace id.
    pub fn trace_id(&self) -> (u64, u64) {
        (
            u64::from_be(self.trace_id[0].load(Ordering::Relaxed)),
            u64::from_be(self.trace_id[1].load(Ordering::Relaxed)),
        )
    }

    /// The record's 640 bytes as an external reader sees them. Owning thread only.
    pub fn bytes(&self) -> &[u8; RECORD_SIZE] {
        // SAFETY: repr(C), exactly RECORD_SIZE bytes, no padding (asserted above); the only
        // non-atomic writer is the calling (owning) thread.
        unsafe { &*(self as *const OtelRecord as *const [u8; RECORD_SIZE]) }
    }

    fn attrs_len(&self) -> usize {
        (self.attrs_size.load(Ordering::Relaxed) as usize).min(ATTRS_CAPACITY)
    }

    /// The value of attribute `key`, if present. Owning thread only.
    pub fn attr(&self, key: u8) -> Option<&[u8]> {
        // SAFETY: see `attrs_mut`; a shared view for the owning thread.
        let data = unsafe { &*self.attrs.get() };
        let (at, len) = find_entry(&data[..self.attrs_len()], key)?;
        Some(&data[at + 2..at + 2 + len])
    }

    /// Removes attribute `key`'s entry, closing the gap.
    fn remove_attr(&self, key: u8) {
        let size = self.attrs_len();
        // SAFETY: only the owning thread calls the writers (see `ThreadContext`), and it
        // holds no other reference to `attrs` meanwhile.
        let data = unsafe { &mut *self.attrs.get() };
        if let Some((at, len)) = find_entry(&data[..size], key) {
            let end = at + 2 + len;
            data.copy_within(end..size, at);
            self.attrs_size
                .store((size - (end - at)) as u16, Ordering::Relaxed);
        }
    }

    /// Replaces attribute `key`'s entry; false (and the entry removed) when it does not fit.
    fn put_attr(&self, key: u8, value: &[u8]) -> bool {
        self.put_attr_with(key, value.len(), |dst| {
            dst.copy_from_slice(value);
            true
        })
    }

    /// Replaces attribute `key`'s entry with a `len`-byte value that `fill` writes in place
    /// (straight from a Java array in the JNI calls: no intermediate copy); false, and the
    /// entry removed, when it does not fit or `fill` fails.
    #[inline]
    fn put_attr_with(&self, key: u8, len: usize, fill: impl FnOnce(&mut [u8]) -> bool) -> bool {
        self.remove_attr(key);
        let size = self.attrs_len();
        if len > MAX_VALUE_BYTES || size + 2 + len > ATTRS_CAPACITY {
            return false;
        }
        // SAFETY: as in `remove_attr`.
        let data = unsafe { &mut *self.attrs.get() };
        if !fill(&mut data[size + 2..size + 2 + len]) {
            return false;
        }
        data[size] = key;
        data[size + 1] = len as u8;
        self.attrs_size
            .store((size + 2 + len) as u16, Ordering::Relaxed);
        true
    }

    /// Sets the local root span entry (key 0) to `lrs` in 16 lowercase hex digits.
    fn put_lrs(&self, lrs: u64) {
        let hex = hex16(lrs);
        self.put_attr(LRS_KEY, &hex);
    }
}

/// `v` as 16 lowercase hex digits, most significant first, without a loop or a branch: each
/// 32-bit half's nibbles are spread one per byte, then turned into ASCII eight at a time.
#[inline]
pub(crate) fn hex16(v: u64) -> [u8; 16] {
    #[inline]
    fn eight(x: u32) -> [u8; 8] {
        let mut x = u64::from(x);
        x = ((x & 0xFFFF_0000) << 16) | (x & 0xFFFF);
        x = ((x & 0x0000_FF00_0000_FF00) << 8) | (x & 0x0000_00FF_0000_00FF);
        x = ((x & 0x00F0_00F0_00F0_00F0) << 4) | (x & 0x000F_000F_000F_000F);
        // Byte i (from the low end) now holds nibble i; 0x01 in the bytes whose nibble is > 9.
        let letters = ((x + 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101;
        (x + 0x3030_3030_3030_3030 + letters * (b'a' - b'0' - 10) as u64).to_be_bytes()
    }
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&eight((v >> 32) as u32));
    out[8..].copy_from_slice(&eight(v as u32));
    out
}

/// Offset and value length of `key`'s entry in `data`. Stops at a truncated entry.
fn find_entry(data: &[u8], key: u8) -> Option<(usize, usize)> {
    let mut at = 0;
    while at + 2 <= data.len() {
        let len = data[at + 1] as usize;
        if at + 2 + len > data.len() {
            return None;
        }
        if data[at] == key {
            return Some((at, len));
        }
        at += 2 + len;
    }
    None
}

/// Per-thread trace context: the OTel record and the handler's sidecar. Written only by its
/// own thread (JNI), read by signal handlers interrupting that same thread.
#[repr(C)]
#[derive(Default)]
pub struct ThreadContext {
    /// First, so its address is the allocation's (8-aligned).
    pub record: OtelRecord,
    /// Sidecar: the local root span id (the record carries it only as hex text).
    pub root_span_id: AtomicU64,
    /// Sidecar: per slot, `epoch << 32 | encoding` (`crate::context::dictionary` id, 0 = unset).
    attrs: [AtomicU64; MAX_ATTRIBUTES],
    /// Sidecar: how many writes the native writers (the JNI calls) made to this context,
    /// wrapping. The Java writer (`DirectContextWriter`) never stores it; it compares it with the
    /// count it saw after its own last write, and on a difference stops trusting its mirror of the
    /// record (a virtual thread mounted on this carrier wrote here: docs/context.md, "Writing
    /// from Java"). Written and read by the owning thread only; no reader of events looks at it.
    native_writes: AtomicU64,
    /// The thread's cell in the wall-clock thread filter (`crate::context::thread_filter`, which never
    /// frees cells); null: none yet.
    pub filter_cell: AtomicPtr<FilterCell>,
    /// `otel_thread_ctx_v1` of this thread points at `record` (set by `crate::threads`).
    pub published: AtomicBool,
}

impl ThreadContext {
    /// Starts every native write (each writer below begins here): counts it for the Java
    /// writer (`native_writes`), then invalidates the record.
    fn detach(&self) {
        let n = self.native_writes.load(Ordering::Relaxed);
        self.native_writes
            .store(n.wrapping_add(1), Ordering::Relaxed);
        self.record.valid.store(0, Ordering::Relaxed);
        // Orders the invalidation before the field writes for readers on other CPUs.
        fence(Ordering::Release);
    }

    fn attach(&self) {
        fence(Ordering::Release);
        self.record.valid.store(1, Ordering::Relaxed);
    }

    /// The thread's wall-clock filter cell, if it ever registered. Signal-safe.
    #[inline]
    pub fn filter_cell(&self) -> Option<&'static FilterCell> {
        // SAFETY: a non-null pointer is a cell of the filter's pages, which are never freed.
        unsafe { self.filter_cell.load(Ordering::Acquire).as_ref() }
    }

    fn has_attrs(&self) -> bool {
        (0..MAX_ATTRIBUTES).any(|s| self.encoding(s) != 0)
    }

    /// Slot `slot`'s encoding in the current dictionary epoch, 0 if unset or stale.
    #[inline]
    pub fn encoding(&self, slot: usize) -> u32 {
        let v = self.attrs[slot].load(Ordering::Relaxed);
        if (v >> 32) as u32 == dictionary_epoch() {
            v as u32
        } else {
            0
        }
    }

    fn store_encoding(&self, slot: usize, encoding: u32) {
        let v = if encoding == 0 {
            0
        } else {
            (u64::from(dictionary_epoch()) << 32) | u64::from(encoding)
        };
        self.attrs[slot].store(v, Ordering::Relaxed);
    }

    /// Span activation (`setTraceContext`): ids, every slot reset, then up to two attributes
    /// (`None` = skip; a value that does not fit is skipped). `span` must be non-zero.
    pub fn set_trace(
        &self,
        root: u64,
        span: u64,
        trace: (u64, u64),
        first: Option<(usize, u32, &[u8])>,
        second: Option<(usize, u32, &[u8])>,
    ) {
        let values = [first, second];
        self.set_trace_with(
            root,
            span,
            trace,
            values.map(|v| v.map(|(slot, encoding, utf8)| (slot, encoding, utf8.len()))),
            |i, dst| {
                if let Some((_, _, utf8)) = values[i] {
                    dst.copy_from_slice(utf8);
                }
                true
            },
        );
    }

    /// [`Self::set_trace`] with each value given as `(slot, encoding, byte length)` and its
    /// bytes written in place by `fill(index of the value, destination)`.
    #[inline]
    pub fn set_trace_with(
        &self,
        root: u64,
        span: u64,
        trace: (u64, u64),
        values: [Option<(usize, u32, usize)>; 2],
        mut fill: impl FnMut(usize, &mut [u8]) -> bool,
    ) {
        self.detach();
        self.record.trace_id[0].store(trace.0.to_be(), Ordering::Relaxed);
        self.record.trace_id[1].store(trace.1.to_be(), Ordering::Relaxed);
        self.record.span_id.store(span.to_be(), Ordering::Relaxed);
        self.root_span_id.store(root, Ordering::Relaxed);
        for slot in 0..MAX_ATTRIBUTES {
            self.store_encoding(slot, 0);
        }
        self.record.attrs_size.store(0, Ordering::Relaxed);
        self.record.put_lrs(root);
        for (i, value) in values.into_iter().enumerate() {
            if let Some((slot, encoding, len)) = value {
                self.put_value_with(slot, encoding, len, |dst| fill(i, dst));
            }
        }
        self.attach();
    }

    /// Span deactivation (`clearTraceContext`): everything zero, the record left invalid.
    pub fn clear(&self) {
        self.detach();
        self.record.trace_id[0].store(0, Ordering::Relaxed);
        self.record.trace_id[1].store(0, Ordering::Relaxed);
        self.record.span_id.store(0, Ordering::Relaxed);
        self.root_span_id.store(0, Ordering::Relaxed);
        for slot in 0..MAX_ATTRIBUTES {
            self.store_encoding(slot, 0);
        }
        self.record.attrs_size.store(0, Ordering::Relaxed);
    }

    fn put_value_with(
        &self,
        slot: usize,
        encoding: u32,
        len: usize,
        fill: impl FnOnce(&mut [u8]) -> bool,
    ) -> bool {
        let ok = self.record.put_attr_with(slot as u8 + 1, len, fill);
        self.store_encoding(slot, if ok { encoding } else { 0 });
        ok
    }

    /// One attribute (`setContextValue`): false, and the slot cleared, when the value does not
    /// fit in the record. Publishes the record even without a span (as upstream).
    pub fn set_value(&self, slot: usize, encoding: u32, utf8: &[u8]) -> bool {
        self.set_value_with(slot, encoding, utf8.len(), |dst| {
            dst.copy_from_slice(utf8);
            true
        })
    }

    /// [`Self::set_value`] with a `len`-byte value that `fill` writes in place.
    #[inline]
    pub fn set_value_with(
        &self,
        slot: usize,
        encoding: u32,
        len: usize,
        fill: impl FnOnce(&mut [u8]) -> bool,
    ) -> bool {
        self.detach();
        let ok = self.put_value_with(slot, encoding, len, fill);
        self.attach();
        ok
    }

    /// Clears one attribute, leaving `valid` as it was.
    pub fn clear_value(&self, slot: usize) {
        let was_valid = self.record.is_valid();
        self.detach();
        self.record.remove_attr(slot as u8 + 1);
        self.store_encoding(slot, 0);
        if was_valid {
            self.attach();
        }
    }

    /// The released tracers' `setContext(spanId, rootSpanId)`: ids only, attributes kept (as
    /// java-profiler 1.34); the record stays published while a span or an attribute is set.
    pub fn set_span_legacy(&self, span: u64, root: u64) {
        self.detach();
        self.record.trace_id[0].store(0, Ordering::Relaxed);
        self.record.trace_id[1].store(0, Ordering::Relaxed);
        self.record.span_id.store(span.to_be(), Ordering::Relaxed);
        self.root_span_id.store(root, Ordering::Relaxed);
        if span == 0 && root == 0 {
            self.record.remove_attr(LRS_KEY);
        } else {
            self.record.put_lrs(root);
        }
        if span != 0 || self.has_attrs() {
            self.attach();
        }
    }

    /// The released tracers' `setContextValue(offset, encoding)`: the encoding is kept even if
    /// its value (`utf8`, from the dictionary) does not fit in the record, where the entry is
    /// then left out; encoding 0 clears the slot. Publishes the record while anything is set.
    pub fn set_encoding_legacy(&self, slot: usize, encoding: u32, utf8: &[u8]) {
        self.detach();
        if encoding == 0 || !self.record.put_attr(slot as u8 + 1, utf8) {
            self.record.remove_attr(slot as u8 + 1);
        }
        self.store_encoding(slot, encoding);
        if self.record.span_id() != 0 || self.has_attrs() {
            self.attach();
        }
    }

    /// Copies the slots' encodings into `out` (as many as fit).
    pub fn copy_encodings(&self, out: &mut [u32]) {
        for (slot, o) in out.iter_mut().take(MAX_ATTRIBUTES).enumerate() {
            *o = self.encoding(slot);
        }
    }

    /// The 128-bit trace id (high, low) an event records beside [`Self::snapshot`]: zero
    /// while the record is not valid. Signal-safe.
    #[inline]
    pub fn trace(&self) -> (u64, u64) {
        if !self.record.is_valid() {
            return (0, 0);
        }
        self.record.trace_id()
    }

    /// What an event records: all zero while the record is not valid. Signal-safe.
    #[inline]
    pub fn snapshot(&self) -> (u64, u64, [u32; MAX_ATTRIBUTES]) {
        let mut attrs = [0u32; MAX_ATTRIBUTES];
        if !self.record.is_valid() {
            return (0, 0, attrs);
        }
        for (slot, a) in attrs.iter_mut().enumerate() {
            *a = self.encoding(slot);
        }
        (
            self.record.span_id(),
            self.root_span_id.load(Ordering::Relaxed),
            attrs,
        )
    }
}

/// Where the Java writer (`DirectContextWriter`, which stores into a thread's context through a
/// direct `ByteBuffer` instead of a JNI call) finds each field, in this order; one place for the
/// layout, read by Java once (`JavaProfiler.contextLayout0`). Field sizes: ids 8 bytes each, big
/// endian in the record; sidecar words and the native write count native order; `valid` one byte.
pub fn java_layout() -> [i32; 13] {
    use std::mem::offset_of;
    let record = offset_of!(ThreadContext, record);
    [
        std::mem::size_of::<ThreadContext>() as i32,
        (record + offset_of!(OtelRecord, trace_id)) as i32,
        (record + offset_of!(OtelRecord, span_id)) as i32,
        (record + offset_of!(OtelRecord, valid)) as i32,
        (record + offset_of!(OtelRecord, attrs_size)) as i32,
        (record + offset_of!(OtelRecord, attrs)) as i32,
        ATTRS_CAPACITY as i32,
        offset_of!(ThreadContext, root_span_id) as i32,
        offset_of!(ThreadContext, attrs) as i32,
        MAX_ATTRIBUTES as i32,
        MAX_VALUE_BYTES as i32,
        LRS_KEY as i32,
        offset_of!(ThreadContext, native_writes) as i32,
    ]
}

/// The dictionary epoch's own word, for the Java writer to read in place (it tags each encoding
/// it stores with the epoch, as [`ThreadContext::encoding`] expects).
pub fn dictionary_epoch_word() -> *const AtomicU32 {
    &DICTIONARY_EPOCH
}

static KEY: OnceLock<libc::pthread_key_t> = OnceLock::new();

/// Creates the pthread key, with `destructor` run at thread exit on the thread's context.
/// Called once at library load, outside any signal handler.
pub fn init(destructor: unsafe extern "C" fn(*mut libc::c_void)) {
    KEY.get_or_init(|| {
        let mut key: libc::pthread_key_t = 0;
        // SAFETY: plain libc call with a valid out pointer and destructor.
        let rc = unsafe { libc::pthread_key_create(&mut key, Some(destructor)) };
        assert_eq!(rc, 0, "pthread_key_create failed");
        key
    });
}

/// The calling thread's context, if it has one. Signal-safe: a pthread key read.
#[inline]
pub fn current() -> Option<&'static ThreadContext> {
    context_for_signal()
}

/// Makes `c` the calling thread's context, freed by the key's destructor when the thread
/// exits. Not signal-safe: the caller allocated `c`; called once per thread, before any
/// handler reads it. None if the key was never created (`init`).
pub fn install(c: Box<ThreadContext>) -> Option<&'static ThreadContext> {
    let &key = KEY.get()?;
    let p = Box::into_raw(c);
    // SAFETY: key is valid; p is a leaked Box that lives until the thread's destructor runs.
    unsafe {
        libc::pthread_setspecific(key, p as *const libc::c_void);
        Some(&*p)
    }
}

/// The interrupted thread's context, if it ever set one. Signal-safe: a pthread key
/// read, no allocation.
#[inline]
pub fn context_for_signal() -> Option<&'static ThreadContext> {
    let key = *KEY.get()?;
    // SAFETY: see `install`; the handler runs on the thread owning the value, and glibc
    // clears the value before running the destructor that frees it.
    unsafe { (libc::pthread_getspecific(key) as *const ThreadContext).as_ref() }
}

/// The kernel thread id of the caller. Signal-safe (a raw syscall).
#[inline]
pub fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

#[cfg(test)]
#[path = "context_tests.rs"]
pub(crate) mod tests;
