//! The lenses: each computes one result struct from a profile. The text
//! printer, the JSON printer and the explorer all render these structs, so
//! no number is computed twice.

pub mod capture;
pub mod collectives;
pub mod compare;
pub mod gate;
pub mod get;
pub mod job;
pub mod kernels;
pub mod memory;
pub mod modules;
pub mod ops;
pub mod pattern;
pub mod phases;
pub mod stats;
pub mod summary;
pub mod tree;
pub mod whatif;
