//! Building the walker's DWARF unwind rows from `.eh_frame` (never in a signal): every
//! executable file mapped into the process except libjvm (whose frame pointers are
//! reliable, and whose `.eh_frame` is the largest) has its call-frame information
//! interpreted (by `gimli`, which the signal path never sees) into rows (`crate::sample::walk::dwarf::Row`), sorted by runtime address,
//! rows with an equal rule merged, and published for the handler. Every start and every
//! dump checks the mapped libraries again; libraries loaded after a start or dump have no
//! rows until the next one.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::libs::elf::{Elf, MappedFile};
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
///
/// The entries are parsed and their programs run by `gimli` (CIE/FDE layout, pointer
/// encodings, every standard `DW_CFA_*` opcode and the GNU and AArch64 ones it knows); this
/// function keeps what a [`Row`] can say of each of its rows. A damaged entry ends the walk
/// (the rows read so far stay); a program that cannot be run to its end has no rule from
/// the row it fails in.
pub fn rows_of_eh_frame_for(data: &[u8], vaddr: u64, bias: u64, regs: &Registers) -> Vec<Row> {
    use gimli::UnwindSection;
    let mut section = gimli::EhFrame::new(data, gimli::LittleEndian);
    section.set_address_size(8);
    if regs.negate_ra_state {
        section.set_vendor(gimli::Vendor::AArch64);
    }
    // Only pc-relative and absolute pointers are used for code addresses on Linux; text-
    // and data-relative ones fail to parse (no base given), as before gimli.
    let bases = gimli::BaseAddresses::default().set_eh_frame(vaddr);
    let mut ctx = gimli::UnwindContext::new();
    let mut cies: HashMap<usize, Cie> = HashMap::new();
    let mut rows = Vec::new();
    let mut entries = section.entries(&bases);
    while let Ok(Some(entry)) = entries.next() {
        let gimli::CieOrFde::Fde(partial) = entry else {
            continue;
        };
        let mut defines_cfa = true;
        let fde = partial.parse(|section, bases, offset| {
            let cie = match cies.get(&offset.0) {
                Some(c) => c.clone(),
                None => {
                    let cie = Cie::parse(section, bases, offset)?;
                    cies.insert(offset.0, cie.clone());
                    cie
                }
            };
            defines_cfa = cie.defines_cfa;
            Ok(cie.entry)
        });
        let Ok(fde) = fde else { continue };
        fde_rows(
            &section,
            &bases,
            &mut ctx,
            &fde,
            defines_cfa,
            bias,
            regs,
            &mut rows,
        );
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

type Slice<'a> = gimli::EndianSlice<'a, gimli::LittleEndian>;

/// A CIE as gimli parsed it, and whether its initial instructions define the CFA.
#[derive(Clone)]
struct Cie<'a> {
    entry: gimli::CommonInformationEntry<Slice<'a>>,
    defines_cfa: bool,
}

impl<'a> Cie<'a> {
    fn parse(
        section: &gimli::EhFrame<Slice<'a>>,
        bases: &gimli::BaseAddresses,
        offset: gimli::EhFrameOffset,
    ) -> gimli::Result<Cie<'a>> {
        use gimli::UnwindSection;
        let entry = section.cie_from_offset(bases, offset)?;
        let mut defines_cfa = false;
        let mut program = entry.instructions(section, bases);
        while let Ok(Some(i)) = program.next() {
            defines_cfa |= matches!(
                i,
                gimli::CallFrameInstruction::DefCfa { .. }
                    | gimli::CallFrameInstruction::DefCfaSf { .. }
                    | gimli::CallFrameInstruction::DefCfaExpression { .. }
            );
        }
        Ok(Cie { entry, defines_cfa })
    }
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

/// Where a register the rows keep (the frame pointer; the return address where
/// [`Registers::ra`] is set) is: unchanged, saved at `CFA + offset`, or somewhere a row
/// cannot say (another register, an expression, a value computed rather than saved).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Saved {
    Same,
    At(i64),
    Unknown,
}

