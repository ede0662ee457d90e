//! Pure decoders for a compiled method's (nmethod's) debug information: HotSpot's compressed
//! stream, the `PcDesc` table and the chain of inlined `ScopeDesc`s (facts.md 3.4-3.6).
//!
//! The signal-handler walker uses them to turn a pc inside compiled code into the inlined Java
//! frames (`Method*`, bci) it stands for; dump-time code uses the same stream for line tables
//! (`linetable.rs`). Every read of VM memory goes through [`Memory`], which the walker backs with
//! crash-protected loads and tests back with byte arrays ([`Bytes`]). Nothing here allocates
//! (except [`PcDescCache::new`]), locks, panics or calls into the JVM; every loop is bounded.
//!
//! Where the inputs come from (the caller reads them from VMStructs, facts.md 3.4):
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
}

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
        let byte = self.mem.read_u8(self.base.wrapping_add(self.pos))?;
        self.pos = self.pos.wrapping_add(1);
        Some(byte)
    }

    /// One compressed unsigned value (HotSpot's `read_int`, whose 32 bits callers use as a
    /// `jint` or `juint`). Reads at most five bytes. Signal-safe.
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
            pairs: HintCache::new(),
        }
    }

    /// [`find_pc_desc`] for `pc_offset` in the nmethod whose code starts at
    /// `code_begin`, through the cache. Signal-safe.
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

/// Where one nmethod's scopes data and metadata array are (facts.md 3.4).
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
pub(crate) mod fixture {
    use std::collections::HashMap;

    /// One recorded JDK: see `fixtures/debuginfo/README.md` for the format.
    pub struct Recording {
        pub name: &'static str,
        pub feature_version: u32,
        pub invocation_entry_bci: i32,
        pub pc_desc_size: usize,
        pub pc_offset_field: usize,
        pub scope_field: usize,
        pub code_size: usize,
        pub pcs: Region,
        pub scopes: Region,
        pub metadata: Vec<(usize, String)>,
        pub metadata_addr: usize,
        pub truth: Vec<PcTruth>,
        pub line_tables: Vec<LineTableTruth>,
    }

    pub struct Region {
        pub addr: usize,
        pub bytes: Vec<u8>,
    }

    pub struct PcTruth {
        pub pc_offset: usize,
        /// (Method*, bci, JVMTI name), innermost first.
        pub frames: Vec<(usize, i32, String)>,
    }

    pub struct LineTableTruth {
        pub method: String,
        pub code_size: i32,
        pub table: Region,
        /// (start bci, line) as JVMTI GetLineNumberTable returned them.
        pub jvmti: Vec<(i32, i32)>,
    }

    pub const ALL: [(&str, u32, &str); 4] = [
        ("jdk11", 11, include_str!("fixtures/debuginfo/jdk11.txt")),
        ("jdk17", 17, include_str!("fixtures/debuginfo/jdk17.txt")),
        ("jdk21", 21, include_str!("fixtures/debuginfo/jdk21.txt")),
        ("jdk25", 25, include_str!("fixtures/debuginfo/jdk25.txt")),
    ];

    pub fn all() -> Vec<Recording> {
        ALL.iter()
            .map(|(name, version, text)| parse(name, *version, text))
            .collect()
    }

    fn hex(s: &str) -> usize {
        usize::from_str_radix(s.trim_start_matches("0x"), 16).expect("hex")
    }

