//! jmethodID modes and naming the frames of a chunk at dump time: `preload.rs` decides
//! which classes get IDs up front (`true`, `false`, `lazy`); `resolve.rs` names
//! jmethodIDs through JVMTI, `raw.rs` names untagged raw `Method*` frames from VM
//! metadata, and `lazy/` proves tagged raw frames live before giving them IDs. Either
//! way a frame ends as a `MethodInfo` (`info.rs`). `receivers.rs` names the receiver
//! class and stub frames of vtable/itable stub samples.

pub mod info;
pub mod lazy;
pub mod preload;
pub mod raw;
pub mod receivers;
pub mod resolve;
pub mod word_map;
