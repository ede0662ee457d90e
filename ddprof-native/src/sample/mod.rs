//! The signal wing: everything that runs inside a signal handler or another async
//! context (a JVMTI callback on an arbitrary thread). Handler entry (`handler`), the one
//! recording entry every event source uses (`record`), the stack walkers (`walk`), the
//! HotSpot readers they use (`vm`), the frame format (`frame`, lazy `tags`), the thread's
//! context (`context`), the call-trace storage (`traces`), signal chaining (`signal`) and
//! crash-protected loads (`safe_access`).
//!
//! Rules (docs/architecture.md, "Rules"): no allocation, lock, JNI or JVMTI on these paths;
//! stale VM memory only through `safe_access`; every `unsafe` block carries `// SAFETY:`.
//! Construction (`init`, `new`) may allocate: it runs once, outside any handler.
//!
//! The wing imports only itself and the no-allocation basics `crate::counters` and
//! `crate::footprint::{Mapped, Zeroable, Category}` (memory mapped once at start); the test
//! `tests/signal_wing_imports.rs` fails on anything else, so the rule is kept by the build.

/// The link section of the functions a CPU or wall sample runs through out of line (the handler,
/// the walk, the record step), so that the link keeps them on a few pages together instead of
/// spread over `.text` (`build.rs` asks LLD to keep the `.text.hot` prefix; docs/architecture.md,
/// "The sample path's code", says which functions and why; `scripts/sample-path-functions.sh`
/// lists them). `safe_access`'s loads join them through a `.text.hot.` section of their own.
macro_rules! sample_path_section {
    () => {
        ".text.hot.ddprof_sample_path"
    };
}

pub mod alloc;
pub mod block_run;
pub mod context;
pub mod frame;
pub mod handler;
pub mod handler_time;
pub mod hint_cache;
pub mod load_census;
pub mod mode;
pub mod nativemem;
pub mod natsock;
pub mod perf;
pub mod poisson;
pub mod rate_window;
pub mod real_fns;
pub mod record;
pub mod safe_access;
pub mod signal;
pub mod tags;
pub mod traces;
pub mod vm;
pub mod walk;
pub mod wall;
