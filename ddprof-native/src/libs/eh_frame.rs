//! Building the walker's DWARF unwind rows from `.eh_frame` (never in a signal): every
//! executable file mapped into the process except libjvm (whose frame pointers are
//! reliable, and whose `.eh_frame` is the largest) has its call-frame information
//! interpreted into rows (`crate::sample::walk::dwarf::Row`), sorted by runtime address,
//! rows with an equal rule merged, and published for the handler. Every start and every
//! dump checks the mapped libraries again; libraries loaded after a start or dump have no
//! rows until the next one.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::libs::elf::{u32_at, Elf, MappedFile};
use crate::sample::walk::arch;
use crate::sample::walk::dwarf::{
    self, Lib, Registers, Row, Table, CFA_RBP, CFA_RSP, CFA_UNKNOWN, FP_SAME, RA_BELOW_CFA,
    RA_BESIDE_FP, RA_IN_LR,
};

/// Serialises builds and publications.
static BUILD: Mutex<()> = Mutex::new(());

/// Builds and publishes the rows of the libraries mapped now, unless the published table
/// already covers exactly these. Not signal-safe (reads files, allocates). Returns the
/// bytes of the published table.
pub fn refresh() -> usize {
    let _mem = crate::footprint::scope(crate::footprint::Category::NativeSymbols);
    let _guard = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    let started = std::time::Instant::now();
    let snapshot = crate::libs::mappings::current();
    let libs = &snapshot.files;
    let key: Vec<(String, u64)> = libs.iter().map(|l| (l.path.clone(), l.start)).collect();
    {
        let current = dwarf::read();
        if let Some(t) = current.table() {
            if t.key() == key.as_slice() {
                return t.bytes();
            }
        }
    }
    let built: Vec<Lib> = libs
        .iter()
        .filter(|l| !l.path.ends_with("/libjvm.so"))
        .filter_map(|l| {
            let rows = rows_of_file(l)?;
            (!rows.is_empty()).then_some(Lib {
                start: l.start,
                end: l.end,
                rows,
            })
        })
        .collect();
    let table = Box::new(Table::new(built, key));
    let bytes = table.bytes();
    crate::log::info(&format!(
        "DWARF unwind rules: {} libraries, {} rows, {} bytes, built in {} ms",
        table.libs().len(),
        table.libs().iter().map(|l| l.rows.len()).sum::<usize>(),
        bytes,
        started.elapsed().as_millis()
    ));
    if !dwarf::publish(table) {
        crate::log::warn("DWARF unwind rules: a handler held the old table too long; it is leaked");
    }
    bytes
}

// ---------------------------------------------------------------------------------------
// Reading .eh_frame from an ELF file
// ---------------------------------------------------------------------------------------

/// The rows of one file mapped with its executable segment at `exec_start` (file offset
/// `exec_offset`), in runtime addresses.
fn rows_of_file(f: &MappedFile) -> Option<Vec<Row>> {
    rows_of_elf(&f.open()?, f.exec_start, f.exec_offset)
}

/// [`rows_of_file`] of a file opened (or an object read in memory), for this architecture.
fn rows_of_elf(elf: &Elf, exec_start: u64, exec_offset: u64) -> Option<Vec<Row>> {
    rows_of_elf_for(elf, exec_start, exec_offset, &arch::DWARF)
}

/// [`rows_of_elf`] for the architecture whose DWARF registers are `regs` (tests read another
/// architecture's files).
fn rows_of_elf_for(
    elf: &Elf,
    exec_start: u64,
    exec_offset: u64,
    regs: &Registers,
) -> Option<Vec<Row>> {
    // bias = runtime address - ELF vaddr, through the segment the mapping maps: file offset
    // f is at runtime exec_start + f - exec_offset and at ELF address vaddr + f - offset of
    // its segment (which may start after the mapping's page).
    let load = elf.load_of_mapping(exec_offset)?;
    let bias = exec_start
        .wrapping_sub(exec_offset)
        .wrapping_add(load.offset)
        .wrapping_sub(load.vaddr);
    let eh = elf.section_named(".eh_frame")?;
    let data = elf.read(eh.offset, eh.size)?;
    Some(rows_of_eh_frame_for(&data, eh.addr, bias, regs))
}

