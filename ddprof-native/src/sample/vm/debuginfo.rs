//! Pure decoders for a compiled method's (nmethod's) debug information: HotSpot's compressed
//! stream, the `PcDesc` table and the chain of inlined `ScopeDesc`s (docs/hotspot.md 3.4-3.6).
//!
//! The signal-handler walker uses them to turn a pc inside compiled code into the inlined Java
//! frames (`Method*`, bci) it stands for; dump-time code uses the same stream for line tables
//! (`linetable.rs`). Every read of VM memory goes through [`Memory`], which the walker backs with
//! crash-protected loads and tests back with byte arrays ([`Bytes`]). Nothing here allocates
//! (except [`PcDescCache::new`]), locks, panics or calls into the JVM; every loop is bounded.
//!
//! Where the inputs come from (the caller reads them from VMStructs, docs/hotspot.md 3.4):
//! - the `PcDesc` array `[begin, end)` and its field offsets (`PcDesc::_pc_offset`,
//!   `PcDesc::_scope_decode_offset`, type size of `PcDesc`);
//! - the scopes data (a compressed stream) and the nmethod's metadata array;
//! - `InvocationEntryBci` (an int constant, -1 on every JDK) and the JDK feature version, which
//!   picks the stream [`Encoding`].

use super::super::hint_cache::HintCache;

/// Reads VM memory. The walker implements it with crash-protected loads; a `None` is a load
/// that faulted (or, for [`Bytes`], fell outside the array). Values are in native byte order.
pub trait Memory {
    fn read_u8(&self, addr: usize) -> Option<u8>;
    fn read_u32(&self, addr: usize) -> Option<u32>;
    fn read_usize(&self, addr: usize) -> Option<usize>;
}

/// A byte array standing in for VM memory at address `base` (tests and recorded fixtures, which
/// come from x86_64, so multi-byte values are little-endian).
#[derive(Clone, Copy, Debug)]
pub struct Bytes<'a> {
    pub base: usize,
    pub data: &'a [u8],
}

impl Bytes<'_> {
    fn slice(&self, addr: usize, len: usize) -> Option<&[u8]> {
        let start = addr.checked_sub(self.base)?;
        self.data.get(start..start.checked_add(len)?)
    }
}

impl Memory for Bytes<'_> {
    fn read_u8(&self, addr: usize) -> Option<u8> {
        self.slice(addr, 1)?.first().copied()
    }

    fn read_u32(&self, addr: usize) -> Option<u32> {
        let bytes = self.slice(addr, 4)?;
        Some(u32::from_le_bytes(bytes.try_into().ok()?))
    }

    fn read_usize(&self, addr: usize) -> Option<usize> {
        let bytes = self.slice(addr, core::mem::size_of::<usize>())?;
        Some(usize::from_le_bytes(bytes.try_into().ok()?))
    }
}

/// The two byte layouts of HotSpot's compressed integers ("UNSIGNED5", from Pack200: a value
/// below the low-byte limit is one byte; otherwise up to four "high" bytes of 6 payload bits
/// each, ended by a low byte or by the fifth byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// JDK 8..19: bytes hold digits as they are; 192 low bytes (0..=191), value 0 is byte 0.
    Classic,
    /// JDK 20+ (JDK-8292758, the `UNSIGNED5` class): every byte is stored plus one so the stream
    /// never holds a zero byte; 191 low bytes (1..=191). High bytes are still 192..=255.
    ZeroFree,
}

impl Encoding {
    /// The encoding a JDK of this feature version (11, 17, 21, 25, ...) writes.
    pub const fn for_feature_version(major: u32) -> Encoding {
        if major >= 20 {
            Encoding::ZeroFree
        } else {
            Encoding::Classic
        }
    }

    /// Value subtracted from every byte before it is used as a digit.
    const fn excluded(self) -> u32 {
        match self {
            Encoding::Classic => 0,
            Encoding::ZeroFree => 1,
        }
    }
}

/// First byte value that is a "high" byte (more bytes follow), in both encodings.
const HIGH_BYTE: u8 = 192;
/// Bits of payload each high byte adds (H = 64).
const LG_H: u32 = 6;
/// No encoded value is longer than this.
const MAX_LENGTH: u32 = 5;

/// HotSpot's `decode_sign`: the zig-zag mapping used by `read_signed_int`
/// (0, -1, 1, -2, ... are stored as 0, 1, 2, 3, ...). Signal-safe.
pub const fn decode_sign(value: u32) -> i32 {
    ((value >> 1) as i32) ^ (0i32.wrapping_sub((value & 1) as i32))
}

