//! `cpu`, `event`, `interval` and the perf ring (`allkernel`, `alluser`). The handlers only
//! record what was given; `parse` turns it into intervals once every token is seen, because
//! `interval=` and `event=` may come before or after `cpu`.

use super::draft::Draft;
use super::values::{parse_non_negative_units, parse_units, Reason, Units};
use super::Ring;

/// `cpu[=INTERVAL]`: 0 or bare means the default (or `interval=`). Any `cpu` key also turns on
/// vtable receiver resolution, as upstream; `event=cpu` does not.
pub(super) fn cpu(d: &mut Draft, value: Option<&str>) -> Result<(), Reason> {
    d.cpu = Some(parse_non_negative_units(value.unwrap_or(""), Units::Time)?);
    d.args.vtable_receiver = true;
    Ok(())
}

/// `event=NAME`: a built-in engine or a perf event name. `alloc` is not an event of its own (it
/// only turns allocation sampling on), so it neither is stored nor counts as a duplicate.
pub(super) fn event(d: &mut Draft, value: Option<&str>) -> Result<(), Reason> {
    match value {
        None | Some("") => return Err("must not be empty"),
        Some(v) if v.eq_ignore_ascii_case("alloc") => {
            d.memory_interval.get_or_insert(0);
        }
        Some(v) => {
            if d.args.event.is_some() {
                return Err("duplicate event argument");
            }
            d.args.event = Some(v.to_string());
        }
    }
    Ok(())
}

/// `interval=N`: nanoseconds, or bytes for a perf event, so it takes both unit families (`m` is
/// milliseconds). Must be positive; bare is an error.
pub(super) fn interval(d: &mut Draft, value: Option<&str>) -> Result<(), Reason> {
    let v = parse_units(value.ok_or("must be > 0")?, Units::Universal)?;
    if v <= 0 {
        return Err("must be > 0");
    }
    d.args.interval = u64::try_from(v).ok();
    Ok(())
}

pub(super) fn allkernel(d: &mut Draft, _: Option<&str>) -> Result<(), Reason> {
    d.args.ring = Ring::Kernel;
    Ok(())
}

pub(super) fn alluser(d: &mut Draft, _: Option<&str>) -> Result<(), Reason> {
    d.args.ring = Ring::User;
    Ok(())
}

/// What an `event=` name selects: a built-in engine (names compared case-insensitively) or,
/// for any other name, a perf event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum EventKind {
    Cpu,
    CTimer,
    ITimer,
    Wall,
    Noop,
    Perf,
}

impl EventKind {
    pub(super) fn of(name: &str) -> EventKind {
        [
            ("cpu", EventKind::Cpu),
            ("ctimer", EventKind::CTimer),
            ("itimer", EventKind::ITimer),
            ("wall", EventKind::Wall),
            ("noop", EventKind::Noop),
        ]
        .into_iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map_or(EventKind::Perf, |(_, kind)| kind)
    }
}