/// Every row of an `.eh_frame` section whose first byte is at ELF address `vaddr`, moved
/// by `bias` to runtime addresses, sorted and merged, for this architecture.
pub fn rows_of_eh_frame(data: &[u8], vaddr: u64, bias: u64) -> Vec<Row> {
    rows_of_eh_frame_for(data, vaddr, bias, &arch::DWARF)
}

/// [`rows_of_eh_frame`] for the architecture whose DWARF registers are `regs`.
pub fn rows_of_eh_frame_for(data: &[u8], vaddr: u64, bias: u64, regs: &Registers) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut cies: HashMap<usize, Cie> = HashMap::new();
    let mut pos = 0usize;
    while let Some(len) = u32_at(data, pos) {
        if len == 0 {
            break; // terminator
        }
        if len == u32::MAX {
            break; // 64-bit DWARF: not produced for .eh_frame on Linux
        }
        let body = pos + 4;
        let Some(end) = body.checked_add(len as usize).filter(|e| *e <= data.len()) else {
            break;
        };
        let Some(id) = u32_at(data, body) else { break };
        if id == 0 {
            if let Some(cie) = Cie::parse(data, body + 4, end, vaddr) {
                cies.insert(pos, cie);
            }
        } else if let Some(cie_pos) = body.checked_sub(id as usize) {
            let cie = match cies.get(&cie_pos) {
                Some(c) => Some(c.clone()),
                None => parse_cie_at(data, cie_pos, vaddr),
            };
            if let Some(cie) = cie {
                fde_rows(data, body + 4, end, vaddr, bias, &cie, regs, &mut rows);
                cies.entry(cie_pos).or_insert(cie);
            }
        }
        pos = end;
    }
    // At one pc, a function's first row wins over the end marker of the one before it.
    rows.sort_by_key(|r| (r.pc, r.cfa_reg != CFA_UNKNOWN));
    rows.dedup_by(|later, earlier| {
        later.pc == earlier.pc && {
            *earlier = *later;
            true
        }
    });
    rows.dedup_by(|later, earlier| later.same_rule(earlier));
    rows.shrink_to_fit();
    rows
}

fn parse_cie_at(data: &[u8], pos: usize, vaddr: u64) -> Option<Cie> {
    let len = u32_at(data, pos)? as usize;
    let body = pos + 4;
    let end = body.checked_add(len).filter(|e| *e <= data.len())?;
    (u32_at(data, body)? == 0).then_some(())?;
    Cie::parse(data, body + 4, end, vaddr)
}

#[derive(Clone, Debug)]
struct Cie {
    code_align: u64,
    data_align: i64,
    fde_encoding: u8,
    has_augmentation_data: bool,
    initial: (usize, usize),
}

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    end: usize,
}

impl Reader<'_> {
    fn u8(&mut self) -> Option<u8> {
        if self.pos >= self.end {
            return None;
        }
        let v = *self.data.get(self.pos)?;
        self.pos += 1;
        Some(v)
    }
    fn uleb(&mut self) -> Option<u64> {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let b = self.u8()?;
            if shift < 64 {
                v |= u64::from(b & 0x7f) << shift;
            }
            shift += 7;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
    }
    fn sleb(&mut self) -> Option<i64> {
        let mut v = 0i64;
        let mut shift = 0;
        loop {
            let b = self.u8()?;
            if shift < 64 {
                v |= i64::from(b & 0x7f) << shift;
            }
            shift += 7;
            if b & 0x80 == 0 {
                if shift < 64 && b & 0x40 != 0 {
                    v |= -1i64 << shift;
                }
                return Some(v);
            }
        }
    }
    fn bytes(&mut self, n: usize) -> Option<&[u8]> {
        let end = self.pos.checked_add(n).filter(|e| *e <= self.end)?;
        let s = self.data.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }
    /// A pointer in `.eh_frame` encoding `enc`; `section_vaddr` places pc-relative ones.
    fn encoded(&mut self, enc: u8, section_vaddr: u64) -> Option<u64> {
        if enc == 0xff {
            return None;
        }
        let field = section_vaddr.wrapping_add(self.pos as u64);
        let v = match enc & 0x0f {
            0x00 => u64::from_le_bytes(self.bytes(8)?.try_into().ok()?),
            0x01 => self.uleb()?,
            0x02 => u64::from(u16::from_le_bytes(self.bytes(2)?.try_into().ok()?)),
            0x03 => u64::from(u32::from_le_bytes(self.bytes(4)?.try_into().ok()?)),
            0x04 => u64::from_le_bytes(self.bytes(8)?.try_into().ok()?),
            0x09 => self.sleb()? as u64,
            0x0a => i16::from_le_bytes(self.bytes(2)?.try_into().ok()?) as i64 as u64,
            0x0b => i32::from_le_bytes(self.bytes(4)?.try_into().ok()?) as i64 as u64,
            0x0c => u64::from_le_bytes(self.bytes(8)?.try_into().ok()?),
            _ => return None,
        };
        match enc & 0x70 {
            0x00 => Some(v),
            0x10 => Some(field.wrapping_add(v)),
            _ => None, // datarel, textrel, funcrel: not used for code addresses on Linux
        }
    }
}