/// A reader over one of HotSpot's compressed streams (`CompressedReadStream`): scopes data,
/// line number tables. Positions are byte offsets from `base`; reading stops at `limit`.
pub struct CompressedStream<'m, M: Memory> {
    mem: &'m M,
    base: usize,
    pos: usize,
    limit: usize,
    encoding: Encoding,
    /// The aligned word last read (`usize::MAX`: none) and its bytes: a scope header is a
    /// few bytes, so one protected load serves several of them (an aligned word never
    /// spans two pages, so it faults only where its bytes would).
    word_at: usize,
    word: [u8; WORD],
}

const WORD: usize = core::mem::size_of::<usize>();

impl<'m, M: Memory> CompressedStream<'m, M> {
    /// A stream at `base + pos`; bytes at offsets `>= limit` are never read (pass `usize::MAX`
    /// when the stream's length is unknown). Signal-safe.
    pub fn new(mem: &'m M, base: usize, pos: usize, limit: usize, encoding: Encoding) -> Self {
        CompressedStream {
            mem,
            base,
            pos,
            limit,
            encoding,
            word_at: usize::MAX,
            word: [0; WORD],
        }
    }

    /// Offset of the next byte to read. Signal-safe.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// A raw byte (`read_byte`: not compressed, no encoding adjustment). `None` when the byte
    /// is past the limit or unreadable. Signal-safe.
    pub fn read_byte(&mut self) -> Option<u8> {
        if self.pos >= self.limit {
            return None;
        }
        let addr = self.base.wrapping_add(self.pos);
        let at = addr & !(WORD - 1);
        if at != self.word_at {
            if let Some(w) = self.mem.read_usize(at) {
                self.word = w.to_ne_bytes();
                self.word_at = at;
            }
        }
        let byte = match at == self.word_at {
            true => *self.word.get(addr & (WORD - 1))?,
            // The word's other bytes may lie outside what `mem` can read: this one alone.
            false => self.mem.read_u8(addr)?,
        };
        self.pos = self.pos.wrapping_add(1);
        Some(byte)
    }

    /// One compressed unsigned value (HotSpot's `read_int`, whose 32 bits callers use as a
    /// `jint` or `juint`). Reads at most five bytes. Signal-safe.
    #[link_section = sample_path_section!()]
    pub fn read_int(&mut self) -> Option<u32> {
        let excluded = self.encoding.excluded();
        let mut sum: u32 = 0;
        let mut shift: u32 = 0;
        for i in 0..MAX_LENGTH {
            let byte = self.read_byte()?;
            sum = sum.wrapping_add(u32::from(byte).wrapping_sub(excluded).wrapping_shl(shift));
            if byte < HIGH_BYTE || i == MAX_LENGTH - 1 {
                break;
            }
            shift = shift.wrapping_add(LG_H);
        }
        Some(sum)
    }

    /// One compressed signed value (HotSpot's `read_signed_int`: [`decode_sign`] of `read_int`).
    /// Signal-safe.
    pub fn read_signed_int(&mut self) -> Option<i32> {
        self.read_int().map(decode_sign)
    }
}

/// Where a `PcDesc`'s fields are, from VMStructs (`PcDesc` type size, `PcDesc::_pc_offset`,
/// `PcDesc::_scope_decode_offset`). Both fields are 32-bit ints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcDescLayout {
    pub size: usize,
    pub pc_offset: usize,
    pub scope_decode_offset: usize,
}

impl PcDescLayout {
    fn is_sane(&self) -> bool {
        self.size >= 8
            && self.size <= 256
            && self.pc_offset.saturating_add(4) <= self.size
            && self.scope_decode_offset.saturating_add(4) <= self.size
    }
}

/// One `PcDesc`: a pc offset (relative to the nmethod's code begin) and where its innermost
/// scope starts in the scopes data (0: no scope information).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcDesc {
    /// Address of the entry, for callers that want its other fields (`_obj_decode_offset`,
    /// `_flags`).
    pub addr: usize,
    pub pc_offset: i32,
    pub scope_decode_offset: i32,
}

/// Longest `PcDesc` table we believe; anything longer is corrupt data.
const MAX_PC_DESCS: usize = 1 << 26;
/// Binary search steps: enough for any table up to `MAX_PC_DESCS`, and a hard stop.
const MAX_SEARCH_STEPS: u32 = 64;

