//! Stack-walking options: `cstack`, `jstackdepth`, `safemode`, `jvmtistacks`, `lightweight`,
//! `remotesym`, `nosanity`, async-profiler's `features` and ddprof's `walkcompare`. Each boolean keeps upstream's own truth
//! rule (they differ on purpose: configurations written for upstream must mean the same here).

use super::draft::Draft;
use super::values::{
    first_char_is, parse_positive_decimal, parse_u32_c, true_unless_negative, Reason,
};
use super::{CStack, SAFEMODE_ALL};

/// `cstack=MODE`: an unknown mode reads `no`, as upstream; the value is also kept verbatim for
/// the `cstack` setting. Bare changes nothing.
pub(super) fn cstack(d: &mut Draft, value: Option<&str>) -> Result<(), Reason> {
    if let Some(v) = value {
        d.args.cstack = parse_cstack(v);
        d.args.cstack_requested = v.to_string();
    }
    Ok(())
}

/// The mode named `value`, case-insensitively; anything else (including empty) is `No`.
pub(super) fn parse_cstack(value: &str) -> CStack {
    [
        CStack::Default,
        CStack::Fp,
        CStack::Dwarf,
        CStack::Lbr,
        CStack::Vm,
        CStack::Vmx,
    ]
    .into_iter()
    .find(|mode| mode.as_str().eq_ignore_ascii_case(value))
    .unwrap_or(CStack::No)
}

/// `jstackdepth=N`: a positive decimal; the sampler caps it at start.
pub(super) fn jstackdepth(d: &mut Draft, value: Option<&str>) -> Result<(), Reason> {
    d.args.jstackdepth = parse_positive_decimal(value)?;
    Ok(())
}

/// `safemode[=BITS]`: bare turns every recovery technique off.
pub(super) fn safemode(d: &mut Draft, value: Option<&str>) -> Result<(), Reason> {
    d.args.safemode = match value {
        None => SAFEMODE_ALL,
        Some(v) => parse_u32_c(v)?,
    };
    Ok(())
}

/// `jvmtistacks`: bare = on, else on only for a value starting with y, t or 1.
pub(super) fn jvmtistacks(d: &mut Draft, value: Option<&str>) -> Result<(), Reason> {
    d.args.jvmtistacks = value.is_none_or(|v| first_char_is(v, &['y', 't', '1']));
    Ok(())
}

/// `lightweight`: a bare key changes nothing (upstream); only y… / t… turn it on.
pub(super) fn lightweight(d: &mut Draft, value: Option<&str>) -> Result<(), Reason> {
    if let Some(v) = value {
        d.args.lightweight = first_char_is(v, &['y', 't']);
    }
    Ok(())
}

pub(super) fn remotesym(d: &mut Draft, value: Option<&str>) -> Result<(), Reason> {
    d.args.remotesym = true_unless_negative(value);
    Ok(())
}

pub(super) fn nosanity(d: &mut Draft, value: Option<&str>) -> Result<(), Reason> {
    d.args.nosanity = true_unless_negative(value);
    Ok(())
}

pub(super) fn walkcompare(d: &mut Draft, value: Option<&str>) -> Result<(), Reason> {
    d.args.walkcompare = true_unless_negative(value);
    Ok(())
}

/// `features=LIST`: async-profiler's spelling of optional stack details, names joined by `+`.
/// `vtable` turns on the receiver classes of vtable/itable stub frames (which any `cpu` key
/// also does, as upstream). Other names are collected as unknown (a warning), not refused.
pub(super) fn features(d: &mut Draft, value: Option<&str>) -> Result<(), Reason> {
    for name in value.unwrap_or("").split('+').filter(|n| !n.is_empty()) {
        if name.eq_ignore_ascii_case("vtable") {
            d.args.vtable_receiver = true;
        } else {
            d.args.unknown.push(format!("features={name}"));
        }
    }
    Ok(())
}
