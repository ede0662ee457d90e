//! Naming stub frames (`sample::frame::kind::STUB`: a pc in code the VM generated outside
//! nmethods) at dump time: by the stub the JVM reported at that pc (`hotspot::stubs`:
//! `libmSin`, `jint_disjoint_arraycopy`, `vtable stub`, ...), else by the name of the code
//! blob holding it (`I2C/C2I adapters`, `StubRoutines (2)`), else `unknown stub`. Stub
//! blobs are never freed, so the pc still names its stub at dump time. Upstream's encoding
//! of such frames: class "", the name, `()L;`, type Native (ACC_NATIVE), line 0.

use std::collections::HashMap;

use crate::hotspot::stubs;
use crate::jfr::ChunkBuilder;
use crate::word_map::WordMap;

/// What a stub pc no reported stub and no code blob names is called.
pub const UNKNOWN_STUB: &str = "unknown stub";

/// One dump's stub names: one pool entry per name, looked up once per pc.
#[derive(Default)]
pub struct StubNames {
    by_pc: WordMap<u64, u32>,
    by_name: HashMap<String, u32>,
}

impl StubNames {
    /// Method-pool key of a stub frame at `pc`.
    pub fn key(&mut self, chunk: &mut ChunkBuilder, pc: u64) -> u32 {
        if let Some(&k) = self.by_pc.get(&pc) {
            return k;
        }
        let name = stubs::name_of(pc as usize)
            .or_else(|| stubs::blob_name(pc as usize))
            .unwrap_or_else(|| UNKNOWN_STUB.to_string());
        let k = match self.by_name.get(&name) {
            Some(&k) => k,
            None => {
                let k = chunk.intern_method_verbatim("", &name, "()L;", 0x100, false);
                self.by_name.insert(name, k);
                k
            }
        };
        self.by_pc.insert(pc, k);
        k
    }
}
