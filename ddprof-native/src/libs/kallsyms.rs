//! Kernel function names for the kernel frames of perf_events samples: the text symbols of
//! `/proc/kallsyms`, read once per process (about 120,000 symbols, 4-5 MiB with their names,
//! in the `native_symbols` category) by the first caller: `start` when a session collects kernel
//! frames (`profiler::dump::prepare`), else the first dump that meets one.

use std::sync::OnceLock;

/// Text symbols sorted by address: (address, start and length of the name in `names`).
pub struct Kallsyms {
    syms: Vec<(u64, u32, u16)>,
    names: String,
}

static TABLE: OnceLock<Option<Kallsyms>> = OnceLock::new();

/// The table, read on first use; None when `/proc/kallsyms` is unreadable or hides its
/// addresses (`kptr_restrict`, or a reader without CAP_SYSLOG).
pub fn get() -> Option<&'static Kallsyms> {
    TABLE
        .get_or_init(|| {
            let _mem = crate::footprint::scope(crate::footprint::Category::NativeSymbols);
            let text = std::fs::read_to_string("/proc/kallsyms").ok()?;
            let k = Kallsyms::parse(&text);
            (!k.syms.is_empty()).then_some(k)
        })
        .as_ref()
}

/// Whether `/proc/kallsyms` gives addresses to this process (its first line, without reading
/// the whole file).
pub fn readable() -> bool {
    use std::io::BufRead;
    let Ok(f) = std::fs::File::open("/proc/kallsyms") else {
        return false;
    };
    let mut line = String::new();
    if std::io::BufReader::new(f).read_line(&mut line).is_err() {
        return false;
    }
    line.split_whitespace()
        .next()
        .and_then(|a| u64::from_str_radix(a, 16).ok())
        .is_some_and(|a| a != 0)
}

impl Kallsyms {
    /// `address type name [module]` lines; only text symbols (types t, T, w, W) with an address.
    pub fn parse(text: &str) -> Kallsyms {
        let mut syms = Vec::new();
        let mut names = String::new();
        for line in text.lines() {
            let mut f = line.split_whitespace();
            let (Some(addr), Some(kind), Some(name)) = (f.next(), f.next(), f.next()) else {
                continue;
            };
            if !matches!(kind, "t" | "T" | "w" | "W") || name.len() > usize::from(u16::MAX) {
                continue;
            }
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            let Ok(start) = u32::try_from(names.len()) else {
                break;
            };
            if addr == 0 {
                continue;
            }
            names.push_str(name);
            syms.push((addr, start, name.len() as u16));
        }
        syms.sort_unstable_by_key(|s| s.0);
        syms.shrink_to_fit();
        names.shrink_to_fit();
        Kallsyms { syms, names }
    }

    /// The function holding `pc`: the nearest symbol at or below it.
    pub fn name(&self, pc: u64) -> Option<&str> {
        let i = self.syms.partition_point(|s| s.0 <= pc).checked_sub(1)?;
        let (_, start, len) = *self.syms.get(i)?;
        self.names
            .get(start as usize..start as usize + usize::from(len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_nearest_text_symbol_below() {
        let k = Kallsyms::parse(
            "ffffffff81000000 T _stext\n\
             ffffffff81000100 t do_one\n\
             ffffffff81000200 D some_data\n\
             ffffffff81000300 W weak_fn\n\
             0000000000000000 T hidden\n\
             ffffffffc0000000 t mod_fn\t[kvm]\n",
        );
        assert_eq!(k.name(0xffffffff81000150), Some("do_one"));
        assert_eq!(
            k.name(0xffffffff81000250),
            Some("do_one"),
            "data symbols are skipped"
        );
        assert_eq!(k.name(0xffffffff81000300), Some("weak_fn"));
        assert_eq!(k.name(0xffffffffc0000010), Some("mod_fn"));
        assert_eq!(k.name(0x1000), None);
    }

    #[test]
    fn hidden_addresses_make_an_empty_table() {
        let k = Kallsyms::parse("0000000000000000 T _stext\n0000000000000000 t do_one\n");
        assert!(k.syms.is_empty());
    }
}
