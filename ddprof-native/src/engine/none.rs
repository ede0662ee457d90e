//! No CPU engine: a session that samples only allocations (`memory` alone) or another
//! source that needs no timer. Upstream reports its no-op engine as "None".

use super::Engine;
use crate::sample::handler::SignalSource;

pub struct NoCpu;

impl Engine for NoCpu {
    fn name(&self) -> &'static str {
        "None"
    }
    fn start(&self, _interval_ns: u64) -> Result<(), String> {
        Ok(())
    }
    fn stop(&self) {}
    fn signal_source(&self) -> SignalSource {
        SignalSource::Timer
    }
    fn prune(&self) {}
}