impl Cie {
    fn parse(data: &[u8], pos: usize, end: usize, vaddr: u64) -> Option<Cie> {
        let mut r = Reader { data, pos, end };
        let version = r.u8()?;
        let mut aug = Vec::new();
        loop {
            match r.u8()? {
                0 => break,
                c => aug.push(c),
            }
        }
        if aug.windows(2).any(|w| w == b"eh") {
            return None; // obsolete GCC augmentation
        }
        if version >= 4 {
            r.u8()?; // address size
            r.u8()?; // segment selector size
        }
        let code_align = r.uleb()?;
        let data_align = r.sleb()?;
        if version == 1 {
            r.u8()?;
        } else {
            r.uleb()?;
        }
        let mut fde_encoding = 0u8;
        let z = aug.first() == Some(&b'z');
        if z {
            let len = r.uleb()? as usize;
            let after = r.pos.checked_add(len)?;
            for c in aug.iter().skip(1) {
                match c {
                    b'R' => fde_encoding = r.u8()?,
                    b'P' => {
                        let enc = r.u8()?;
                        r.encoded(enc & 0x7f, vaddr)?;
                    }
                    b'L' => {
                        r.u8()?;
                    }
                    _ => {}
                }
            }
            r.pos = after;
        }
        Some(Cie {
            code_align,
            data_align,
            fde_encoding,
            has_augmentation_data: z,
            initial: (r.pos, end),
        })
    }
}

/// Where a register the rows keep (the frame pointer; the return address where
/// [`Registers::ra`] is set) is: unchanged, saved at `CFA + offset`, or somewhere a row
/// cannot say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FpRule {
    Same,
    At(i64),
    Unknown,
}

#[derive(Clone, Copy, Debug)]
struct State {
    cfa_reg: u64,
    cfa_off: i64,
    cfa_known: bool,
    fp: FpRule,
    /// The return address's rule (only where [`Registers::ra`] is set).
    ra: FpRule,
}

/// A row with no usable rule.
fn unknown_row(pc: u64) -> Row {
    Row {
        pc,
        cfa_off: 0,
        fp_off: 0,
        cfa_reg: CFA_UNKNOWN,
        ra: 0,
    }
}

impl State {
    /// The state every FDE's CIE starts from.
    fn initial(regs: &Registers) -> State {
        State {
            cfa_reg: regs.sp,
            cfa_off: regs.initial_cfa_off,
            cfa_known: true,
            fp: FpRule::Same,
            ra: FpRule::Same,
        }
    }

