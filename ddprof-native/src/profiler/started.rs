//! The parts a `start` has started, so that a start that fails leaves nothing running.

/// What `start` starts after the checks, in this order. Each part that started is stopped
/// again, in reverse order, when a later part fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The perf map and jitdump (`perfmap`, `jitdump`).
    CodeMap,
    /// The signal handler's recording gate and the CPU engine.
    Cpu,
    /// The wall-clock sampler.
    Wall,
    /// JVMTI allocation sampling (`memory=`).
    Alloc,
    /// Native allocation hooks (`nativemem=`).
    NativeMem,
}

impl Part {
    /// The name `DDPROF_TEST_START_FAIL` takes.
    pub fn name(self) -> &'static str {
        match self {
            Part::CodeMap => "codemap",
            Part::Cpu => "cpu",
            Part::Wall => "wall",
            Part::Alloc => "alloc",
            Part::NativeMem => "nativemem",
        }
    }
}

/// Test-only: `DDPROF_TEST_START_FAIL=<part>` makes that part's start fail before it does
/// anything, as a part that cannot start does, so the JVM tests can reach every rollback.
pub const FAIL_ENV: &str = "DDPROF_TEST_START_FAIL";

/// The failure `DDPROF_TEST_START_FAIL` asks of `part`'s start, if it names it.
pub fn injected_failure(part: Part) -> Result<(), String> {
    match std::env::var(FAIL_ENV) {
        Ok(v) if v == part.name() => Err(format!("{} start failed ({FAIL_ENV}={v})", part.name())),
        _ => Ok(()),
    }
}
