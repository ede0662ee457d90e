//! Naming the frames of a chunk at dump time. Today every Java frame carries a
//! jmethodID (preloaded, `fjmethodid=true`); raw `Method*` frames and the lazy mode
//! resolve here too once the VMStructs walker exists.

pub mod preload;
pub mod raw;
pub mod resolve;