/// Finds the `PcDesc` with the smallest `pc_offset >= pc_offset` in the table `[begin, end)`,
/// which is sorted by pc offset. This is HotSpot's `find_pc_desc(pc, approximate = true)` and
/// async-profiler's `findScopeOffset`:
/// - for a return address (every frame but the top one) it is the exact entry HotSpot recorded
///   for the call;
/// - for the interrupted top frame it is the next recorded pc, because debug info
///   (`-XX:+DebugNonSafepoints`) records the *end* of the region a scope covers. HotSpot's
///   AsyncGetCallTrace asks for `pc + 1` instead (`pc_desc_near(pc + 1)` in forte.cpp), i.e. the
///   first entry strictly after the pc; pass `pc_offset + 1` to get that.
///
/// The table starts with a sentinel at pc offset -1, which no query matches, and ends with one
/// just past the code whose scope offset is 0 (no scope information). `pc_offset` is
/// `pc.wrapping_sub(code_begin)`: a pc below the code wraps to a huge value and finds nothing,
/// as in HotSpot ("PC is wildly out of range"). `None` also for an empty table, a pc past the
/// last entry, an unreadable entry or an implausible layout. Signal-safe.
pub fn find_pc_desc<M: Memory>(
    mem: &M,
    layout: &PcDescLayout,
    begin: usize,
    end: usize,
    pc_offset: usize,
) -> Option<PcDesc> {
    if !layout.is_sane() || end < begin {
        return None;
    }
    let target = i32::try_from(pc_offset).ok()?;
    let count = end.wrapping_sub(begin) / layout.size;
    if count > MAX_PC_DESCS {
        return None;
    }
    let entry = |i: usize| begin.wrapping_add(i.wrapping_mul(layout.size));
    let pc_at = |i: usize| {
        mem.read_u32(entry(i).wrapping_add(layout.pc_offset))
            .map(|v| v as i32)
    };
    // Invariant: every entry below `lo` has pc < target, every entry at or above `hi` has
    // pc >= target.
    let (mut lo, mut hi) = (0usize, count);
    let mut steps = 0;
    while lo < hi {
        if steps == MAX_SEARCH_STEPS {
            return None;
        }
        steps += 1;
        let mid = lo.wrapping_add(hi.wrapping_sub(lo) / 2);
        if pc_at(mid)? < target {
            lo = mid.wrapping_add(1);
        } else {
            hi = mid;
        }
    }
    if lo >= count {
        return None;
    }
    let addr = entry(lo);
    Some(PcDesc {
        addr,
        pc_offset: pc_at(lo)?,
        scope_decode_offset: mem.read_u32(addr.wrapping_add(layout.scope_decode_offset))? as i32,
    })
}

/// Whether `addr` is the entry that [`find_pc_desc`] would return for `pc_offset` in the
/// sorted table `[begin, end)`: an entry of the table whose pc offset is at least
/// `pc_offset` while its predecessor's is below. HotSpot writes PcDescs with strictly
/// increasing pc offsets, so exactly one entry passes. Three reads instead of a binary
/// search; used to check an address remembered by a [`PcDescCache`]. Signal-safe.
pub fn check_pc_desc<M: Memory>(
    mem: &M,
    layout: &PcDescLayout,
    begin: usize,
    end: usize,
    pc_offset: usize,
    addr: usize,
) -> Option<PcDesc> {
    if !layout.is_sane() || addr < begin || addr >= end {
        return None;
    }
    if !(addr - begin).is_multiple_of(layout.size) || end.wrapping_sub(addr) < layout.size {
        return None;
    }
    let target = i32::try_from(pc_offset).ok()?;
    let pc_at = |a: usize| {
        mem.read_u32(a.wrapping_add(layout.pc_offset))
            .map(|v| v as i32)
    };
    let pc = pc_at(addr)?;
    if pc < target || (addr > begin && pc_at(addr - layout.size)? >= target) {
        return None;
    }
    Some(PcDesc {
        addr,
        pc_offset: pc,
        scope_decode_offset: mem.read_u32(addr.wrapping_add(layout.scope_decode_offset))? as i32,
    })
}

/// Pairs a [`PcDescCache`] holds: 64 KiB, sized like the `Method*` cache for the pcs that
/// deep stacks of a large program return to.
const PC_DESC_SLOTS: usize = 4096;

