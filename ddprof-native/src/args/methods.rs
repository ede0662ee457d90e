//! Method ID options: `fjmethodid` (when jmethodIDs are created) and `mcleanup`.

use super::draft::Draft;
use super::values::{true_unless_negative, Reason};
use super::FjMethodId;

/// `fjmethodid=true|false|lazy`, any case; ddprof rejects other values (`lazy` is ddprof's).
/// Bare changes nothing.
pub(super) fn fjmethodid(d: &mut Draft, value: Option<&str>) -> Result<(), Reason> {
    if let Some(v) = value {
        d.args.fjmethodid = if v.eq_ignore_ascii_case("true") {
            FjMethodId::True
        } else if v.eq_ignore_ascii_case("false") {
            FjMethodId::False
        } else if v.eq_ignore_ascii_case("lazy") {
            FjMethodId::Lazy
        } else {
            return Err("expected true, false or lazy");
        };
    }
    Ok(())
}

pub(super) fn mcleanup(d: &mut Draft, value: Option<&str>) -> Result<(), Reason> {
    d.args.mcleanup = true_unless_negative(value);
    Ok(())
}
