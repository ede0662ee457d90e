//! jmethodID modes and naming the frames of a chunk at dump time: `preload.rs` decides
//! which classes get IDs up front (`true`, `false`, `lazy`); `resolve.rs` names
//! jmethodIDs through JVMTI, `raw.rs` names untagged raw `Method*` frames from VM
//! metadata, and `lazy/` proves tagged raw frames live before giving them IDs; `kept_ids.rs`
//! carries jmethodID names from one dump to the next, `ahead_ids.rs` reads new ones' metadata
//! ahead of the dump on the library watcher's thread. Either
//! way a frame ends as a `MethodInfo` (`info.rs`). `receivers.rs` names the receiver
//! class of vtable/itable stub samples, `stub_names.rs` the frames of code the VM
//! generated outside nmethods.
//!
//! A dump names its frames through one `namer::FrameNamer` (`namer.rs`): the dump's
//! `DumpNamer` owns the resolver and every per-dump cache, Java frames in `java_names.rs`,
//! native and kernel frames in `native_names.rs`, and answers each frame once with its pool
//! references.

pub mod ahead_ids;
pub mod info;
pub mod java_names;
pub mod kept_ids;
pub mod lazy;
pub mod namer;
pub mod native_names;
pub mod preload;
pub mod raw;
pub mod receivers;
pub mod resolve;
pub mod stub_names;
