//! Unwinding rules from DWARF call-frame information, the handler's side: the published
//! table of rows and the holds that keep it alive while a handler reads it. For native
//! code built without frame pointers (libc, zlib, most distribution libraries), where the
//! frame-pointer chain of `native.rs` skips or breaks.
//!
//! A row says: from a pc on, the canonical frame address (CFA) is the stack pointer or the
//! frame-pointer register plus an offset, where the return address is, and whether the
//! frame-pointer register is unchanged or saved at `CFA + offset`. Which registers those are
//! and how a row is applied is the architecture's (`arch::DWARF`, `arch::caller_by_rule`):
//! x86_64 (rsp, rbp, the return address at `CFA - 8`), aarch64 (sp, x29, the return address
//! in x30 or saved). The rows are built off the signal path from `.eh_frame`
//! (`crate::libs::eh_frame`, at every start and dump whose mapped libraries changed). The handler
//! finds a row with two binary searches over a table that never changes once published;
//! a replaced table is freed once no handler can still hold it (see [`read`]).
//!
//! Rules the rows cannot express (a CFA computed by a DWARF expression, as in PLT entries; a
//! saved frame pointer or return address found by expression) are stored as "unknown": the
//! walker falls back to frame pointers there.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};

/// Where the CFA is computed from: the stack pointer (x86_64 rsp, aarch64 sp) or the
/// frame-pointer register (rbp, x29).
pub const CFA_RSP: u8 = 0;
pub const CFA_RBP: u8 = 1;
/// The same, by the names the architectures other than x86_64 use.
pub const CFA_SP: u8 = CFA_RSP;
pub const CFA_FP: u8 = CFA_RBP;
/// No usable rule at this pc.
pub const CFA_UNKNOWN: u8 = 2;
/// `fp_off` of a frame that leaves the frame-pointer register as its caller had it.
pub const FP_SAME: i16 = i16::MIN;
/// `ra` of x86_64's rows: the return address at `CFA - 8` (the call pushed it).
pub const RA_BELOW_CFA: i8 = -1;
/// `ra` of a frame that has not saved its return address: it is still in the link register
/// (aarch64's x30, before the prologue stored it or after the epilogue loaded it back).
pub const RA_IN_LR: i8 = i8::MIN;
/// `ra` of a frame that saved its return address in the word after its saved frame pointer
/// (aarch64's frame record, `stp x29, x30`): at `CFA + fp_off + 8`.
pub const RA_BESIDE_FP: i8 = i8::MAX;

/// From `pc` on (until the next row): CFA = `cfa_reg + cfa_off`; the return address at
/// `CFA + 8 * ra` (words), or [`RA_IN_LR`], [`RA_BESIDE_FP`]; the caller's frame pointer
/// at `CFA + fp_off`, or unchanged (`FP_SAME`). 16 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    pub pc: u64,
    pub cfa_off: i32,
    pub fp_off: i16,
    pub cfa_reg: u8,
    pub ra: i8,
}

// The table's size per row, the same for every architecture.
const _: () = assert!(std::mem::size_of::<Row>() == 16);

impl Row {
    pub fn same_rule(&self, o: &Row) -> bool {
        self.cfa_reg == o.cfa_reg
            && self.cfa_off == o.cfa_off
            && self.fp_off == o.fp_off
            && self.ra == o.ra
    }
}

/// The DWARF register numbers an architecture's rows are read for (`arch::DWARF`), used
/// off the signal path by `crate::libs::eh_frame`.
#[derive(Clone, Copy, Debug)]
pub struct Registers {
    /// The stack pointer and the frame-pointer register.
    pub sp: u64,
    pub fp: u64,
    /// The return-address register whose rule the rows keep, unsaved until the prologue
    /// saves it (aarch64's x30). None: the return address is always at `CFA - 8` (a call
    /// pushes it: x86_64), and every row says [`RA_BELOW_CFA`].
    pub ra: Option<u64>,
    /// The CFA rule before a CIE's initial instructions (x86_64: rsp + 8).
    pub initial_cfa_off: i64,
    /// Whether `DW_CFA_AARCH64_negate_ra_state` (opcode 0x2d) is read as the toggle of a
    /// signed return address (pointer authentication; `arch::strip_pc` clears the code
    /// when the address is used). Elsewhere 0x2d is another architecture's opcode and ends
    /// the program's decoding.
    pub negate_ra_state: bool,
}

/// The rows of one library mapped at `[start, end)`, sorted by pc.
pub struct Lib {
    pub start: u64,
    pub end: u64,
    pub rows: Vec<Row>,
}

/// The rows of every covered library, by address.
pub struct Table {
    libs: Vec<Lib>,
    /// The (path, start) pairs it was built from, to tell whether a start must rebuild.
    key: Vec<(String, u64)>,
}