    fn row(&self, pc: u64, regs: &Registers) -> Row {
        let unknown = unknown_row(pc);
        let cfa_reg = match self.cfa_reg {
            r if r == regs.sp => CFA_RSP,
            r if r == regs.fp => CFA_RBP,
            _ => return unknown,
        };
        let fp_off = match self.fp {
            FpRule::Same => FP_SAME,
            FpRule::At(o) => match i16::try_from(o) {
                Ok(o) if o != FP_SAME => o,
                _ => return unknown,
            },
            FpRule::Unknown => return unknown,
        };
        let ra = if regs.ra.is_none() {
            RA_BELOW_CFA
        } else {
            match (self.ra, self.fp) {
                (FpRule::Same, _) => RA_IN_LR,
                (FpRule::At(r), FpRule::At(f)) if f.checked_add(8) == Some(r) => RA_BESIDE_FP,
                (FpRule::At(r), _) if r % 8 == 0 => match i8::try_from(r / 8) {
                    Ok(w) if w != RA_IN_LR && w != RA_BESIDE_FP => w,
                    _ => return unknown,
                },
                _ => return unknown,
            }
        };
        match i32::try_from(self.cfa_off) {
            Ok(cfa_off) if self.cfa_known => Row {
                pc,
                cfa_off,
                fp_off,
                cfa_reg,
                ra,
            },
            _ => unknown,
        }
    }

    /// Register `reg` now follows `rule` (`restore`: its rule in `initial`), if the rows
    /// keep it.
    fn set(&mut self, reg: u64, rule: FpRule, regs: &Registers) {
        if reg == regs.fp {
            self.fp = rule;
        } else if Some(reg) == regs.ra {
            self.ra = rule;
        }
    }

    fn restore(&mut self, reg: u64, initial: &State, regs: &Registers) {
        if reg == regs.fp {
            self.fp = initial.fp;
        } else if Some(reg) == regs.ra {
            self.ra = initial.ra;
        }
    }
}

/// Runs one CFA program. `emit` gets (pc, state) before every advance and at the end.
#[allow(clippy::too_many_arguments)]
fn run_program(
    r: &mut Reader,
    cie: &Cie,
    regs: &Registers,
    state: &mut State,
    initial: &State,
    loc: &mut u64,
    vaddr: u64,
    mut emit: impl FnMut(u64, &State),
) -> Option<()> {
    let mut stack: Vec<State> = Vec::new();
    while r.pos < r.end {
        let op = r.u8()?;
        let advance =
            |loc: &mut u64, delta: u64, state: &State, emit: &mut dyn FnMut(u64, &State)| {
                emit(*loc, state);
                *loc = loc.wrapping_add(delta.wrapping_mul(cie.code_align));
            };
        match op >> 6 {
            1 => {
                advance(loc, u64::from(op & 0x3f), state, &mut emit);
                continue;
            }
            2 => {
                let off = (r.uleb()? as i64).wrapping_mul(cie.data_align);
                state.set(u64::from(op & 0x3f), FpRule::At(off), regs);
                continue;
            }
            3 => {
                state.restore(u64::from(op & 0x3f), initial, regs);
                continue;
            }
            _ => {}
        }
        match op {
            0x00 => {}
            0x01 => {
                let to = r.encoded(cie.fde_encoding, vaddr)?;
                emit(*loc, state);
                *loc = to;
            }
            0x02 => {
                let d = u64::from(r.u8()?);
                advance(loc, d, state, &mut emit);
            }
            0x03 => {
                let d = u64::from(u16::from_le_bytes(r.bytes(2)?.try_into().ok()?));
                advance(loc, d, state, &mut emit);
            }
            0x04 => {
                let d = u64::from(u32::from_le_bytes(r.bytes(4)?.try_into().ok()?));
                advance(loc, d, state, &mut emit);
            }
            0x05 => {
                let reg = r.uleb()?;
                let off = (r.uleb()? as i64).wrapping_mul(cie.data_align);
                state.set(reg, FpRule::At(off), regs);
            }
            0x06 => {
                let reg = r.uleb()?;
                state.restore(reg, initial, regs);
            }
            0x07 | 0x08 => {
                let reg = r.uleb()?;
                let rule = if op == 0x08 {
                    FpRule::Same
                } else {
                    FpRule::Unknown
                };
                state.set(reg, rule, regs);
            }
            0x09 => {
                let reg = r.uleb()?;
                r.uleb()?;
                state.set(reg, FpRule::Unknown, regs);
            }
            0x0a => stack.push(*state),
            0x0b => *state = stack.pop()?,
            0x0c => {
                state.cfa_reg = r.uleb()?;
                state.cfa_off = r.uleb()? as i64;
                state.cfa_known = true;
            }
            0x0d => {
                state.cfa_reg = r.uleb()?;
                state.cfa_known = true;
            }
            0x0e => state.cfa_off = r.uleb()? as i64,
            0x0f => {
                let n = r.uleb()? as usize;
                r.bytes(n)?;
                state.cfa_known = false;
            }
            0x10 | 0x16 => {
                let reg = r.uleb()?;
                let n = r.uleb()? as usize;
                r.bytes(n)?;
                state.set(reg, FpRule::Unknown, regs);
            }
            0x11 => {
                let reg = r.uleb()?;
                let off = r.sleb()?.wrapping_mul(cie.data_align);
                state.set(reg, FpRule::At(off), regs);
            }
            0x12 => {
                state.cfa_reg = r.uleb()?;
                state.cfa_off = r.sleb()?.wrapping_mul(cie.data_align);
                state.cfa_known = true;
            }
            0x13 => state.cfa_off = r.sleb()?.wrapping_mul(cie.data_align),
            0x14 | 0x15 => {
                let reg = r.uleb()?;
                if op == 0x14 {
                    r.uleb()?;
                } else {
                    r.sleb()?;
                }
                state.set(reg, FpRule::Unknown, regs);
            }
            // DW_CFA_AARCH64_negate_ra_state: the return address is signed (or no longer)
            // from here; where it is does not change.
            0x2d if regs.negate_ra_state => {}
            0x2e => {
                r.uleb()?;
            }
            0x2f => {
                let reg = r.uleb()?;
                let off = (r.uleb()? as i64)
                    .wrapping_neg()
                    .wrapping_mul(cie.data_align);
                state.set(reg, FpRule::At(off), regs);
            }
            _ => return None, // unknown opcode: the rest cannot be decoded
        }
    }
    Some(())
}

