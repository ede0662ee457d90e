//! The parts a `start` has started, so that a start that fails leaves nothing running.
//!
//! `start` brings the profiler up part by part; each part registers its stop in a [`Started`]
//! as soon as it is running. A start that returns early with an error (or panics) drops the
//! [`Started`], which stops exactly the parts that started, in reverse order; a start that
//! completes hands them to the session ([`Started::complete`]), whose `stop` stops them.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::log;

/// What `start` starts after its checks, in this order.
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
    /// Socket I/O hooks (`natsock=`); one that cannot start is a warning, not a failure.
    NatSock,
}

impl Part {
    /// The name the log and `DDPROF_TEST_START_FAIL` use.
    pub fn name(self) -> &'static str {
        match self {
            Part::CodeMap => "codemap",
            Part::Cpu => "cpu",
            Part::Wall => "wall",
            Part::Alloc => "alloc",
            Part::NativeMem => "nativemem",
            Part::NatSock => "natsock",
        }
    }
}

/// Test-only: `DDPROF_TEST_START_FAIL=<part>` makes that part's first start in the process
/// fail before it does anything, as a part that cannot start does, so the JVM tests can reach
/// every rollback and then start again.
pub const FAIL_ENV: &str = "DDPROF_TEST_START_FAIL";

static INJECTED: AtomicBool = AtomicBool::new(false);

/// The failure `DDPROF_TEST_START_FAIL` asks of `part`'s start, if it names it and has not
/// failed it yet.
fn injected_failure(part: Part) -> Result<(), String> {
    match std::env::var(FAIL_ENV) {
        Ok(v) if v == part.name() && !INJECTED.swap(true, Ordering::Relaxed) => {
            Err(format!("{} start failed ({FAIL_ENV}={v})", part.name()))
        }
        _ => Ok(()),
    }
}

type Stop = Box<dyn FnOnce()>;

/// The stops of what a start has started, run in reverse order when it is dropped before
/// [`complete`](Started::complete).
#[must_use = "dropping it stops what the start started"]
pub struct Started {
    stops: Vec<(Part, Stop)>,
}

impl Started {
    pub fn new() -> Self {
        Started { stops: Vec::new() }
    }

    /// Registers the stop of (a piece of) `part` that is now running. A stop must be safe to
    /// run once whatever else of its part started.
    pub fn push(&mut self, part: Part, stop: impl FnOnce() + 'static) {
        self.stops.push((part, Box::new(stop)));
    }

    /// Starts `part` with `start`, which either starts it or fails leaving nothing of it
    /// running, and then registers `stop`.
    pub fn start<T>(
        &mut self,
        part: Part,
        start: impl FnOnce() -> Result<T, String>,
        stop: impl FnOnce() + 'static,
    ) -> Result<T, String> {
        injected_failure(part)?;
        let started = start()?;
        self.push(part, stop);
        Ok(started)
    }

    /// The start completed: the session owns the parts now, and its `stop` stops them.
    pub fn complete(mut self) {
        self.stops.clear();
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        while let Some((part, stop)) = self.stops.pop() {
            log::info(&format!("start failed: stopping {}", part.name()));
            stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;

    const PARTS: [Part; 6] = [
        Part::CodeMap,
        Part::Cpu,
        Part::Wall,
        Part::Alloc,
        Part::NativeMem,
        Part::NatSock,
    ];

    /// A start of `PARTS` whose part `failing` fails: which parts ran at the end.
    fn start_failing_at(failing: Option<usize>) -> (Result<(), String>, Vec<Part>) {
        let running = Rc::new(RefCell::new(Vec::new()));
        let result = (|| {
            let mut started = Started::new();
            for (i, &part) in PARTS.iter().enumerate() {
                let on = running.clone();
                let off = running.clone();
                started.start(
                    part,
                    || {
                        if failing == Some(i) {
                            return Err(format!("{} refused", part.name()));
                        }
                        on.borrow_mut().push(part);
                        Ok(())
                    },
                    move || {
                        let mut r = off.borrow_mut();
                        // Reverse order: the part stopped is always the last one started.
                        assert_eq!(r.pop(), Some(part), "stopped out of order");
                    },
                )?;
            }
            started.complete();
            Ok(())
        })();
        let left = running.borrow().clone();
        (result, left)
    }

    #[test]
    fn a_failure_at_any_part_stops_every_part_started_before_it() {
        for (failing, part) in PARTS.iter().enumerate() {
            let (result, running) = start_failing_at(Some(failing));
            let name = part.name();
            assert_eq!(result, Err(format!("{name} refused")));
            assert!(running.is_empty(), "failing at {name} left {running:?}");
        }
    }

    #[test]
    fn a_complete_start_stops_nothing() {
        let (result, running) = start_failing_at(None);
        assert_eq!(result, Ok(()));
        assert_eq!(running, PARTS);
    }

    #[test]
    fn pieces_pushed_by_hand_unwind_with_the_rest() {
        let order = Rc::new(RefCell::new(Vec::new()));
        {
            let mut started = Started::new();
            for (i, part) in [Part::Cpu, Part::Cpu, Part::Wall].into_iter().enumerate() {
                let o = order.clone();
                started.push(part, move || o.borrow_mut().push(i));
            }
        }
        assert_eq!(*order.borrow(), [2, 1, 0]);
    }
}
