//! Wall-clock options: `wall`, `walltpt`, `wallsampler`, `wallprecheck`, and ddprof's
//! `wallidle`. As for `cpu`, the
//! interval itself is resolved by `parse` after the last token.

use super::draft::Draft;
use super::values::{
    first_char_is, parse_non_negative_units, parse_positive_decimal, Reason, Units,
};

/// `wall[=[~]INTERVAL]`: `~` asks for collapsing, which sticks once requested (upstream).
pub(super) fn wall(d: &mut Draft, value: Option<&str>) -> Result<(), Reason> {
    let raw = value.unwrap_or("");
    let number = match raw.strip_prefix('~') {
        Some(rest) => {
            d.args.wall_collapsing = true;
            rest
        }
        None => raw,
    };
    d.wall = Some(parse_non_negative_units(number, Units::Time)?);
    Ok(())
}

/// `walltpt=N`: threads per wall tick, a positive decimal.
pub(super) fn walltpt(d: &mut Draft, value: Option<&str>) -> Result<(), Reason> {
    d.args.wall_threads_per_tick = parse_positive_decimal(value)?;
    Ok(())
}

/// `wallsampler=j…` picks the JVMTI sampler, any other value ASGCT; bare changes nothing.
pub(super) fn wallsampler(d: &mut Draft, value: Option<&str>) -> Result<(), Reason> {
    if let Some(v) = value {
        d.args.wall_sampler_jvmti = first_char_is(v, &['j']);
    }
    Ok(())
}

/// `wallprecheck`: off only for `false` (any case) or `0`; upstream's rule, so `no` means on.
pub(super) fn wallprecheck(d: &mut Draft, value: Option<&str>) -> Result<(), Reason> {
    d.args.wall_precheck = match value {
        None => true,
        Some(v) => !(v.eq_ignore_ascii_case("false") || v == "0"),
    };
    Ok(())
}

/// `wallidle[=bool]` (ddprof only): skip signalling threads that ran nothing since their last
/// wall sample, recording that sample again. On by default; off only for `false` or `0`.
pub(super) fn wallidle(d: &mut Draft, value: Option<&str>) -> Result<(), Reason> {
    d.args.wall_skip_idle = match value {
        None => true,
        Some(v) => !(v.eq_ignore_ascii_case("false") || v == "0"),
    };
    Ok(())
}
