//! Value readers shared by the option handlers: numbers with units, C-style integers, ratios and
//! upstream's first-letter truth rules. Pure functions of the text; each error maps to the exact
//! reason string the tests (and the Java side's messages) rely on.

use super::{MAX_LIVE_SAMPLES_RATIO, MIN_LIVE_SAMPLES_RATIO};

/// Why a handler rejected its value; the parse loop wraps it in an `ArgError` with the option
/// and the value, so a handler never repeats them.
pub(super) type Reason = &'static str;

/// Upstream's rule for `mcleanup`, `remotesym`, `nosanity` (ddprof's `walkcompare` follows it):
/// bare = on; a value starting with n, f or 0 = off; anything else (including empty) = on.
pub(super) fn true_unless_negative(value: Option<&str>) -> bool {
    value.is_none_or(|v| !first_char_is(v, &['n', 'f', '0']))
}

/// Upstream's truth tests look at the first letter only, case-insensitively (`yes` = `y`).
pub(super) fn first_char_is(value: &str, choices: &[char]) -> bool {
    value
        .chars()
        .next()
        .is_some_and(|c| choices.contains(&c.to_ascii_lowercase()))
}

/// The liveness ratio of `memory=..:l:RATIO`, a float in [0.01, 1]; ddprof rejects a ratio out
/// of range where upstream does not.
pub(super) fn parse_ratio(value: &str) -> Result<f64, Reason> {
    let ratio: f64 = value.trim().parse().map_err(|_| "not a number")?;
    if (MIN_LIVE_SAMPLES_RATIO..=MAX_LIVE_SAMPLES_RATIO).contains(&ratio) {
        Ok(ratio)
    } else {
        Err("ratio must be between 0.01 and 1")
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Units {
    /// n, u, m, s → ns.
    Time,
    /// b, k, m, g → bytes (powers of 1024).
    Bytes,
    /// `interval`: the time letters plus b, k, g (`m` is milliseconds).
    Universal,
}

impl Units {
    fn multiplier(self, letter: char) -> Option<i64> {
        let time = match letter {
            'n' => Some(1),
            'u' => Some(1_000),
            'm' => Some(1_000_000),
            's' => Some(1_000_000_000),
            _ => None,
        };
        let bytes = match letter {
            'b' => Some(1),
            'k' => Some(1 << 10),
            'm' => Some(1 << 20),
            'g' => Some(1 << 30),
            _ => None,
        };
        match self {
            Units::Time => time,
            Units::Bytes => bytes,
            Units::Universal => time.or(bytes),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum NumError {
    Malformed,
    Overflow,
    Negative,
    NotPositive,
    UnknownUnit(Units),
}

impl NumError {
    fn reason(self) -> Reason {
        match self {
            NumError::Malformed => "not a number",
            NumError::Overflow => "number out of range",
            NumError::Negative => "must be >= 0",
            NumError::NotPositive => "must be > 0",
            NumError::UnknownUnit(Units::Time) => "unknown time unit",
            NumError::UnknownUnit(Units::Bytes) => "unknown size unit",
            NumError::UnknownUnit(Units::Universal) => "unknown unit",
        }
    }
}

/// Lets a handler write `parse_...(v)?`: the number error becomes its reason.
impl From<NumError> for Reason {
    fn from(e: NumError) -> Reason {
        e.reason()
    }
}

/// Reads a leading integer the way C's `strtol` does: optional leading white space and sign, then
/// with `base0` a `0x` prefix for hex or a leading `0` for octal (decimal otherwise). Returns the
/// value and the unread rest. Unlike `strtol`, no digits at all is an error.
pub(super) fn parse_c_integer(text: &str, base0: bool) -> Result<(i64, &str), NumError> {
    let text = text.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    let (negative, text) = if let Some(rest) = text.strip_prefix('-') {
        (true, rest)
    } else {
        (false, text.strip_prefix('+').unwrap_or(text))
    };
    let hex_digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .filter(|rest| rest.starts_with(|c: char| c.is_ascii_hexdigit()));
    let (radix, digits) = match hex_digits {
        Some(rest) if base0 => (16, rest),
        _ if base0 && text.starts_with('0') => (8, text),
        _ => (10, text),
    };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    if end == 0 {
        return Err(NumError::Malformed);
    }
    let mut magnitude: i128 = 0;
    for c in digits[..end].chars() {
        let digit = c.to_digit(radix).ok_or(NumError::Malformed)?;
        magnitude = magnitude * i128::from(radix) + i128::from(digit);
        if magnitude > i128::from(i64::MAX) + 1 {
            return Err(NumError::Overflow);
        }
    }
    let value = if negative { -magnitude } else { magnitude };
    let value = i64::try_from(value).map_err(|_| NumError::Overflow)?;
    Ok((value, &digits[end..]))
}

/// A number with an optional unit decided by the first letter after it (case-insensitive; the
/// rest of the word is ignored, so `10ms` and `10msec` agree). An empty value reads 0, as upstream.
pub(super) fn parse_units(text: &str, units: Units) -> Result<i64, NumError> {
    if text.is_empty() {
        return Ok(0);
    }
    let (value, rest) = parse_c_integer(text, true)?;
    match rest.chars().next() {
        None => Ok(value),
        Some(letter) => {
            let multiplier = units
                .multiplier(letter.to_ascii_lowercase())
                .ok_or(NumError::UnknownUnit(units))?;
            value.checked_mul(multiplier).ok_or(NumError::Overflow)
        }
    }
}

pub(super) fn parse_non_negative_units(text: &str, units: Units) -> Result<u64, NumError> {
    let value = parse_units(text, units)?;
    u64::try_from(value).map_err(|_| NumError::Negative)
}

/// `walltpt`, `jstackdepth`: a decimal integer in `1..=i32::MAX`; bare is an error.
pub(super) fn parse_positive_decimal(value: Option<&str>) -> Result<u32, NumError> {
    let (number, rest) = parse_c_integer(value.ok_or(NumError::NotPositive)?, false)?;
    if !rest.is_empty() {
        return Err(NumError::Malformed);
    }
    if number <= 0 {
        return Err(NumError::NotPositive);
    }
    i32::try_from(number)
        .map(i32::unsigned_abs)
        .map_err(|_| NumError::Overflow)
}

/// `safemode`, `jfr`: a C integer (hex / octal accepted) in `0..=u32::MAX`.
pub(super) fn parse_u32_c(value: &str) -> Result<u32, NumError> {
    let (number, rest) = parse_c_integer(value, true)?;
    if !rest.is_empty() {
        return Err(NumError::Malformed);
    }
    if number < 0 {
        return Err(NumError::Negative);
    }
    u32::try_from(number).map_err(|_| NumError::Overflow)
}