impl Table {
    /// A table of `libs` (sorted here by start), built from the mappings `key`. Not
    /// signal-safe.
    pub fn new(mut libs: Vec<Lib>, key: Vec<(String, u64)>) -> Table {
        libs.sort_by_key(|l| l.start);
        Table { libs, key }
    }

    /// The mappings it was built from.
    pub fn key(&self) -> &[(String, u64)] {
        &self.key
    }

    /// The covered libraries, by address.
    pub fn libs(&self) -> &[Lib] {
        &self.libs
    }

    /// The rule for `pc`, if a covered library has a usable one. Signal-safe.
    pub fn rule(&self, pc: u64) -> Option<Row> {
        let i = self
            .libs
            .partition_point(|l| l.start <= pc)
            .checked_sub(1)?;
        let lib = self.libs.get(i)?;
        if pc >= lib.end {
            return None;
        }
        let j = lib.rows.partition_point(|r| r.pc <= pc).checked_sub(1)?;
        let row = *lib.rows.get(j)?;
        (row.cfa_reg != CFA_UNKNOWN).then_some(row)
    }

    /// Bytes the rows take (for the gauge).
    pub fn bytes(&self) -> usize {
        self.libs
            .iter()
            .map(|l| l.rows.capacity() * std::mem::size_of::<Row>())
            .sum()
    }
}

impl Table {
    /// One library's rows (tests and benchmarks).
    pub fn single(start: u64, end: u64, rows: Vec<Row>) -> Table {
        Table::new(vec![Lib { start, end, rows }], Vec::new())
    }
}

static TABLE: AtomicPtr<Table> = AtomicPtr::new(std::ptr::null_mut());
/// Handlers reading the table, by the parity of `EPOCH` when they entered.
static READERS: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];
/// Bumped after each publication: readers of the retired parity are the only ones that may
/// hold the retired table.
static EPOCH: AtomicUsize = AtomicUsize::new(0);
/// How long a replacement waits for handlers still reading the old table before it gives
/// up and leaks it (a handler reads it for microseconds).
const RETIRE_WAIT_MS: u64 = 1000;
/// Set when a publication leaked its table instead of waiting longer.
static LEAKED: AtomicBool = AtomicBool::new(false);
/// The parity of a hold on no table.
const NO_PARITY: usize = 2;

/// A handler's hold on the published table; dropping it releases the hold. Signal-safe.
pub struct Hold {
    parity: usize,
    table: *const Table,
}

impl Hold {
    /// The table held. Signal-safe.
    pub fn table(&self) -> Option<&Table> {
        // SAFETY: the table stays allocated while this hold is counted (see `publish`).
        unsafe { self.table.as_ref() }
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        if let Some(r) = READERS.get(self.parity) {
            r.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Takes a hold on the published table (none published, or publications racing: `table()`
/// is None and the walk uses frame pointers). Signal-safe: atomic loads and increments.
///
/// The hold counts under the parity of the epoch it saw, and keeps the table only if the
/// epoch did not move meanwhile: the publication that next moves it then sees this hold
/// and waits, whichever of the two tables (before or after its swap) was loaded.
pub fn read() -> Hold {
    for _ in 0..3 {
        let epoch = EPOCH.load(Ordering::SeqCst);
        let parity = epoch & 1;
        READERS[parity].fetch_add(1, Ordering::SeqCst);
        let table = TABLE.load(Ordering::SeqCst);
        if EPOCH.load(Ordering::SeqCst) == epoch {
            return Hold { parity, table };
        }
        READERS[parity].fetch_sub(1, Ordering::SeqCst);
    }
    Hold {
        parity: NO_PARITY,
        table: std::ptr::null(),
    }
}

/// Publishes `new`, then frees the table it replaces once every handler that may hold it
/// has left (see `read`). Not signal-safe; the caller serialises publications. After a
/// publication gave up waiting and leaked its table, a handler of the other parity may
/// still hold the table that publication installed, so the next one waits for both
/// parities. Returns false when the old table was leaked (a handler held it too long).
pub fn publish(new: Box<Table>) -> bool {
    let old = TABLE.swap(Box::into_raw(new), Ordering::SeqCst);
    let retired = EPOCH.fetch_add(1, Ordering::SeqCst) & 1;
    if old.is_null() {
        return true;
    }
    let both = LEAKED.load(Ordering::SeqCst);
    let held = |p: usize| READERS[p].load(Ordering::SeqCst) != 0;
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(RETIRE_WAIT_MS);
    while held(retired) || (both && held(retired ^ 1)) {
        if std::time::Instant::now() > deadline {
            LEAKED.store(true, Ordering::SeqCst);
            return false;
        }
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    LEAKED.store(false, Ordering::SeqCst);
    // SAFETY: `old` came from Box::into_raw in an earlier publish, was swapped out above,
    // and no handler holds it any more (its parity's readers drained).
    drop(unsafe { Box::from_raw(old) });
    true
}
