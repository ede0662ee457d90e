//! The native engines: `nativemem` (malloc sampling, an interval in bytes) and `natsock`
//! (socket I/O sampling, an interval in time). Bare or 0 means every event / the engine's
//! default; ddprof rejects a malformed or negative interval where upstream does not.

use super::draft::Draft;
use super::values::{parse_non_negative_units, Reason, Units};

pub(super) fn nativemem(d: &mut Draft, value: Option<&str>) -> Result<(), Reason> {
    d.args.nativemem = Some(parse_non_negative_units(value.unwrap_or(""), Units::Bytes)?);
    Ok(())
}

pub(super) fn natsock(d: &mut Draft, value: Option<&str>) -> Result<(), Reason> {
    d.args.natsock_ns = Some(parse_non_negative_units(value.unwrap_or(""), Units::Time)?);
    Ok(())
}
