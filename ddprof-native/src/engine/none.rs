//! No CPU engine: the CPU engine of a session that samples no CPU time (`wall` or `memory`
//! alone): nothing to arm. Upstream reports its no-op engine as "None".

use super::Engine;
use crate::sample::handler::SignalSource;

pub struct NoCpu;

impl Engine for NoCpu {
    fn id(&self) -> super::EngineId {
        super::EngineId::None
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