/// The rule of `reg` in `row`: a register without one keeps its caller's value.
fn saved(row: &gimli::UnwindTableRow<usize>, reg: u64) -> Saved {
    match u16::try_from(reg)
        .ok()
        .and_then(|r| row.register(gimli::Register(r)))
    {
        None | Some(gimli::RegisterRule::SameValue) => Saved::Same,
        Some(gimli::RegisterRule::Offset(o)) => Saved::At(o),
        Some(_) => Saved::Unknown,
    }
}

/// The [`Row`] at `pc` of gimli's `row`. `defines_cfa`: whether the CIE set the CFA; if not,
/// it starts as the architecture's at a call (`Registers::initial_cfa_off` above the stack
/// pointer), where gimli would start it at register 0.
fn row_of(row: &gimli::UnwindTableRow<usize>, pc: u64, defines_cfa: bool, regs: &Registers) -> Row {
    let unknown = unknown_row(pc);
    let (cfa_reg, cfa_off) = match *row.cfa() {
        gimli::CfaRule::RegisterAndOffset {
            register: gimli::Register(0),
            offset,
        } if !defines_cfa => (
            regs.sp,
            if offset == 0 {
                regs.initial_cfa_off
            } else {
                offset
            },
        ),
        gimli::CfaRule::RegisterAndOffset { register, offset } => (u64::from(register.0), offset),
        gimli::CfaRule::Expression(_) => return unknown,
    };
    let cfa_reg = match cfa_reg {
        r if r == regs.sp => CFA_RSP,
        r if r == regs.fp => CFA_RBP,
        _ => return unknown,
    };
    let fp = saved(row, regs.fp);
    let fp_off = match fp {
        Saved::Same => FP_SAME,
        Saved::At(o) => match i16::try_from(o) {
            Ok(o) if o != FP_SAME => o,
            _ => return unknown,
        },
        Saved::Unknown => return unknown,
    };
    let ra = match regs.ra {
        None => RA_BELOW_CFA,
        Some(ra) => match (saved(row, ra), fp) {
            (Saved::Same, _) => RA_IN_LR,
            (Saved::At(r), Saved::At(f)) if f.checked_add(8) == Some(r) => RA_BESIDE_FP,
            (Saved::At(r), _) if r % 8 == 0 => match i8::try_from(r / 8) {
                Ok(w) if w != RA_IN_LR && w != RA_BESIDE_FP => w,
                _ => return unknown,
            },
            _ => return unknown,
        },
    };
    match i32::try_from(cfa_off) {
        Ok(cfa_off) => Row {
            pc,
            cfa_off,
            fp_off,
            cfa_reg,
            ra,
        },
        Err(_) => unknown,
    }
}

/// Appends the rows of one FDE, moved by `bias`, and the end marker after its function.
#[allow(clippy::too_many_arguments)]
fn fde_rows<'a>(
    section: &gimli::EhFrame<Slice<'a>>,
    bases: &gimli::BaseAddresses,
    ctx: &mut gimli::UnwindContext<usize>,
    fde: &gimli::FrameDescriptionEntry<Slice<'a>>,
    defines_cfa: bool,
    bias: u64,
    regs: &Registers,
    rows: &mut Vec<Row>,
) {
    let (begin, range) = (fde.initial_address(), fde.len());
    if begin == 0 || range == 0 {
        return; // discarded function (section garbage-collected by the linker)
    }
    let fde_end = begin.wrapping_add(range);
    // Where the row being read starts: a program that cannot be run on (an opcode gimli
    // does not know, a rule given in a context DWARF forbids) has no rule from there on;
    // the rows before it were complete and stay.
    let mut next = begin;
    let complete = (|| -> gimli::Result<()> {
        let mut table = fde.rows(section, bases, ctx)?;
        while let Some(row) = table.next_row()? {
            let pc = row.start_address();
            if pc < fde_end {
                rows.push(row_of(row, pc.wrapping_add(bias), defines_cfa, regs));
            }
            next = row.end_address();
        }
        Ok(())
    })();
    if complete.is_err() && next < fde_end {
        rows.push(unknown_row(next.wrapping_add(bias)));
    }
    // Past the function: no rule (unless the next function starts right here).
    rows.push(unknown_row(fde_end.wrapping_add(bias)));
}

#[cfg(test)]
#[path = "eh_frame_tests.rs"]
mod tests;