/// Remembers which PcDesc answered a pc, across walks: a stack samples the same return
/// addresses again and again, and the binary search over an nmethod's PcDescs costs
/// about ten reads where a check costs three (HotSpot keeps a similar cache in each
/// nmethod). Entries are hints, never trusted: [`check_pc_desc`] validates each against
/// the table of the blob found for the pc now, so a freed and reused nmethod, or two
/// handlers writing one slot at once (a torn pair), can only cost a search. Owned by the
/// walker (one per layout). Signal-safe: relaxed atomics, no allocation after `new`.
pub struct PcDescCache {
    pairs: HintCache,
}

impl PcDescCache {
    /// An empty cache (allocates; not signal-safe).
    pub fn new() -> PcDescCache {
        PcDescCache {
            pairs: HintCache::with_slots(PC_DESC_SLOTS),
        }
    }

    /// [`find_pc_desc`] for `pc_offset` in the nmethod whose code starts at
    /// `code_begin`, through the cache. Signal-safe.
    #[link_section = sample_path_section!()]
    pub fn find<M: Memory>(
        &self,
        mem: &M,
        layout: &PcDescLayout,
        nmethod: &NmethodDebugInfo,
        code_begin: usize,
        pc_offset: usize,
    ) -> Option<PcDesc> {
        let (begin, end) = (nmethod.pcs_begin, nmethod.pcs_end);
        let key = code_begin.wrapping_add(pc_offset);
        if let Some(hint) = self.pairs.get(key) {
            if let Some(pd) = check_pc_desc(mem, layout, begin, end, pc_offset, hint) {
                return Some(pd);
            }
        }
        let pd = find_pc_desc(mem, layout, begin, end, pc_offset)?;
        self.pairs.put(key, pd.addr);
        Some(pd)
    }
}

impl Default for PcDescCache {
    fn default() -> Self {
        PcDescCache::new()
    }
}

/// Per-VM facts the scope decoder needs (read once from VMStructs and the JDK version).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScopeFormat {
    pub encoding: Encoding,
    /// VMStructs int constant `InvocationEntryBci` (-1): bcis are stored as `bci - this`.
    pub invocation_entry_bci: i32,
}

/// Where one nmethod's scopes data and metadata array are (docs/hotspot.md 3.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NmethodScopes {
    /// Start of the scopes data; decode offsets are relative to it.
    pub data: usize,
    /// Bytes of scopes data (`usize::MAX` if unknown). Up to JDK 22 the PcDescs follow the
    /// scopes, so `pcs_begin - data` bounds them; on 25 they lie inside the immutable data, so
    /// `immutable_data + _immutable_data_size - data` does.
    pub data_len: usize,
    /// Start of the metadata array (`Metadata*[]`); scope method index `i` names entry `i - 1`.
    pub metadata: usize,
    /// Entries in the metadata array (`usize::MAX` if unknown).
    pub metadata_len: usize,
}

/// The part of a serialized `ScopeDesc` a stack walker needs (HotSpot's `decode_body` goes on
/// to read the locals, expressions and monitors offsets, which a walker never follows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScopeHeader {
    /// Decode offset of the caller's scope; 0 for the outermost scope (the compiled method).
    pub sender_decode_offset: u32,
    /// 1-based index into the metadata array; 0 is a null `Method*`.
    pub method_index: u32,
    /// The bci, already adjusted by `InvocationEntryBci` (so -1 means "method entry").
    pub bci: i32,
}

/// Reads the header of the scope at `decode_offset`. `None` if it is out of the scopes data or
/// unreadable. Signal-safe.
pub fn read_scope<M: Memory>(
    mem: &M,
    format: &ScopeFormat,
    scopes: &NmethodScopes,
    decode_offset: u32,
) -> Option<ScopeHeader> {
    let mut stream = CompressedStream::new(
        mem,
        scopes.data,
        decode_offset as usize,
        scopes.data_len,
        format.encoding,
    );
    let sender_decode_offset = stream.read_int()?;
    let method_index = stream.read_int()?;
    let bci = (stream.read_int()? as i32).wrapping_add(format.invocation_entry_bci);
    Some(ScopeHeader {
        sender_decode_offset,
        method_index,
        bci,
    })
}

/// One Java frame of a compiled frame's inline chain.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScopeFrame {
    /// The `Method*` (an unvalidated lookup key; 0 if the scope named no method).
    pub method: usize,
    pub bci: i32,
}

