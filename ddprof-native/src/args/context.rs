//! Context and thread filter: `attributes` and `filter`.

use super::draft::Draft;
use super::values::Reason;

/// `attributes=a;b;c`: context attribute names, accumulated over repeated keys (empty names
/// kept, as upstream). Bare adds nothing.
pub(super) fn attributes(d: &mut Draft, value: Option<&str>) -> Result<(), Reason> {
    if let Some(v) = value {
        d.args.attributes.extend(v.split(';').map(str::to_string));
    }
    Ok(())
}

/// `filter[=X]`: the thread filter is on for any non-empty value; `filter` and `filter=` turn
/// it off.
pub(super) fn filter(d: &mut Draft, value: Option<&str>) -> Result<(), Reason> {
    d.args.filter = !value.unwrap_or("").is_empty();
    Ok(())
}
