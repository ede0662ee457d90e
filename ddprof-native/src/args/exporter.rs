//! The OTLP exporter's options: `otlp=URL`, `otlpinterval=DURATION`, `otlpbacklog=N`,
//! `otlpservice=NAME`, `otlpattr=KEY=VALUE` (repeatable). The exporter lives on the Java side
//! (`com.datadoghq.profiler.OtlpExport`, which validates these values before the command
//! reaches the core and refuses a bad one with the command unrun); the core only knows the
//! keys so that they are not reported as unknown. Docs: docs/exporter.md.

use super::draft::Draft;
use super::values::Reason;

/// Every exporter key: accepted as is (the Java side has checked the value already).
pub(super) fn accept(_d: &mut Draft, _value: Option<&str>) -> Result<(), Reason> {
    Ok(())
}
