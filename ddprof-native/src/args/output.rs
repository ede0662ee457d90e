//! Output and logging: `file` (with `%p`, `%t`, `%{ENV}` expansion), `jfr`, `log`, `loglevel`,
//! and the code maps for native profilers, `perfmap` and `jitdump`.
//! Expansion is pure too: `parse` passes in the environment lookup, the pid and the time.

use super::draft::Draft;
use super::values::{parse_u32_c, true_unless_negative, Reason};
use super::{JitDumpDir, LogLevel};

/// Longest `%{NAME}` that `file=` expansion looks up (upstream's 128-byte key buffer).
const MAX_ENV_NAME_LEN: usize = 127;

/// `file=PATH`: kept as given and expanded by `parse` after the last token (the last `file=`
/// wins). Empty or bare is an error even for actions that do not write.
pub(super) fn file<'a>(d: &mut Draft<'a>, value: Option<&'a str>) -> Result<(), Reason> {
    match value {
        None | Some("") => Err("must not be empty"),
        Some(v) => {
            d.file = Some(v);
            Ok(())
        }
    }
}

/// `jfr=MASK`: `JFR_*` bits of what not to write; bare changes nothing.
pub(super) fn jfr(d: &mut Draft, value: Option<&str>) -> Result<(), Reason> {
    if let Some(v) = value {
        d.args.jfr_mask = parse_u32_c(v)?;
    }
    Ok(())
}

/// `jdksamples[=true|false]` (ddprof's own): each CPU sample is also written as a
/// `jdk.ExecutionSample`, the event the JDK's tools and JMC's views and rules read.
pub(super) fn jdksamples(d: &mut Draft, value: Option<&str>) -> Result<(), Reason> {
    d.args.jdk_samples = true_unless_negative(value);
    Ok(())
}

/// `log=PATH`: bare or empty leaves it unset (the last `log` key wins).
pub(super) fn log(d: &mut Draft, value: Option<&str>) -> Result<(), Reason> {
    d.args.log = value.filter(|v| !v.is_empty()).map(str::to_string);
    Ok(())
}

/// `loglevel=LEVEL`: ddprof rejects a name that is not a level, and an empty one.
pub(super) fn loglevel(d: &mut Draft, value: Option<&str>) -> Result<(), Reason> {
    let raw = value.unwrap_or("");
    if raw.is_empty() {
        return Err("must not be empty");
    }
    d.args.loglevel =
        Some(LogLevel::parse(raw).ok_or("expected TRACE, DEBUG, INFO, WARN, ERROR or NONE")?);
    Ok(())
}

/// Expands `%p` (pid), `%t` (`yyyyMMdd-HHmmss`, UTC) and `%{NAME}` (environment). As upstream:
/// `%` before any other character yields that character (`%%` is `%`), a trailing `%` is dropped,
/// and an empty, too long or unterminated `%{NAME…` is kept as `{NAME…` (without the `%`).
///
/// Unlike upstream, a variable's value cannot change where the recording goes beyond what the
/// pattern says: at the very start of the pattern the value is a path (`%{HOME}/rec.jfr`, a
/// directory the environment names, as `$HOME` would); anywhere else it is one file name, its
/// `/` written `_` and a value of `.` or `..` written `_` or `__`. An unset or empty variable is
/// an error (upstream keeps `{NAME}`, or drops an empty value, which can make
/// `/recordings/%{TEAM}/app.jfr` write `/recordings/app.jfr`); the error names the variable.
pub(super) fn expand_file_pattern(
    pattern: &str,
    env: &dyn Fn(&str) -> Option<String>,
    pid: u32,
    now_epoch_secs: i64,
) -> Result<String, String> {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut rest = pattern;
    while let Some(pos) = rest.find('%') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        let Some(c) = after.chars().next() else {
            return Ok(out);
        };
        let at_start = pos == 0 && rest.len() == pattern.len();
        rest = &after[c.len_utf8()..];
        match c {
            'p' => out.push_str(&pid.to_string()),
            't' => out.push_str(&format_timestamp(now_epoch_secs)),
            '{' => match rest
                .find('}')
                .filter(|&end| end > 0 && end <= MAX_ENV_NAME_LEN)
            {
                Some(end) => {
                    let name = &rest[..end];
                    let value = env(name).filter(|v| !v.is_empty()).ok_or_else(|| {
                        let state = if env(name).is_some() {
                            "empty"
                        } else {
                            "not set"
                        };
                        format!("environment variable {name} of %{{{name}}} is {state}")
                    })?;
                    if at_start {
                        out.push_str(&value);
                    } else {
                        out.push_str(&as_file_name(&value));
                    }
                    rest = &rest[end + 1..];
                }
                None => out.push('{'),
            },
            other => out.push(other),
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// A variable's value as one file name: `/` becomes `_`, and `.` or `..` (which would name the
/// directory itself or its parent) become `_` or `__`.
fn as_file_name(value: &str) -> String {
    if value == "." || value == ".." {
        return "_".repeat(value.len());
    }
    value.replace('/', "_")
}

/// `yyyyMMdd-HHmmss` of a Unix time, in UTC (upstream uses local time; the format is the same).
pub(crate) fn format_timestamp(epoch_secs: i64) -> String {
    let days = epoch_secs.div_euclid(86_400);
    let secs_of_day = epoch_secs.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year}{month:02}{day:02}-{:02}{:02}{:02}",
        secs_of_day / 3600,
        secs_of_day % 3600 / 60,
        secs_of_day % 60
    )
}

/// Proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm), in
/// 128-bit arithmetic so that no `i64` input can overflow.
fn civil_from_days(days: i64) -> (i128, i128, i128) {
    let z = i128::from(days) + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i128::from(month <= 2);
    (year, month, day)
}

/// `perfmap[=bool]`: write `/tmp/perf-<pid>.map` while running (bare = on; `n`, `f`, `0` = off).
pub(super) fn perfmap(d: &mut Draft, value: Option<&str>) -> Result<(), Reason> {
    d.args.perfmap = true_unless_negative(value);
    Ok(())
}

/// `jitdump[=DIR]`: write `jit-<pid>.dump` while running. Bare, `true` or `yes`: the default
/// directory (chosen at start); `false`, `no`, `n`, `f`, `0`: off; anything else is the directory.
pub(super) fn jitdump(d: &mut Draft, value: Option<&str>) -> Result<(), Reason> {
    d.args.jitdump = match value {
        None => Some(JitDumpDir::Default),
        Some("") => return Err("must be a directory, true or false"),
        Some(v) if ["true", "yes", "y", "t", "1"].contains(&v.to_ascii_lowercase().as_str()) => {
            Some(JitDumpDir::Default)
        }
        Some(v) if ["false", "no", "n", "f", "0"].contains(&v.to_ascii_lowercase().as_str()) => {
            None
        }
        Some(v) => Some(JitDumpDir::Dir(v.to_string())),
    };
    Ok(())
}