#[allow(clippy::too_many_arguments)]
fn fde_rows(
    data: &[u8],
    pos: usize,
    end: usize,
    vaddr: u64,
    bias: u64,
    cie: &Cie,
    regs: &Registers,
    rows: &mut Vec<Row>,
) {
    let mut r = Reader { data, pos, end };
    let Some(begin) = r.encoded(cie.fde_encoding, vaddr) else {
        return;
    };
    let Some(range) = r.encoded(cie.fde_encoding & 0x0f, vaddr) else {
        return;
    };
    if cie.has_augmentation_data {
        let Some(n) = r.uleb() else { return };
        if r.bytes(n as usize).is_none() {
            return;
        }
    }
    if begin == 0 || range == 0 {
        return; // discarded function (section garbage-collected by the linker)
    }
    // The CIE's initial instructions give the state every FDE starts from.
    let mut initial = State::initial(regs);
    let mut loc = begin;
    let mut ci = Reader {
        data,
        pos: cie.initial.0,
        end: cie.initial.1,
    };
    let start_state = initial;
    if run_program(
        &mut ci,
        cie,
        regs,
        &mut initial,
        &start_state,
        &mut loc,
        vaddr,
        |_, _| {},
    )
    .is_none()
    {
        return;
    }
    let mut state = initial;
    let mut loc = begin;
    let fde_end = begin.wrapping_add(range);
    let start = rows.len();
    let ok = run_program(
        &mut r,
        cie,
        regs,
        &mut state,
        &initial,
        &mut loc,
        vaddr,
        |pc, s| {
            if pc < fde_end {
                rows.push(s.row(pc.wrapping_add(bias), regs));
            }
        },
    );
    if ok.is_none() {
        // Undecodable program: no rule for any of its pcs.
        rows.truncate(start);
        rows.push(unknown_row(begin.wrapping_add(bias)));
    } else if loc < fde_end {
        rows.push(state.row(loc.wrapping_add(bias), regs));
    }
    // Past the function: no rule (unless the next function starts right here).
    rows.push(unknown_row(fde_end.wrapping_add(bias)));
}

#[cfg(test)]
#[path = "eh_frame_tests.rs"]
mod tests;
