//! The option table: every key of the grammar, lower-case, with the handler that applies its
//! value. Adding an option means one row here and one handler in the module of its topic; the
//! parse loop itself never changes.

use super::draft::{Draft, Handler};
use super::values::Reason;
use super::Action;
use super::{context, cpu, exporter, memory, methods, native, output, stacks, wall};

/// Every option, by its lower-case key. Keys are matched exactly after lower-casing the token's
/// key (no trimming, no prefixes), so a key missing here is reported as unknown.
const OPTIONS: &[(&str, Handler)] = &[
    // Actions: the last one given wins.
    ("start", start),
    ("resume", resume),
    ("stop", stop),
    ("check", check),
    ("status", status),
    ("list", list),
    ("version", version),
    // CPU and perf events.
    ("cpu", cpu::cpu),
    ("event", cpu::event),
    ("interval", cpu::interval),
    ("allkernel", cpu::allkernel),
    ("alluser", cpu::alluser),
    // Wall clock.
    ("wall", wall::wall),
    ("walltpt", wall::walltpt),
    ("wallsampler", wall::wallsampler),
    ("wallprecheck", wall::wallprecheck),
    ("wallidle", wall::wallidle),
    // Allocations and liveness.
    ("memory", memory::memory),
    ("generations", memory::generations),
    ("alloc", memory::alloc),
    // Native engines.
    ("nativemem", native::nativemem),
    ("natsock", native::natsock),
    // Stack walking.
    ("cstack", stacks::cstack),
    ("jstackdepth", stacks::jstackdepth),
    ("safemode", stacks::safemode),
    ("jvmtistacks", stacks::jvmtistacks),
    ("lightweight", stacks::lightweight),
    ("remotesym", stacks::remotesym),
    ("nosanity", stacks::nosanity),
    ("walkcompare", stacks::walkcompare),
    ("features", stacks::features),
    // Method IDs.
    ("fjmethodid", methods::fjmethodid),
    ("mcleanup", methods::mcleanup),
    // Context and thread filter.
    ("attributes", context::attributes),
    ("filter", context::filter),
    // Output and logging.
    ("file", output::file),
    ("jfr", output::jfr),
    ("log", output::log),
    ("loglevel", output::loglevel),
    ("perfmap", output::perfmap),
    ("jitdump", output::jitdump),
    ("jdksamples", output::jdksamples),
    // The OTLP exporter (acted on in Java).
    ("otlp", exporter::accept),
    ("otlpinterval", exporter::accept),
    ("otlpbacklog", exporter::accept),
    ("otlpservice", exporter::accept),
    ("otlpattr", exporter::accept),
];

/// The handler of a lower-cased key, `None` for an unknown key.
pub(super) fn handler(key: &str) -> Option<Handler> {
    OPTIONS
        .iter()
        .find(|(name, _)| *name == key)
        .map(|&(_, handle)| handle)
}

/// The table's keys, in table order (for the table's own tests).
#[cfg(test)]
pub(super) fn keys() -> impl Iterator<Item = &'static str> {
    OPTIONS.iter().map(|&(name, _)| name)
}

/// Action keys take no value (`version=full` is `version`).
macro_rules! action_handlers {
    ($($name:ident => $action:ident),* $(,)?) => {$(
        fn $name(d: &mut Draft, _: Option<&str>) -> Result<(), Reason> {
            d.args.action = Action::$action;
            Ok(())
        }
    )*};
}

action_handlers! {
    start => Start,
    resume => Resume,
    stop => Stop,
    check => Check,
    status => Status,
    list => List,
    version => Version,
}
