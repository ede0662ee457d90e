//! `fjmethodid=lazy`: frame tags and the class registry (the mode itself comes next).

pub mod registry;
pub mod tags;