    fn kv<'a>(words: &[&'a str]) -> HashMap<&'a str, &'a str> {
        words.iter().filter_map(|w| w.split_once('=')).collect()
    }

    fn region(lines: &mut std::iter::Peekable<std::str::Lines>, header: &[&str]) -> Region {
        let kv = kv(header);
        let len: usize = kv["len"].parse().unwrap();
        let mut bytes = Vec::new();
        while bytes.len() < len {
            let line = lines.next().expect("hex line");
            for i in (0..line.len()).step_by(2) {
                bytes.push(u8::from_str_radix(&line[i..i + 2], 16).unwrap());
            }
        }
        assert_eq!(bytes.len(), len);
        Region {
            addr: hex(kv["addr"]),
            bytes,
        }
    }

    fn parse(name: &'static str, feature_version: u32, text: &str) -> Recording {
        let mut r = Recording {
            name,
            feature_version,
            invocation_entry_bci: 0,
            pc_desc_size: 0,
            pc_offset_field: 0,
            scope_field: 0,
            code_size: 0,
            pcs: Region {
                addr: 0,
                bytes: vec![],
            },
            scopes: Region {
                addr: 0,
                bytes: vec![],
            },
            metadata: vec![],
            metadata_addr: 0,
            truth: vec![],
            line_tables: vec![],
        };
        let mut lines = text.lines().peekable();
        while let Some(line) = lines.next() {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.first().copied() {
                Some("invocation_entry_bci") => r.invocation_entry_bci = words[1].parse().unwrap(),
                Some("pcdesc") => {
                    let kv = kv(&words);
                    r.pc_desc_size = kv["size"].parse().unwrap();
                    r.pc_offset_field = kv["pc_offset"].parse().unwrap();
                    r.scope_field = kv["scope_decode_offset"].parse().unwrap();
                }
                Some("nmethod") => r.code_size = kv(&words)["code_size"].parse().unwrap(),
                Some("pcs") => r.pcs = region(&mut lines, &words),
                Some("scopes") => r.scopes = region(&mut lines, &words),
                Some("metadata") => r.metadata_addr = hex(kv(&words)["addr"]),
                Some("md") => r.metadata.push((hex(words[2]), words[3].to_string())),
                Some("truth") => {
                    let kv = kv(&words);
                    let frames = words[3..]
                        .iter()
                        .map(|f| {
                            let (method, rest) = f.split_once('@').unwrap();
                            let (bci, name) = rest.split_once(':').unwrap();
                            (hex(method), bci.parse().unwrap(), name.to_string())
                        })
                        .collect::<Vec<_>>();
                    assert_eq!(frames.len(), kv["frames"].parse::<usize>().unwrap());
                    r.truth.push(PcTruth {
                        pc_offset: kv["pc"].parse().unwrap(),
                        frames,
                    });
                }
                Some("linetable") => {
                    let method = words[1].to_string();
                    let code_size = kv(&words)["code_size"].parse().unwrap();
                    let header = lines.next().unwrap();
                    let header: Vec<&str> = header.split_whitespace().collect();
                    assert_eq!(header[0], "bytes");
                    let table = region(&mut lines, &header);
                    let jvmti_line = lines.next().unwrap();
                    let words: Vec<&str> = jvmti_line.split_whitespace().collect();
                    assert_eq!(words[0], "jvmti");
                    let jvmti = words[2..]
                        .iter()
                        .map(|p| {
                            let (b, l) = p.split_once(':').unwrap();
                            (b.parse().unwrap(), l.parse().unwrap())
                        })
                        .collect::<Vec<_>>();
                    assert_eq!(jvmti.len(), words[1].parse::<usize>().unwrap());
                    r.line_tables.push(LineTableTruth {
                        method,
                        code_size,
                        table,
                        jvmti,
                    });
                }
                _ => {}
            }
        }
        r
    }

    /// The metadata array as the bytes VM memory held.
    pub fn metadata_bytes(r: &Recording) -> Vec<u8> {
        r.metadata
            .iter()
            .flat_map(|(m, _)| m.to_le_bytes())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// HotSpot's writer (`UNSIGNED5::write_uint` / the pre-20 `write_int_mb`), for round trips.
    pub(crate) fn encode(value: u32, encoding: Encoding, out: &mut Vec<u8>) {
        let x = encoding.excluded();
        let low = 256 - x - 64; // L: 192 (classic) or 191 (zero-free)
        let mut sum = value;
        for i in 0..5 {
            if sum < low || i == 4 {
                out.push((x + sum) as u8);
                return;
            }
            sum -= low;
            out.push((x + low + (sum % 64)) as u8);
            sum >>= 6;
        }
    }

    pub(crate) fn encode_sign(value: i32) -> u32 {
        ((value << 1) ^ (value >> 31)) as u32
    }

    fn read_all(bytes: &[u8], encoding: Encoding) -> Vec<u32> {
        let mem = Bytes {
            base: 0x1000,
            data: bytes,
        };
        let mut s = CompressedStream::new(&mem, 0x1000, 0, bytes.len(), encoding);
        let mut values = vec![];
        while s.position() < bytes.len() {
            values.push(s.read_int().expect("value"));
        }
        values
    }

    #[test]
    fn classic_encoding_reads_hand_computed_bytes() {
        let cases: &[(u32, &[u8])] = &[
            (0, &[0x00]),
            (1, &[0x01]),
            (191, &[0xbf]),
            (192, &[0xc0, 0x00]),
            (193, &[0xc1, 0x00]),
            (255, &[0xff, 0x00]),
            (256, &[0xc0, 0x01]),
            (1252, &[0xe4, 0x10]), // HashMap.putVal's first line (626) zig-zagged, from JDK 17
            (12479, &[0xff, 0xbf]),
            (12480, &[0xc0, 0xc0, 0x00]),
            (u32::MAX, &[0xff, 0xfc, 0xfc, 0xfc, 0xfc]),
        ];
        for &(value, bytes) in cases {
            assert_eq!(read_all(bytes, Encoding::Classic), vec![value], "{value}");
            let mut written = vec![];
            encode(value, Encoding::Classic, &mut written);
            assert_eq!(written, bytes, "{value}");
        }
    }

    #[test]
    fn zero_free_encoding_reads_hand_computed_bytes() {
        let cases: &[(u32, &[u8])] = &[
            (0, &[0x01]),
            (1, &[0x02]),
            (190, &[0xbf]),
            (191, &[0xc0, 0x01]),
            (192, &[0xc1, 0x01]),
            (255, &[0xc0, 0x02]),
            (1270, &[0xf7, 0x11]), // HashMap.putVal's first line (635) zig-zagged, from JDK 25
            (12_479, &[0xc0, 0xc1, 0x01]),
            (u32::MAX, &[0xc0, 0xfe, 0xfd, 0xfd, 0xfd]),
        ];
        for &(value, bytes) in cases {
            assert_eq!(read_all(bytes, Encoding::ZeroFree), vec![value], "{value}");
            let mut written = vec![];
            encode(value, Encoding::ZeroFree, &mut written);
            assert_eq!(written, bytes, "{value}");
        }
    }

    #[test]
    fn both_encodings_round_trip_boundaries_and_large_values() {
        let mut values = vec![0, 1, 63, 64, 190, 191, 192, 193, 255, 256, 4095, 4096];
        values.extend([12_478, 12_479, 12_480, 12_481, 798_911, 798_912, 798_913]);
        values.extend([
            1 << 24,
            51_130_559,
            51_130_560,
            i32::MAX as u32,
            u32::MAX - 1,
        ]);
        values.push(u32::MAX);
        values.extend((0..2000).map(|i: u32| i.wrapping_mul(2_654_435_761)));
        for encoding in [Encoding::Classic, Encoding::ZeroFree] {
            let mut bytes = vec![];
            for &v in &values {
                encode(v, encoding, &mut bytes);
            }
            assert_eq!(read_all(&bytes, encoding), values, "{encoding:?}");
            if encoding == Encoding::ZeroFree {
                assert!(
                    !bytes.contains(&0),
                    "the JDK 20+ encoding never writes a zero byte"
                );
            }
        }
    }

    #[test]
    fn encodings_differ_only_by_one_per_byte() {
        // The same value in both encodings has the same length; JDK 20+ bytes are the classic
        // digits plus one, except that its low-byte range is one smaller.
        for v in [0u32, 100, 190] {
            let (mut c, mut z) = (vec![], vec![]);
            encode(v, Encoding::Classic, &mut c);
            encode(v, Encoding::ZeroFree, &mut z);
            assert_eq!(z, c.iter().map(|b| b + 1).collect::<Vec<_>>());
        }
        // Reading JDK 17 bytes as JDK 25 bytes gives the wrong numbers: the caller must pick.
        assert_eq!(read_all(&[0x00], Encoding::ZeroFree), vec![u32::MAX]);
    }

    #[test]
    fn signed_values_use_hotspots_zig_zag() {
        let cases = [
            (0, 0u32),
            (-1, 1),
            (1, 2),
            (-2, 3),
            (2, 4),
            (-96, 191),
            (i32::MAX, 0xffff_fffe),
            (i32::MIN, u32::MAX),
        ];
        for (signed, unsigned) in cases {
            assert_eq!(encode_sign(signed), unsigned);
            assert_eq!(decode_sign(unsigned), signed);
            for encoding in [Encoding::Classic, Encoding::ZeroFree] {
                let mut bytes = vec![];
                encode(unsigned, encoding, &mut bytes);
                let mem = Bytes {
                    base: 64,
                    data: &bytes,
                };
                let mut s = CompressedStream::new(&mem, 64, 0, usize::MAX, encoding);
                assert_eq!(s.read_signed_int(), Some(signed));
            }
        }
    }

    #[test]
    fn fifth_byte_ends_a_value_even_when_high() {
        let bytes = [0xff, 0xff, 0xff, 0xff, 0xff, 0x07];
        let mem = Bytes {
            base: 0,
            data: &bytes,
        };
        let mut s = CompressedStream::new(&mem, 0, 0, usize::MAX, Encoding::Classic);
        s.read_int().unwrap();
        assert_eq!(s.position(), 5);
        assert_eq!(s.read_int(), Some(7));
    }

    #[test]
    fn stream_stops_at_its_limit_and_at_unreadable_memory() {
        let bytes = [0xc0, 0xc0, 0x05];
        let mem = Bytes {
            base: 0,
            data: &bytes,
        };
        // A value cut by the limit is no value.
        let mut s = CompressedStream::new(&mem, 0, 0, 2, Encoding::Classic);
        assert_eq!(s.read_int(), None);
        // Running off the readable memory likewise.
        let mut s = CompressedStream::new(&mem, 0, 1, usize::MAX, Encoding::Classic);
        assert_eq!(s.read_int(), Some(192 + (5 << 6)));
        assert_eq!(s.read_int(), None);
        assert_eq!(s.read_byte(), None);
        // Addresses near the top of the address space wrap instead of panicking.
        let mut s = CompressedStream::new(&mem, usize::MAX, 5, usize::MAX, Encoding::Classic);
        assert_eq!(s.read_int(), None);
    }

    const LAYOUT: PcDescLayout = PcDescLayout {
        size: 16,
        pc_offset: 0,
        scope_decode_offset: 4,
    };

    /// A PcDesc table laid out as HotSpot does: sentinel at -1, entries, sentinel past the code.
    fn pcs(entries: &[(i32, i32)]) -> Vec<u8> {
        let mut v = vec![];
        for &(pc, scope) in entries {
            for word in [pc, scope, 0, 0] {
                v.extend(word.to_le_bytes());
            }
        }
        v
    }

    fn find(bytes: &[u8], pc_offset: usize) -> Option<(i32, i32)> {
        let mem = Bytes {
            base: 0x4000,
            data: bytes,
        };
        find_pc_desc(&mem, &LAYOUT, 0x4000, 0x4000 + bytes.len(), pc_offset)
            .map(|pd| (pd.pc_offset, pd.scope_decode_offset))
    }

    const TABLE: [(i32, i32); 6] = [(-1, 0), (12, 1), (18, 19), (27, 31), (40, 37), (249, 0)];

    #[test]
    fn pc_desc_exact_hit_is_that_entry() {
        let bytes = pcs(&TABLE);
        assert_eq!(find(&bytes, 12), Some((12, 1)));
        assert_eq!(find(&bytes, 18), Some((18, 19)));
        assert_eq!(find(&bytes, 40), Some((40, 37)));
        let mem = Bytes {
            base: 0x4000,
            data: &bytes,
        };
        let pd = find_pc_desc(&mem, &LAYOUT, 0x4000, 0x4000 + bytes.len(), 27).unwrap();
        assert_eq!(pd.addr, 0x4000 + 3 * 16);
    }

    #[test]
    fn pc_desc_between_entries_is_the_next_entry() {
        let bytes = pcs(&TABLE);
        assert_eq!(find(&bytes, 13), Some((18, 19)));
        assert_eq!(find(&bytes, 26), Some((27, 31)));
        // AsyncGetCallTrace's rule for the top frame: ask for pc + 1.
        assert_eq!(find(&bytes, 18 + 1), Some((27, 31)));
    }

    #[test]
    fn pc_desc_before_first_entry_skips_the_leading_sentinel() {
        let bytes = pcs(&TABLE);
        assert_eq!(find(&bytes, 0), Some((12, 1)));
        assert_eq!(find(&bytes, 11), Some((12, 1)));
        // A pc below code begin wraps to a huge offset: nothing, as in HotSpot.
        assert_eq!(find(&bytes, 5usize.wrapping_sub(9)), None);
        assert_eq!(find(&bytes, i32::MAX as usize + 1), None);
    }

    #[test]
    fn pc_desc_after_last_entry_is_the_final_sentinel_or_nothing() {
        let bytes = pcs(&TABLE);
        // Between the last real entry and the end of the code: the sentinel, without scope.
        assert_eq!(find(&bytes, 41), Some((249, 0)));
        assert_eq!(find(&bytes, 249), Some((249, 0)));
        assert_eq!(find(&bytes, 250), None);
        // A table without a final sentinel has nothing past its last entry.
        let bytes = pcs(&TABLE[..5]);
        assert_eq!(find(&bytes, 41), None);
    }

    #[test]
    fn pc_desc_in_empty_or_malformed_tables_is_none() {
        assert_eq!(find(&[], 0), None);
        let bytes = pcs(&TABLE);
        let mem = Bytes {
            base: 0x4000,
            data: &bytes,
        };
        // end before begin
        assert_eq!(find_pc_desc(&mem, &LAYOUT, 0x4010, 0x4000, 12), None);
        // implausible layouts
        for layout in [
            PcDescLayout { size: 0, ..LAYOUT },
            PcDescLayout {
                scope_decode_offset: 14,
                ..LAYOUT
            },
        ] {
            assert_eq!(
                find_pc_desc(&mem, &layout, 0x4000, 0x4000 + bytes.len(), 12),
                None
            );
        }
        // a huge table is corrupt, not searched
        assert_eq!(find_pc_desc(&mem, &LAYOUT, 0, usize::MAX, 12), None);
        // unreadable entries
        assert_eq!(
            find_pc_desc(&mem, &LAYOUT, 0x4000, 0x4000 + 2 * bytes.len(), 300),
            None
        );
        // a trailing partial entry (here the cut final sentinel) is ignored
        let cut = 0x4000 + bytes.len() - 4;
        assert_eq!(
            find_pc_desc(&mem, &LAYOUT, 0x4000, cut, 40),
            Some(PcDesc {
                addr: 0x4000 + 4 * 16,
                pc_offset: 40,
                scope_decode_offset: 37
            })
        );
        assert_eq!(find_pc_desc(&mem, &LAYOUT, 0x4000, cut, 41), None);
    }

    #[test]
    fn pc_desc_field_offsets_come_from_the_layout() {
        // A 12-byte entry with the scope offset first and the pc second.
        let layout = PcDescLayout {
            size: 12,
            pc_offset: 4,
            scope_decode_offset: 0,
        };
        let mut bytes = vec![];
        for (pc, scope) in [(-1i32, 0i32), (8, 3), (20, 9)] {
            bytes.extend(scope.to_le_bytes());
            bytes.extend(pc.to_le_bytes());
            bytes.extend(0i32.to_le_bytes());
        }
        let mem = Bytes {
            base: 0,
            data: &bytes,
        };
        let pd = find_pc_desc(&mem, &layout, 0, bytes.len(), 9).unwrap();
        assert_eq!((pd.pc_offset, pd.scope_decode_offset, pd.addr), (20, 9, 24));
    }

    /// Bytes that count their 32-bit reads (PcDesc entries are read as u32s).
    struct Counting<'a>(Bytes<'a>, core::cell::Cell<u32>);
    impl Memory for Counting<'_> {
        fn read_u8(&self, a: usize) -> Option<u8> {
            self.0.read_u8(a)
        }
        fn read_u32(&self, a: usize) -> Option<u32> {
            self.1.set(self.1.get() + 1);
            self.0.read_u32(a)
        }
        fn read_usize(&self, a: usize) -> Option<usize> {
            self.0.read_usize(a)
        }
    }

    #[test]
    fn pc_desc_search_is_logarithmic_over_large_tables() {
        let entries: Vec<(i32, i32)> = (0..100_000).map(|i| (i * 4, i + 1)).collect();
        let bytes = pcs(&entries);
        let mem = Counting(
            Bytes {
                base: 0,
                data: &bytes,
            },
            Default::default(),
        );
        for target in [0usize, 1, 4, 123_457, 399_996] {
            mem.1.set(0);
            let pd = find_pc_desc(&mem, &LAYOUT, 0, bytes.len(), target).unwrap();
            assert_eq!(pd.pc_offset as usize, target.div_ceil(4) * 4);
            assert!(mem.1.get() <= 20, "{} reads", mem.1.get());
        }
    }

    #[test]
    fn a_checked_pc_desc_is_the_one_the_search_finds() {
        let bytes = pcs(&TABLE);
        let base = 0x4000;
        let mem = Bytes { base, data: &bytes };
        let end = base + bytes.len();
        for target in 0..260usize {
            let found = find_pc_desc(&mem, &LAYOUT, base, end, target);
            for i in 0..TABLE.len() + 1 {
                let addr = base + i * LAYOUT.size;
                let checked = check_pc_desc(&mem, &LAYOUT, base, end, target, addr);
                if found.is_some_and(|f| f.addr == addr) {
                    assert_eq!(checked, found, "target {target}");
                } else {
                    assert_eq!(checked, None, "target {target}, entry {i}");
                }
            }
            // Misaligned, outside and below-the-table addresses are refused.
            for addr in [base + 3, base - LAYOUT.size, end, 0] {
                assert_eq!(check_pc_desc(&mem, &LAYOUT, base, end, target, addr), None);
            }
        }
    }

    #[test]
    fn the_pc_desc_cache_is_a_validated_hint() {
        let entries: Vec<(i32, i32)> = (0..1000).map(|i| (i * 4, i + 1)).collect();
        let (a, b) = (pcs(&entries), pcs(&entries[..500]));
        let info = |bytes: &[u8]| NmethodDebugInfo {
            pcs_begin: 0x10000,
            pcs_end: 0x10000 + bytes.len(),
            scopes: NmethodScopes {
                data: 0,
                data_len: 0,
                metadata: 0,
                metadata_len: 0,
            },
        };
        let cache = PcDescCache::new();
        let code = 0x7000_0000;
        let mem = Counting(
            Bytes {
                base: 0x10000,
                data: &a,
            },
            Default::default(),
        );
        let first = cache.find(&mem, &LAYOUT, &info(&a), code, 2001).unwrap();
        assert_eq!(first.pc_offset, 2004);
        let searched = mem.1.replace(0);
        let again = cache.find(&mem, &LAYOUT, &info(&a), code, 2001).unwrap();
        assert_eq!(again, first);
        assert!(
            mem.1.get() <= 3 && searched > 3,
            "{searched} then {}",
            mem.1.get()
        );
        // Another nmethod at the same code address (the old one was freed): its shorter
        // table does not hold the remembered entry, and a fresh search answers.
        let mem = Bytes {
            base: 0x10000,
            data: &b,
        };
        let fresh = find_pc_desc(&mem, &LAYOUT, 0x10000, 0x10000 + b.len(), 2001);
        assert_eq!(fresh, None);
        assert_eq!(cache.find(&mem, &LAYOUT, &info(&b), code, 2001), fresh);
        assert_eq!(
            cache.find(&mem, &LAYOUT, &info(&b), code, 1001),
            find_pc_desc(&mem, &LAYOUT, 0x10000, 0x10000 + b.len(), 1001)
        );
        // Same table, other pc offsets at the same entry address: refused, searched.
        let shifted: Vec<(i32, i32)> = entries.iter().map(|&(pc, s)| (pc + 2, s)).collect();
        let c = pcs(&shifted);
        let mem = Bytes {
            base: 0x10000,
            data: &c,
        };
        let got = cache.find(&mem, &LAYOUT, &info(&c), code, 2001).unwrap();
        assert_eq!((got.pc_offset, got.addr), (2002, first.addr - LAYOUT.size));
        let got = cache.find(&mem, &LAYOUT, &info(&c), code, 2003).unwrap();
        assert_eq!(got.pc_offset, 2006);
    }

    const FORMAT_17: ScopeFormat = ScopeFormat {
        encoding: Encoding::Classic,
        invocation_entry_bci: -1,
    };

    /// Serializes scopes as HotSpot's DebugInformationRecorder does: a reserved first byte (so
    /// no scope sits at offset 0), then each scope after its caller. `chain` is outermost
    /// first: (method index, bci). Returns the bytes and each scope's decode offset.
    fn serialize(chain: &[(u32, i32)], encoding: Encoding) -> (Vec<u8>, Vec<u32>) {
        let mut bytes = vec![0xff];
        let mut offsets = vec![];
        let mut sender = 0;
        for &(method, bci) in chain {
            let offset = bytes.len() as u32;
            // sender, method, bci + 1, locals, expressions, monitors
            for v in [sender, method, (bci + 1) as u32, 0, 0, 0] {
                encode(v, encoding, &mut bytes);
            }
            offsets.push(offset);
            sender = offset;
        }
        (bytes, offsets)
    }

    const METHODS: [usize; 4] = [0x7000_0100, 0x7000_0200, 0x7000_0300, 0x7000_0400];

    fn with_scopes<R>(scopes: &[u8], f: impl FnOnce(&Bytes, &NmethodScopes) -> R) -> R {
        // scopes at 0x1000, metadata right after, in one buffer
        let mut mem_bytes = scopes.to_vec();
        mem_bytes.resize(256, 0);
        for m in METHODS {
            mem_bytes.extend(m.to_le_bytes());
        }
        let mem = Bytes {
            base: 0x1000,
            data: &mem_bytes,
        };
        let info = NmethodScopes {
            data: 0x1000,
            data_len: scopes.len(),
            metadata: 0x1000 + 256,
            metadata_len: METHODS.len(),
        };
        f(&mem, &info)
    }

    #[test]
    fn three_level_inline_chain_decodes_callee_first() {
        // outer@7 inlines middle@1 which inlines inner@6; large bcis take several bytes.
        for encoding in [Encoding::Classic, Encoding::ZeroFree] {
            for chain in [[(1, 7), (2, 1), (3, 6)], [(1, 300), (2, 20_000), (3, -1)]] {
                let (bytes, offsets) = serialize(&chain, encoding);
                let format = ScopeFormat {
                    encoding,
                    invocation_entry_bci: -1,
                };
                with_scopes(&bytes, |mem, info| {
                    let mut out = [ScopeFrame::default(); 8];
                    let r = decode_scopes(mem, &format, info, offsets[2] as i32, &mut out);
                    assert_eq!(
                        r,
                        ScopeChain {
                            count: 3,
                            end: ChainEnd::Complete
                        }
                    );
                    let expect: Vec<ScopeFrame> = chain
                        .iter()
                        .rev()
                        .map(|&(m, bci)| ScopeFrame {
                            method: METHODS[m as usize - 1],
                            bci,
                        })
                        .collect();
                    assert_eq!(&out[..3], &expect[..]);
                    // starting at the middle scope gives its two-frame chain
                    let r = decode_scopes(mem, &format, info, offsets[1] as i32, &mut out);
                    assert_eq!((r.count, r.end), (2, ChainEnd::Complete));
                    assert_eq!(out[0].method, METHODS[1]);
                });
            }
        }
    }

    #[test]
    fn scope_header_holds_sender_method_index_and_adjusted_bci() {
        let (bytes, offsets) = serialize(&[(4, -1), (2, 35)], Encoding::Classic);
        with_scopes(&bytes, |mem, info| {
            let inner = read_scope(mem, &FORMAT_17, info, offsets[1]).unwrap();
            assert_eq!(
                inner,
                ScopeHeader {
                    sender_decode_offset: offsets[0],
                    method_index: 2,
                    bci: 35
                }
            );
            let outer = read_scope(mem, &FORMAT_17, info, offsets[0]).unwrap();
            assert_eq!((outer.sender_decode_offset, outer.bci), (0, -1));
        });
    }

    #[test]
    fn serialized_null_scope_offset_means_no_scope() {
        with_scopes(&[0xff], |mem, info| {
            let mut out = [ScopeFrame::default(); 4];
            let r = decode_scopes(mem, &FORMAT_17, info, 0, &mut out);
            assert_eq!(
                r,
                ScopeChain {
                    count: 0,
                    end: ChainEnd::NoScope
                }
            );
        });
    }

    #[test]
    fn small_output_keeps_the_innermost_frames() {
        let (bytes, offsets) = serialize(&[(1, 1), (2, 2), (3, 3)], Encoding::Classic);
        with_scopes(&bytes, |mem, info| {
            let mut out = [ScopeFrame::default(); 2];
            let r = decode_scopes(mem, &FORMAT_17, info, offsets[2] as i32, &mut out);
            assert_eq!(
                r,
                ScopeChain {
                    count: 2,
                    end: ChainEnd::Truncated
                }
            );
            assert_eq!(
                out[0],
                ScopeFrame {
                    method: METHODS[2],
                    bci: 3
                }
            );
            assert_eq!(
                out[1],
                ScopeFrame {
                    method: METHODS[1],
                    bci: 2
                }
            );
            let r = decode_scopes(mem, &FORMAT_17, info, offsets[2] as i32, &mut []);
            assert_eq!(
                r,
                ScopeChain {
                    count: 0,
                    end: ChainEnd::Truncated
                }
            );
        });
    }

    #[test]
    fn cyclic_or_forward_sender_offsets_are_invalid() {
        // Scope at 1 names itself as sender; scope at 5 names a later scope.
        let mut bytes = vec![0xff];
        for v in [1, 1, 1, 0, 0, 0] {
            encode(v, Encoding::Classic, &mut bytes);
        }
        let forward = bytes.len();
        for v in [20, 2, 1, 0, 0, 0] {
            encode(v, Encoding::Classic, &mut bytes);
        }
        with_scopes(&bytes, |mem, info| {
            let mut out = [ScopeFrame::default(); 300];
            let r = decode_scopes(mem, &FORMAT_17, info, 1, &mut out);
            assert_eq!(
                r,
                ScopeChain {
                    count: 1,
                    end: ChainEnd::Invalid
                }
            );
            let r = decode_scopes(mem, &FORMAT_17, info, forward as i32, &mut out);
            assert_eq!(
                r,
                ScopeChain {
                    count: 1,
                    end: ChainEnd::Invalid
                }
            );
        });
    }

    #[test]
    fn bad_offsets_and_method_indexes_are_invalid() {
        let (bytes, offsets) = serialize(&[(1, 0), (9, 4)], Encoding::Classic);
        with_scopes(&bytes, |mem, info| {
            let mut out = [ScopeFrame::default(); 4];
            // method index 9 > 4 metadata entries
            let r = decode_scopes(mem, &FORMAT_17, info, offsets[1] as i32, &mut out);
            assert_eq!(
                r,
                ScopeChain {
                    count: 0,
                    end: ChainEnd::Invalid
                }
            );
            // offsets outside the scopes data, or negative
            for offset in [bytes.len() as i32, 10_000, -3] {
                let r = decode_scopes(mem, &FORMAT_17, info, offset, &mut out);
                assert_eq!(
                    r,
                    ScopeChain {
                        count: 0,
                        end: ChainEnd::Invalid
                    }
                );
            }
            // unreadable metadata
            let far = NmethodScopes {
                metadata: 0x10_0000,
                ..*info
            };
            let r = decode_scopes(mem, &FORMAT_17, &far, offsets[0] as i32, &mut out);
            assert_eq!(
                r,
                ScopeChain {
                    count: 0,
                    end: ChainEnd::Invalid
                }
            );
        });
    }

    #[test]
    fn method_index_zero_is_a_null_method() {
        let (bytes, offsets) = serialize(&[(0, 5)], Encoding::ZeroFree);
        with_scopes(&bytes, |mem, info| {
            let format = ScopeFormat {
                encoding: Encoding::ZeroFree,
                invocation_entry_bci: -1,
            };
            let mut out = [ScopeFrame::default(); 4];
            let r = decode_scopes(mem, &format, info, offsets[0] as i32, &mut out);
            assert_eq!(
                r,
                ScopeChain {
                    count: 1,
                    end: ChainEnd::Complete
                }
            );
            assert_eq!(out[0], ScopeFrame { method: 0, bci: 5 });
        });
    }

    #[test]
    fn deep_chains_stop_at_the_depth_guard() {
        let chain: Vec<(u32, i32)> = (0..300).map(|i| (1 + i % 4, i as i32)).collect();
        let (bytes, offsets) = serialize(&chain, Encoding::Classic);
        let mut mem_bytes = bytes.clone();
        let metadata = mem_bytes.len();
        for m in METHODS {
            mem_bytes.extend(m.to_le_bytes());
        }
        let mem = Bytes {
            base: 0,
            data: &mem_bytes,
        };
        let info = NmethodScopes {
            data: 0,
            data_len: bytes.len(),
            metadata,
            metadata_len: 4,
        };
        let mut out = vec![ScopeFrame::default(); 400];
        let r = decode_scopes(
            &mem,
            &FORMAT_17,
            &info,
            *offsets.last().unwrap() as i32,
            &mut out,
        );
        assert_eq!(
            r,
            ScopeChain {
                count: MAX_INLINE_DEPTH,
                end: ChainEnd::Truncated
            }
        );
        assert_eq!(out[0].bci, 299);
    }

    // ---- recorded real bytes (fixtures/debuginfo, see its README) ----

    use super::fixture::{self, Recording};

    struct Recorded<'a> {
        r: &'a Recording,
        pcs: Bytes<'a>,
        scopes: Bytes<'a>,
        metadata: Bytes<'a>,
    }

    impl Memory for Recorded<'_> {
        fn read_u8(&self, a: usize) -> Option<u8> {
            self.pcs.read_u8(a).or_else(|| self.scopes.read_u8(a))
        }
        fn read_u32(&self, a: usize) -> Option<u32> {
            self.pcs.read_u32(a).or_else(|| self.scopes.read_u32(a))
        }
        fn read_usize(&self, a: usize) -> Option<usize> {
            self.metadata.read_usize(a)
        }
    }

    impl Recorded<'_> {
        fn layout(&self) -> PcDescLayout {
            PcDescLayout {
                size: self.r.pc_desc_size,
                pc_offset: self.r.pc_offset_field,
                scope_decode_offset: self.r.scope_field,
            }
        }
        fn format(&self) -> ScopeFormat {
            ScopeFormat {
                encoding: Encoding::for_feature_version(self.r.feature_version),
                invocation_entry_bci: self.r.invocation_entry_bci,
            }
        }
        fn nmethod(&self) -> NmethodDebugInfo {
            NmethodDebugInfo {
                pcs_begin: self.r.pcs.addr,
                pcs_end: self.r.pcs.addr + self.r.pcs.bytes.len(),
                scopes: NmethodScopes {
                    data: self.r.scopes.addr,
                    data_len: self.r.scopes.bytes.len(),
                    metadata: self.r.metadata_addr,
                    metadata_len: self.r.metadata.len(),
                },
            }
        }
        fn frames(&self, pc_offset: usize) -> (Vec<ScopeFrame>, ChainEnd) {
            let mut out = [ScopeFrame::default(); 16];
            let r = decode_at_pc(
                self,
                &self.layout(),
                &self.format(),
                &self.nmethod(),
                pc_offset,
                &mut out,
            );
            (out[..r.count].to_vec(), r.end)
        }
    }

    fn for_each_recording(f: impl Fn(&Recorded)) {
        for r in fixture::all() {
            let md = fixture::metadata_bytes(&r);
            let rec = Recorded {
                r: &r,
                pcs: Bytes {
                    base: r.pcs.addr,
                    data: &r.pcs.bytes,
                },
                scopes: Bytes {
                    base: r.scopes.addr,
                    data: &r.scopes.bytes,
                },
                metadata: Bytes {
                    base: r.metadata_addr,
                    data: &md,
                },
            };
            f(&rec);
        }
    }

    #[test]
    fn recorded_nmethods_decode_to_hotspots_own_inline_records() {
        for_each_recording(|rec| {
            assert!(rec.r.truth.len() >= 10, "{}", rec.r.name);
            let mut deepest = 0;
            for truth in &rec.r.truth {
                let (frames, end) = rec.frames(truth.pc_offset);
                assert_eq!(
                    end,
                    ChainEnd::Complete,
                    "{} pc {}",
                    rec.r.name,
                    truth.pc_offset
                );
                let got: Vec<(usize, i32)> = frames.iter().map(|f| (f.method, f.bci)).collect();
                let want: Vec<(usize, i32)> =
                    truth.frames.iter().map(|(m, b, _)| (*m, *b)).collect();
                assert_eq!(got, want, "{} pc {}", rec.r.name, truth.pc_offset);
                // The Method*s we found are named, through the Method* chain, as JVMTI names them.
                for (frame, (_, _, jvmti_name)) in frames.iter().zip(&truth.frames) {
                    let md_name = rec.r.metadata.iter().find(|(m, _)| *m == frame.method);
                    assert_eq!(md_name.map(|(_, n)| n), Some(jvmti_name), "{}", rec.r.name);
                }
                deepest = deepest.max(frames.len());
            }
            // leaf <- inner <- middle <- outer
            assert_eq!(deepest, 4, "{}", rec.r.name);
        });
    }

    #[test]
    fn recorded_pcs_between_records_map_to_the_next_record() {
        for_each_recording(|rec| {
            let truth = &rec.r.truth;
            let first = truth.first().unwrap();
            for pc in 0..first.pc_offset {
                let (frames, _) = rec.frames(pc);
                assert_eq!(
                    frames[0].method, first.frames[0].0,
                    "{} pc {pc}",
                    rec.r.name
                );
            }
            for pair in truth.windows(2) {
                for pc in pair[0].pc_offset + 1..pair[1].pc_offset {
                    let (frames, end) = rec.frames(pc);
                    assert_eq!(end, ChainEnd::Complete);
                    let got: Vec<(usize, i32)> = frames.iter().map(|f| (f.method, f.bci)).collect();
                    let want: Vec<(usize, i32)> =
                        pair[1].frames.iter().map(|(m, b, _)| (*m, *b)).collect();
                    assert_eq!(got, want, "{} pc {pc}", rec.r.name);
                }
            }
        });
    }

    #[test]
    fn recorded_pcs_past_the_last_record_have_no_scope() {
        for_each_recording(|rec| {
            let pcs = &rec.r.pcs;
            let last_entry = pcs.addr + pcs.bytes.len() - rec.r.pc_desc_size;
            let sentinel = rec.read_u32(last_entry + rec.r.pc_offset_field).unwrap() as usize;
            assert!(
                sentinel > rec.r.code_size,
                "{}: final sentinel past the code",
                rec.r.name
            );
            // Up to the final sentinel: a PcDesc without scope; past it, none.
            let last = rec.r.truth.last().unwrap().pc_offset;
            for pc in [last + 1, rec.r.code_size, sentinel] {
                assert_eq!(
                    rec.frames(pc).1,
                    ChainEnd::NoScope,
                    "{} pc {pc}",
                    rec.r.name
                );
            }
            assert_eq!(
                rec.frames(sentinel + 1).1,
                ChainEnd::NoPcDesc,
                "{}",
                rec.r.name
            );
            // The leading sentinel is at -1 and never found.
            let first = find_pc_desc(rec, &rec.layout(), pcs.addr, pcs.addr + pcs.bytes.len(), 0);
            assert_eq!(first.unwrap().pc_offset as usize, rec.r.truth[0].pc_offset);
            let lead = rec.read_u32(pcs.addr + rec.r.pc_offset_field).unwrap() as i32;
            assert_eq!(lead, -1, "{}", rec.r.name);
        });
    }
}