/// Why decoding stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChainEnd {
    /// Reached the outermost scope (the compiled method itself).
    Complete,
    /// The output array (or [`MAX_INLINE_DEPTH`]) filled up first; the frames written are the
    /// innermost ones.
    Truncated,
    /// The decode offset was 0 (`serialized_null`): no scope information. HotSpot reports the
    /// nmethod's own `Method*` with an unknown bci.
    NoScope,
    /// No `PcDesc` covers the pc (only from [`decode_at_pc`]).
    NoPcDesc,
    /// A read faulted or left the scopes data or the metadata array, or a sender offset did not
    /// move towards the outermost scope (HotSpot always writes a caller's scope before its
    /// callees', so a sender lies at a smaller offset). The frames written so far are kept.
    Invalid,
}

/// Result of decoding an inline chain: `count` frames were written, innermost first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScopeChain {
    pub count: usize,
    pub end: ChainEnd,
}

/// Deepest inline chain decoded whatever the output size (HotSpot's inlining depth limits are
/// far lower); a guard against corrupt data.
pub const MAX_INLINE_DEPTH: usize = 256;

/// Decodes the inline chain starting at the scope `decode_offset` (a `PcDesc`'s
/// `scope_decode_offset`) into `out`, innermost (callee) first, outermost (the compiled method)
/// last: `Method* = metadata[method_index - 1]`, bci adjusted by `InvocationEntryBci`.
/// Signal-safe.
#[link_section = sample_path_section!()]
pub fn decode_scopes<M: Memory>(
    mem: &M,
    format: &ScopeFormat,
    scopes: &NmethodScopes,
    decode_offset: i32,
    out: &mut [ScopeFrame],
) -> ScopeChain {
    let mut count = 0;
    let done = |count, end| ScopeChain { count, end };
    if decode_offset == 0 {
        return done(0, ChainEnd::NoScope);
    }
    let Ok(mut offset) = u32::try_from(decode_offset) else {
        return done(0, ChainEnd::Invalid);
    };
    loop {
        if count >= MAX_INLINE_DEPTH {
            return done(count, ChainEnd::Truncated);
        }
        let Some(slot) = out.get_mut(count) else {
            return done(count, ChainEnd::Truncated);
        };
        let Some(scope) = read_scope(mem, format, scopes, offset) else {
            return done(count, ChainEnd::Invalid);
        };
        let method = match scope.method_index {
            0 => 0,
            index if index as usize > scopes.metadata_len => {
                return done(count, ChainEnd::Invalid);
            }
            index => {
                let entry = (index as usize)
                    .wrapping_sub(1)
                    .wrapping_mul(core::mem::size_of::<usize>());
                match mem.read_usize(scopes.metadata.wrapping_add(entry)) {
                    Some(method) => method,
                    None => return done(count, ChainEnd::Invalid),
                }
            }
        };
        *slot = ScopeFrame {
            method,
            bci: scope.bci,
        };
        count = count.wrapping_add(1);
        match scope.sender_decode_offset {
            0 => return done(count, ChainEnd::Complete),
            sender if sender < offset => offset = sender,
            _ => return done(count, ChainEnd::Invalid),
        }
    }
}

/// Everything about one nmethod's debug info, for [`decode_at_pc`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NmethodDebugInfo {
    pub pcs_begin: usize,
    pub pcs_end: usize,
    pub scopes: NmethodScopes,
}

/// [`find_pc_desc`] then [`decode_scopes`]: the inline chain for `pc_offset` (see
/// [`find_pc_desc`] for which entry a pc maps to). Signal-safe.
pub fn decode_at_pc<M: Memory>(
    mem: &M,
    layout: &PcDescLayout,
    format: &ScopeFormat,
    nmethod: &NmethodDebugInfo,
    pc_offset: usize,
    out: &mut [ScopeFrame],
) -> ScopeChain {
    match find_pc_desc(mem, layout, nmethod.pcs_begin, nmethod.pcs_end, pc_offset) {
        Some(pd) => decode_scopes(mem, format, &nmethod.scopes, pd.scope_decode_offset, out),
        None => ScopeChain {
            count: 0,
            end: ChainEnd::NoPcDesc,
        },
    }
}

/// Parsing of the recorded fixtures in `fixtures/debuginfo/` (shared with `linetable.rs`).
#[cfg(test)]
#[path = "debuginfo_fixture_tests.rs"]
pub(crate) mod fixture;

#[cfg(test)]
#[path = "debuginfo_tests.rs"]
mod tests;
