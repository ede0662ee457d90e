//! ddprof native core: a CPU profiler for the JVM that writes JFR.
//! Module map only; docs/architecture.md follows one sample from signal to file.
#![allow(non_snake_case)]

pub mod alloc;
pub mod api;
pub mod args;
pub mod context;
pub mod counters;
pub mod engine;
pub mod footprint;
pub mod hotspot;
pub mod imports;
pub mod jfr;
pub mod jvmti;
pub mod libs;
pub mod log;
pub mod methods;
pub mod nativemem;
pub mod natsock;
pub mod profiler;
pub mod sample;
pub mod threads;
pub mod tracing;
pub mod word_map;

/// Every Rust allocation of the core is charged to a memory category (footprint/).
#[global_allocator]
static ALLOCATOR: footprint::CountingAllocator = footprint::CountingAllocator;
